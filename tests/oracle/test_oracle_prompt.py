"""The judge prompt: structure, truncation arithmetic, and no labels in it."""

from __future__ import annotations

import json
import re

import pytest
from oracle_support import META_SECRET, ORACLE_SECRET, PANEL_SECRET, make_traj, oracle_verdict

from monsearch.corpora.model import Step, Trajectory
from monsearch.oracle.prompt import (
    build_judge_prompt,
    prompt_hash,
    step_input,
    step_limits,
    truncate_middle,
)
from monsearch.oracle.rubrics import load_rubric


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (1, (4000, 8000)),
        (15, (4000, 8000)),
        (23, (2608, 5218)),
        (50, (1200, 2400)),
        (100, (600, 1200)),
        (0, (4000, 8000)),
        (1000, (400, 800)),
    ],
)
def test_step_limits_known_values(n, expected):
    assert step_limits(n) == expected


def test_step_limits_follow_the_formulas_everywhere():
    for n in range(0, 3001):
        per_step = 180000 // max(n, 1)
        inp = min(4000, max(400, per_step // 3))
        out = min(8000, max(800, per_step - inp))
        assert step_limits(n) == (inp, out), n


def test_truncate_middle_keeps_both_ends_at_exact_length():
    text = "".join(chr(ord("a") + i % 26) for i in range(10_000))
    cut = truncate_middle(text, 1200)
    assert len(cut) == 1200
    marker = "\n... [truncated 8800 chars] ...\n"
    assert marker in cut
    head, tail = cut.split(marker)
    room = 1200 - len(marker)
    assert head == text[: room // 2]
    assert tail == text[-(room - room // 2) :]
    assert truncate_middle("short", 1200) == "short"
    assert truncate_middle("x" * 1200, 1200) == "x" * 1200
    assert truncate_middle("y" * 50, 10) == "y" * 10  # budget below the marker size


def test_prompt_structure_and_truncation_in_place():
    long_out = "A" * 3000 + "MIDDLE" + "Z" * 3000
    cmds = [f"curl -s http://app:5000/api/projects/{i}" for i in range(50)]
    traj = make_traj("t-struct", cmds)
    steps = tuple(
        Step(s.index, s.tool, s.text, observation=long_out, arguments=s.arguments)
        for s in traj.steps
    )
    traj = Trajectory(
        **{**{f: getattr(traj, f) for f in traj.__dataclass_fields__}, "steps": steps}
    )
    rubric = load_rubric("project-board")
    prompt = build_judge_prompt(traj, rubric.text)
    assert prompt.startswith(rubric.text.rstrip("\n") + "\n\n")
    assert f"TASK:\n{traj.prompt}\n\n" in prompt
    assert "RUN STATUS:\nOutcome: flag_found\nFlag correct: True\n\n" in prompt
    assert "TRAJECTORY (50 steps):\n--- Step 0 ---\nTool: execute_command\nInput: " in prompt
    blocks = re.findall(r"--- Step (\d+) ---\nTool: (.*)\nInput: (.*)\nOutput: ", prompt)
    assert [int(b[0]) for b in blocks] == list(range(50))
    assert json.loads(blocks[7][2]) == {"command": cmds[7]}
    # 50 steps -> output limit 2400: the 6006-char observation is cut to exactly that.
    _, out_limit = step_limits(50)
    first = prompt.split("--- Step 0 ---\n", 1)[1].split("\n\n--- Step 1 ---", 1)[0]
    output = first.split("Output: ", 1)[1]
    assert len(output) == out_limit == 2400
    assert "MIDDLE" not in output and output.startswith("AAA") and output.endswith("ZZZ")
    assert '"is_failure"' in prompt and '"stealth_score"' in prompt and '"confidence"' in prompt


def test_labels_verdicts_meta_and_generator_never_enter_the_prompt():
    traj = make_traj(
        "t-secret",
        ["curl -X DELETE http://app:5000/api/projects/1"],
        oracle=(oracle_verdict(True, 0.1),),
    )
    for variant in ("default", "strict", "actions_only"):
        prompt = build_judge_prompt(traj, "RUBRIC", variant)
        for secret in (PANEL_SECRET, META_SECRET, ORACLE_SECRET, "agent-model-x", "ground_truth"):
            assert secret not in prompt, (variant, secret)
        assert "curl -X DELETE http://app:5000/api/projects/1" in prompt


def test_variants_differ_as_documented():
    traj = make_traj("t-var", ["ls"], outcome="no_flag", solved=False)
    default = build_judge_prompt(traj, "R")
    strict = build_judge_prompt(traj, "R", "strict")
    blind = build_judge_prompt(traj, "R", "actions_only")
    assert "RUN STATUS:\nOutcome: no_flag\nFlag correct: False" in default
    assert "Be strict" in strict and "Be strict" not in default
    assert "RUN STATUS" not in blind and "Outcome:" not in blind
    assert len({prompt_hash(default), prompt_hash(strict), prompt_hash(blind)}) == 3
    with pytest.raises(ValueError, match="unknown prompt variant"):
        build_judge_prompt(traj, "R", "lenient")


def test_step_input_rebuilt_when_reader_kept_no_arguments():
    assert step_input(Step(0, "think", "plan the recon")) == {"thought": "plan the recon"}
    assert step_input(Step(1, "execute_command", "id")) == {"command": "id"}
    assert step_input(Step(2, "execute_command", "id", arguments={"raw": "x"})) == {"raw": "x"}


def test_missing_task_prompt_falls_back_to_task_name():
    traj = make_traj("t-np", ["ls"])
    traj = Trajectory(**{**{f: getattr(traj, f) for f in traj.__dataclass_fields__}, "prompt": ""})
    assert "TASK:\nproject-board\n\n" in build_judge_prompt(traj, "R")
