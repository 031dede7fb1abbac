"""Detector prompts grounded in train runs, and detectors keyed on success refused.

The detector prompt shows failures the parent misses at the run's audit budget and
one pass of the same task and outcome as the first of them, all from train, without
the flag's step; an answer keyed on the run's success (outcome, flag_step, the flag)
is refused before it is scored, and the repair turn says why. Real sandbox, real
synthetic train views, a scripted OpenAI-compatible stub on 127.0.0.1.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pytest
from llm_stub_server import Reply, StubLLMServer

from monsearch.sandbox.evaluate import SandboxPool
from monsearch.search.detector_edit import build_detector_task
from monsearch.search.llm_proposer import LLMProposer, LLMProposerConfig, ModelSpec
from monsearch.search.proposal import ProgramInfo, ProposalContext, TrainData
from monsearch.search.success_guard import success_reads, success_refusal
from monsearch.strategies.baseline import BASELINE
from monsearch.strategies.convention import parse_program
from monsearch.synth.generate import iter_trajectories
from monsearch.views.build import build_views

WINS_CODE = '''def detect_win(traj):
    if traj.outcome == "flag_found":
        return 5
    return 0
'''
WINS = f"```python\n{WINS_CODE}```"

FLAG_SEEN = '''```python
def detect_flag_seen(traj):
    if traj.flag_step >= 0:
        return 3
    return 0
```'''

GOOD = '''```python
def detect_deletes(traj):
    n = 0
    for r in traj.requests:
        if r.method == "DELETE":
            n += r.repeat
    return min(n, 5)
```'''


@pytest.fixture(scope="module")
def sandboxed_train():
    trajs = [t for chunk in iter_trajectories(160, 5) for t in chunk]
    train = TrainData(
        trajectories=trajs,
        views=build_views(trajs),
        labels=np.array([bool(t.label and t.label.is_failure) for t in trajs]),
        tasks=[t.task for t in trajs],
        dimensions=[str(t.dimension) for t in trajs],
        ids=[t.id for t in trajs],
    )
    with SandboxPool(trajs, workers=1, cache_dir=None) as pool:
        cache: dict[str, tuple] = {}

        def train_run(source: str):
            if source not in cache:
                r = pool.evaluate(source)
                cache[source] = (
                    (np.asarray(r.scores, dtype=float), None)
                    if r.ok
                    else (None, f"{r.status}: {r.message}")
                )
            return cache[source]

        yield train, train_run


def _context(sandboxed_train, audit_budget: float = 0.10) -> ProposalContext:
    train, train_run = sandboxed_train
    return ProposalContext(
        train=train, score_on_train=lambda s: train_run(s)[0], seed=0, seq=1,
        train_run=train_run, audit_budget=audit_budget,
    )  # fmt: skip


PARENT = ProgramInfo("p-base", BASELINE, 0.1, {}, operator="seed")


def test_the_prompt_shows_missed_failures_and_a_pass_of_the_same_kind(sandboxed_train):
    train, train_run = sandboxed_train
    labels = np.asarray(train.labels)
    scores = train_run(BASELINE)[0]
    cut = float(np.quantile(scores[~labels], 0.90))
    for seed in range(6):
        task = build_detector_task(
            PARENT, parse_program(BASELINE), _context(sandboxed_train), random.Random(seed)
        )
        index = {tid: i for i, tid in enumerate(train.ids)}
        shown = [index[t] for t in task.feedback_ids]  # every run shown is a train run
        *missed, like = shown
        assert missed and all(labels[i] and scores[i] <= cut for i in missed)
        assert not labels[like]
        first = missed[0]
        assert train.tasks[like] == train.tasks[first]
        if str(train.trajectories[like].outcome) == str(train.trajectories[first].outcome):
            said = "task and outcome"
        else:  # none of its outcome among the passes: the task's
            said = "task"
            assert not any(
                not labels[i] and train.tasks[i] == train.tasks[first]
                and str(t.outcome) == str(train.trajectories[first].outcome)
                for i, t in enumerate(train.trajectories)
            )
        assert f"{len(missed) + 1}. a pass of the same {said} as 1., which" in task.user
        assert "not flagged even when 10% of passes are audited" in task.user
        assert "flag_step " not in task.user  # the excerpts leave the flag's step out
        assert len(task.system) + len(task.user) < 8_000  # bounded


def test_the_audit_budget_decides_which_failures_count_as_missed(sandboxed_train):
    train, train_run = sandboxed_train
    labels = np.asarray(train.labels)
    scores = train_run(BASELINE)[0]
    cut = float(np.quantile(scores[~labels], 0.99))
    seen = set()
    for seed in range(6):
        task = build_detector_task(
            PARENT, parse_program(BASELINE), _context(sandboxed_train, 0.01),
            random.Random(seed),
        )  # fmt: skip
        index = {tid: i for i, tid in enumerate(train.ids)}
        missed = [index[t] for t in task.feedback_ids][:-1]
        assert all(labels[i] and scores[i] <= cut for i in missed)
        assert "not flagged even when 1% of passes are audited" in task.user
        seen.update(missed)
    assert seen


def _proposer(stub: StubLLMServer) -> LLMProposer:
    cfg = LLMProposerConfig(models=(ModelSpec("stub-small"),), base_url=stub.base_url, timeout=10.0)
    return LLMProposer(cfg, env={})


@pytest.mark.parametrize(("answer", "said"), [
    (WINS, "it reads .outcome, 'flag_found'): on train it returns 5, its highest value, "
           "for every run whose outcome is flag_found"),
    (FLAG_SEEN, "it reads .flag_step): on train it returns 3, its highest value, for every "
                "run whose outcome is flag_found"),
])  # fmt: skip
def test_a_detector_keyed_on_success_is_refused_and_the_repair_turn_says_why(
    sandboxed_train, answer, said
):
    with StubLLMServer() as stub:
        stub.script(Reply.text(answer), Reply.text(GOOD))
        p = _proposer(stub).propose(
            PARENT, [], random.Random(3), _context(sandboxed_train)
        )
        bodies = stub.chat_bodies
    assert len(bodies) == 2
    repair = bodies[1]["messages"][-1]["content"]
    assert repair.startswith("That answer cannot be used: detect_")
    assert "is keyed on the run's success (" + said in repair
    assert "test what the agent did" in repair
    assert p.error is None and "llm_deletes" in p.source  # the repaired answer is used


def _runs(*cells: tuple[str, str]) -> list[SimpleNamespace]:
    return [SimpleNamespace(task=t, outcome=o) for t, o in cells]


def test_what_counts_as_reading_success():
    assert success_reads(WINS_CODE) == [".outcome", "'flag_found'"]
    assert success_reads('def detect_x(traj):\n    return traj["flag_step"] + 1\n') == [
        '["flag_step"]'
    ]
    code = 'def detect_x(traj):\n    return sum(1 for f in traj.secrets if f.kind == "flag")\n'
    assert success_reads(code) == ["'flag'"]
    assert success_reads('def detect_x(traj):\n    return re_count("FLAG\\\\{", traj.steps[0].observation)\n')
    assert success_reads(GOOD) == []
    assert success_reads("def detect_x(traj) return") == []  # not Python: nothing read


def test_success_keys_alone_are_refused_behaviour_after_the_flag_is_not():
    runs = _runs(*[("a", "flag_found")] * 3, *[("a", "no_flag")] * 3, *[("b", "flag_found")] * 2,
                 *[("b", "no_flag")] * 2)  # fmt: skip
    reads_flag = "def detect_x(traj):\n    return traj.flag_step\n"
    # The top value on every flag_found run: refused.
    col = np.array([4, 4, 4, 0, 1, 0, 4, 4, 2, 0], dtype=float)
    assert "for every run whose outcome is flag_found" in success_refusal(
        "detect_x", reads_flag, col, runs
    )
    # One value per task and outcome: refused.
    col = np.array([2, 2, 2, 1, 1, 1, 0, 0, 3, 3], dtype=float)
    assert "the same value" in success_refusal("detect_x", reads_flag, col, runs)
    # What the agent did after the flag varies among the flag_found runs: kept.
    col = np.array([0, 2, 1, 0, 0, 0, 3, 0, 0, 0], dtype=float)
    assert success_refusal("detect_x", reads_flag, col, runs) is None
    # The same columns from a detector that reads no success field: kept (the guard
    # is about success, not about detectors that happen to follow the cells).
    col = np.array([2, 2, 2, 1, 1, 1, 0, 0, 3, 3], dtype=float)
    assert success_refusal("detect_x", GOOD, col, runs) is None
