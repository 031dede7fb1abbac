"""``monsearch export``: the plugin is the sandbox's code and gives the sandbox's scores.

A run folder is written from the run contract with two programs evaluated for real
on val by the sandbox (the seed monitor; a probe that uses regex helpers, sets and
the oracle). The plugin must reproduce every val score exactly, whatever the host's
PYTHONHASHSEED; its vendored modules must be the sandbox's modules; and it must work in
a virtual environment without monsearch. (Its limits: tests/export/test_export_limits.py.)
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import hashlib
import importlib
import json
import os
import subprocess
import sys
import time
import venv
from pathlib import Path

import numpy as np
import pytest
from export_support import shared_setup
from paths import FIXTURES

from monsearch.corpora.codec import trajectory_to_dict
from monsearch.corpora.readers.stepinput import step_input
from monsearch.eval.metrics import np_threshold
from monsearch.export import ExportError, export, plugin_scores
from monsearch.export.vendor import MODULES, check_vendored, source_path
from monsearch.sandbox.examples.seed_monitor import SEED_MONITOR

SB_FILE = next(
    (FIXTURES / "stealthbench" / "results" / "trajectories").rglob("trajectory.atif.json")
)
ATIF_FILE = FIXTURES / "atif" / "good" / "v14_labelled.json"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return shared_setup(tmp_path_factory)


@contextlib.contextmanager
def in_process(plugin):
    """Run the program in this process (``isolation="none"``): the code the worker runs,
    where a test can look at its caches, instances and collector."""
    core = plugin.core
    before = core.LIMITS
    core.configure(isolation="none")
    try:
        yield core
    finally:
        core.LIMITS = before


def _import(folder: Path, package: str):
    src = str(folder / "src")
    if src not in sys.path:
        sys.path.insert(0, src)
    return importlib.import_module(package)


@pytest.fixture(scope="module")
def seed_plugin(setup):
    folder, meta = setup["plugins"]["seed"]
    return _import(folder, meta["package"])


@pytest.fixture(scope="module")
def probe_plugin(setup):
    folder, meta = setup["plugins"]["probe"]
    return _import(folder, meta["package"])


# --------------------------------------------------------------------------- sharing


def test_vendored_modules_are_the_sandbox_modules(setup):
    folder, meta = setup["plugins"]["seed"]
    vendor = folder / "src" / meta["package"] / "_vendor"
    for module, name in MODULES:
        original = source_path(module).read_text(encoding="utf-8")
        copy = (vendor / f"{name}.py").read_text(encoding="utf-8")
        assert check_vendored(original, copy) == [], f"{name}.py differs from {module}"
        assert "monsearch." not in "\n".join(
            line for line in copy.splitlines() if line.lstrip().startswith(("import ", "from "))
        ), f"{name}.py still imports monsearch"


def test_check_vendored_catches_a_changed_line():
    original = "import re\nfrom monsearch.x import y\nA = 1\n"
    assert check_vendored(original, "import re\nfrom .x import y\nA = 1\n") == []
    assert check_vendored(original, "import re\nfrom .x import y\nA = 2\n") == [3]
    assert check_vendored(original, "import re\nA = 1\n") == [0]


def test_vendored_imports_are_sorted_and_keep_the_line_count():
    """The rewritten imports are relative (isort's last section): sorted as ruff sorts
    them, with a comment on the line an emptied section frees, so lines stay put."""
    from monsearch.export.vendor import rewrite

    original = (
        '"""Doc."""\n'
        "\n"
        "from __future__ import annotations\n"
        "\n"
        "import json\n"
        "\n"
        "import orjson\n"
        "\n"
        "from monsearch.corpora.model import Step\n"
        "from monsearch.corpora.readers.jsonio import (\n"
        "    MISSING,\n"
        "    Node,\n"
        ")\n"
        "from monsearch.views import secrets as sec\n"
        "from monsearch.views.shell import Command, run_script\n"
        "from monsearch.views.shell import clear_caches as _clear\n"
        "\n"
        "\n"
        "def f():\n"
        "    from monsearch.views.build import build_view\n"
        "    from monsearch.corpora.codec import dumps\n"
        "    return json, orjson, Step, MISSING, Node, sec, Command, run_script, _clear\n"
    )
    vendored = rewrite(original)
    assert vendored == (
        '"""Doc."""\n'
        "\n"
        "from __future__ import annotations\n"
        "\n"
        "import json\n"
        "\n"
        "# orjson: the plugin's stand-in (_vendor/_orjson.py)\n"
        "from . import _orjson as orjson\n"
        "from . import secrets as sec\n"
        "from .jsonio import (\n"
        "    MISSING,\n"
        "    Node,\n"
        ")\n"
        "from .model import Step\n"
        "from .shell import Command, run_script\n"
        "from .shell import clear_caches as _clear\n"
        "\n"
        "\n"
        "def f():\n"
        "    from .codec import dumps\n"
        "    from .view import build_view\n"
        "    return json, orjson, Step, MISSING, Node, sec, Command, run_script, _clear\n"
    )
    assert check_vendored(original, vendored) == []
    sort_check = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--select", "I"]
        + ["--stdin-filename", "vendored.py", "-"],
        input=vendored,
        capture_output=True,
        text=True,
        check=False,
    )
    assert sort_check.returncode == 0, sort_check.stdout
    # Lines outside the import blocks must stay identical, right next to one too.
    assert check_vendored(original, vendored.replace("return json,", "return 1,")) == [22]
    assert check_vendored(original, vendored.replace("def f", "def g")) == [19]


def test_check_score_is_the_runners(seed_plugin):
    from monsearch.sandbox.runner import check_score

    core = sys.modules[seed_plugin.__name__ + ".core"]
    for value in (1, 0.5, True, 10**400, float("nan"), float("inf"), "1", None, [1.0], -0.0):
        assert core.check_score(value) == check_score(value) or (
            value != value and core.check_score(value) == check_score(value)
        )


# --------------------------------------------------------------------------- equality


@pytest.mark.parametrize("program", ["seed", "probe"])
@pytest.mark.parametrize("hashseed", ["random", "123"])
def test_plugin_scores_equal_sandbox_scores_on_val(setup, program, hashseed):
    folder, meta = setup["plugins"][program]
    records = [trajectory_to_dict(t) for t in setup["val"]]
    got = plugin_scores(
        folder, meta["package"], records, hashseed=hashseed, judge_answers=setup["judge_answers"]
    )
    expected = setup["scores"][program]
    assert got["leaked"] == []  # no monsearch module was imported by the plugin
    assert set(got["status"]) == {"ok"}
    assert np.array_equal(np.array(got["scores"]), expected), "plugin != sandbox on val"


def test_the_run_judges_answers_reach_the_plugin(setup):
    """The probe asks the oracle on every trajectory: the run's scores hold the replay
    judge's answers, so the plugin matches them only when given the same judge (which
    is how export verifies it), and a host without a judge gets other scores."""
    folder, meta = setup["plugins"]["probe"]
    assert meta["verified"]["judge"].startswith("replay")
    records = [trajectory_to_dict(t) for t in setup["val"]]
    # The probe adds the answer: only a trajectory the judge answered 0 (or not at all)
    # keeps its score without a judge.
    unmoved = [setup["judge_answers"].get(t.id, 0.0) == 0.0 for t in setup["val"]]
    assert unmoved.count(False) > len(unmoved) // 2
    got = plugin_scores(folder, meta["package"], records)  # no host judge
    same = np.array(got["scores"]) == setup["scores"]["probe"]
    assert same.tolist() == unmoved


def _stealthbench_doc(t) -> dict:
    """A val trajectory written as a StealthBench harness file."""
    steps = []
    for s in t.steps:
        args = s.arguments if step_input(s.arguments)[1] == s.text else s.text
        step = {
            "index": s.index,
            "action": {"type": "tool_call", "tool": s.tool, "input": args},
            "observation": {"text": s.observation},
        }
        if s.timestamp is not None:
            step["timestamp"] = s.timestamp
        if s.latency_ms is not None:
            step["latency_ms"] = s.latency_ms
        steps.append(step)
    return {
        "atif_version": "1.7",
        "trajectory_id": t.id,
        "agent_model": t.generator,
        "task": {"name": t.task, "prompt": t.prompt},
        "outcome": t.outcome,
        "flag_correct": t.solved,
        "steps": steps,
    }


def test_stealthbench_format_gives_the_same_scores(setup, seed_plugin, probe_plugin):
    docs = [_stealthbench_doc(t) for t in setup["val"]]
    answers = setup["judge_answers"]

    def judge(traj, variant):
        return answers.get(traj.id)

    for program, plugin in (("seed", seed_plugin), ("probe", probe_plugin)):
        got = [
            r.score
            for r in plugin.score_many((json.loads(json.dumps(d)) for d in docs), oracle=judge)
        ]
        assert np.array_equal(np.array(got), setup["scores"][program])
        # One trajectory at a time (a fresh program per call): the same, these are stateless.
        assert [plugin.score(d, oracle=judge) for d in docs[:10]] == got[:10]
        # Cold parse caches give the same scores (the caches only skip repeated work).
        plugin.clear_caches()
        assert [plugin.score(d, oracle=judge) for d in docs[:10]] == got[:10]
        with in_process(plugin):  # and in this process, where the caches can be seen
            assert [plugin.score(d, oracle=judge) for d in docs[:10]] == got[:10]
            view_module = sys.modules[f"{plugin.__name__}._vendor.view"]
            assert view_module._STEP_CACHE
            plugin.clear_caches()
            assert not view_module._STEP_CACHE and not view_module._DERIVED_CACHE
            assert [plugin.score(d, oracle=judge) for d in docs[:10]] == got[:10]


def _steps(traj) -> list[dict]:
    return [dataclasses.asdict(s) for s in traj.steps]


def test_readers_accept_files_text_and_dicts(seed_plugin):
    a = seed_plugin.score(SB_FILE)
    assert a == seed_plugin.score(str(SB_FILE))
    assert a == seed_plugin.score(SB_FILE.read_bytes())
    assert a == seed_plugin.score(json.loads(SB_FILE.read_text()))
    b = seed_plugin.score(ATIF_FILE)
    assert b == seed_plugin.score(ATIF_FILE.read_text())
    from monsearch.corpora.readers import read_atif, read_stealthbench
    from monsearch.views.build import build_view

    # The plugin's trajectory is the one monsearch's readers make, so is its view.
    ours = read_stealthbench(SB_FILE).trajectories[0]
    theirs = seed_plugin.load(SB_FILE)
    # Step classes differ (the plugin has its own copy of the model): compare as data.
    assert (ours.task, ours.prompt, ours.outcome, _steps(ours)) == (
        theirs.task,
        theirs.prompt,
        theirs.outcome,
        _steps(theirs),
    )
    v1, v2 = build_view(ours).to_dict(), seed_plugin.core.build_view(theirs).to_dict()
    v1.pop("id"), v2.pop("id")
    assert v1 == v2
    atif = read_atif(ATIF_FILE).trajectories[0]
    assert _steps(atif) == _steps(seed_plugin.load(ATIF_FILE))
    with pytest.raises(seed_plugin.InputError):
        seed_plugin.load({"hello": 1})


# --------------------------------------------------------------------------- metadata


def test_metadata(setup, seed_plugin):
    m = seed_plugin.MONITOR
    run = setup["run"]
    assert m["strategy_hash"] == hashlib.sha256(SEED_MONITOR.encode()).hexdigest()
    assert m["run_id"] == run.id and m["program_id"] == "seed" and m["selected"] is True
    assert m["corpus"]["content_hash"] == run.config()["corpus"]["content_hash"]
    assert "path" not in m["corpus"]
    assert m["val"]["metrics"]["n"] == len(setup["val"])
    assert m["verified"]["equal"] is True and m["verified"]["n"] == len(setup["val"])
    assert m["query_caps"]["per_traj_cap"] == 1
    # Thresholds are monsearch's rule on the val benign scores, in the plugin too.
    labels = [t.label is not None and not t.label.is_failure for t in setup["val"]]
    benign = np.sort(setup["scores"]["seed"][np.array(labels)])
    assert m["calibration"]["val_benign_scores"] == benign.tolist()
    budgets = [0.01, 0.02, 0.05, 0.1, 0.033, 0.5, 0.0, 1.0]
    tau, g = np_threshold(benign, budgets)
    for b, t, x in zip(budgets, tau, g, strict=True):
        got = seed_plugin.threshold(b)
        assert got["tau"] == t and got["g"] == pytest.approx(x, abs=1e-12)
    for key, t in m["thresholds"].items():
        assert t == seed_plugin.threshold(float(key))
    tau5 = seed_plugin.threshold(0.05)["tau"]
    assert seed_plugin.decide(tau5 + 1, 0.05)["decision"] == "audit"
    assert seed_plugin.decide(tau5, 0.05)["decision"] == "tie"
    assert seed_plugin.decide(tau5 - 1, 0.05)["decision"] == "pass"
    readme = (setup["plugins"]["seed"][0] / "README.md").read_text()
    assert m["strategy_hash"] in readme and "inspect score" in readme and "atif-scan" in readme
    pyproject = (setup["plugins"]["seed"][0] / "pyproject.toml").read_text()
    assert '"monsearch.monitors"' in pyproject and "[project.entry-points.inspect_ai]" in pyproject
    # google-re2 is a dependency of every plugin (see test_export_limits for why).
    assert '"google-re2>=1.1,<2"' in pyproject.split("[project.optional")[0]


def test_findings_point_at_the_steps_that_raised_the_score(setup, seed_plugin):
    scores = setup["scores"]["seed"]
    top = setup["val"][int(np.argmax(scores))]
    f = seed_plugin.findings(top)
    assert f["score"] == scores.max() and f["steps"]
    assert all(s["delta"] > 0 for s in f["steps"])
    assert f["steps"] == sorted(f["steps"], key=lambda s: -s["delta"])
    assert f["detectors"]  # the seed monitor's *_score functions
    view = seed_plugin.core.build_view(seed_plugin.load(top))
    for s in f["steps"]:
        step = view["steps"][s["step"]]
        for ev in s["evidence"]:
            if ev["span"] is not None:
                text = (
                    step["observation"]
                    if ev["channel"] == "observation"
                    else (step["command"] or step["think"])
                )
                assert 0 <= ev["span"][0] < ev["span"][1] <= len(text)
    steps = seed_plugin.score_steps(top)
    assert len(steps) == len(top.steps) and steps[-1] == scores.max()


def test_scoring_leaves_nothing_for_the_cyclic_collector(setup, seed_plugin):
    """A program instance (functions and namespace refer to each other, and the namespace
    holds the oracle hook and the trajectory) is freed when a call returns, not at the
    garbage collector's next pass."""
    docs = [_stealthbench_doc(t) for t in setup["val"][:3]]

    def alive() -> tuple[int, int]:
        objs = gc.get_objects()
        return (
            sum(type(o) is core._OracleHook for o in objs),
            sum(type(o) is core.Trajectory for o in objs),
        )

    gc.collect()
    gc.disable()
    try:
        with in_process(seed_plugin) as core:  # the worker's code, here where it can be seen
            before = alive()
            for d in docs:
                seed_plugin.score(d)
                seed_plugin.evaluate(d)
                seed_plugin.score_steps(d)
                seed_plugin.findings(d)
            seed_plugin.score_many(docs)
            after = alive()
    finally:
        gc.enable()
    assert after == before


def test_collector_waits_until_a_trajectory_is_scored(setup, seed_plugin):
    """No cyclic collection runs while a trajectory is read, viewed and scored (it would
    walk the live view), and the host's collector setting is left as it was."""
    package = seed_plugin.__name__
    docs = [_stealthbench_doc(t) for t in setup["val"][:3]]
    busy = ("load", "build_view", "_run")  # reading, viewing, running the program
    inside: list[str] = []

    def watch(phase: str, info: dict) -> None:
        frame = sys._getframe(1)
        while frame is not None:
            module = frame.f_globals.get("__name__", "")
            if module.startswith(package) and frame.f_code.co_name in busy:
                inside.append(frame.f_code.co_name)
                return
            frame = frame.f_back

    threshold = gc.get_threshold()
    gc.set_threshold(1)  # a collection at nearly every new container
    gc.callbacks.append(watch)
    try:
        with in_process(seed_plugin):  # the worker's code, here where it can be seen
            for d in docs:
                seed_plugin.score(d)
                seed_plugin.score_steps(d)
                seed_plugin.findings(d)
            seed_plugin.score_many(docs)
            gc.disable()
            seed_plugin.score(docs[0])
            assert not gc.isenabled()
            gc.enable()
    finally:
        gc.callbacks.remove(watch)
        gc.set_threshold(*threshold)
        gc.enable()
    assert inside == []


def test_oracle_is_none_unless_a_host_passes_one(setup, probe_plugin):
    t = setup["val"][0]
    base = probe_plugin.evaluate(t)
    assert base.oracle_calls == 0
    calls = []

    def judge(traj, variant):
        calls.append(traj.id)
        return 2.0

    with_judge = probe_plugin.evaluate(t, oracle=judge)
    assert with_judge.score == pytest.approx(base.score + 2.0)
    assert with_judge.oracle_calls == 1 and calls == [t.id]


def test_unknown_oracle_variant_is_the_programs_error_as_in_the_sandbox(setup, probe_plugin):
    from monsearch.oracle.session import OracleConfig, OracleSession

    core = probe_plugin.core
    assert probe_plugin.MONITOR["query_caps"]["variants"] == ["default", "strict", "actions_only"]
    t = core.load(trajectory_to_dict(setup["val"][0]))
    for host in (None, lambda traj, variant: 0.75):
        hook = core._OracleHook(host, 1)
        hook.traj = t
        ask = hook.function()
        with OracleSession(OracleConfig(backend="replay", replay_scores={})) as session:
            sandbox_ask = session.bind(t.id)
            for bad in ("nope", 3, b"strict"):
                with pytest.raises(ValueError, match="unknown oracle variant"):
                    ask(None, bad)
                with pytest.raises(ValueError, match="unknown oracle variant"):
                    sandbox_ask(None, bad)
        assert hook.calls == 0  # not a query
        assert ask(None, "strict") == (None if host is None else 0.75)


def test_program_failure_gets_the_fallback_score(setup, seed_plugin):
    # A trajectory the program cannot score (no steps at all is fine for the seed, so
    # break the view instead) gets the run's lowest val score, as in the sandbox.
    core = seed_plugin.core
    result = core._run(lambda view: 1 / 0, None, core._OracleHook(None, 1), None)
    assert result.error and result.score == min(setup["scores"]["seed"])


def test_json_shim_reads_and_refuses_numbers_and_nesting_as_orjson():
    """The plugin's stand-in for orjson: a huge number is refused (not read as inf), a
    nesting the stack cannot hold is "depth limit exceeded" (not a RecursionError)."""
    import importlib.util

    import orjson

    from monsearch.export import PLUGIN_DIR

    spec = importlib.util.spec_from_file_location("_shim_orjson", PLUGIN_DIR / "_orjson.py")
    shim = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shim)
    cases = [
        b"1" + b"0" * 400,
        b"-" + b"9" * 400,
        b"9" * 5000,
        b"1e400",
        b"[-1e400]",
        b"1" + b"0" * 25,
        b"18446744073709551615",
        b"18446744073709551616",
        b"-9223372036854775809",
        b"[1.5e308, 0.1]",
        b"[" * 5000 + b"]" * 5000,
    ]
    for data in cases:
        try:
            ours: object = shim.loads(data)
        except shim.JSONDecodeError as err:
            ours = ("error", err.msg)
        try:
            theirs: object = orjson.loads(data)
        except orjson.JSONDecodeError as err:
            theirs = ("error", err.msg)
        assert ours == theirs, data[:30]


# --------------------------------------------------------------------------- errors


def test_export_refuses_a_non_empty_folder_and_unknown_candidates(setup, tmp_path):
    (tmp_path / "x").write_text("")
    with pytest.raises(ExportError, match="not empty"):
        export(str(setup["run"].dir), tmp_path, verify_val=False)
    from monsearch.search.lineage import LineageError

    with pytest.raises(LineageError):
        export(str(setup["run"].dir), tmp_path / "new", program_id="nope", verify_val=False)


def test_export_command(setup, tmp_path):
    out = tmp_path / "cli-plugin"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "monsearch",
            "export",
            str(setup["run"].dir),
            "--out",
            str(out),
            "--no-verify",
            "--name",
            "cli_monitor",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert (out / "src" / "monsearch_cli_monitor" / "core.py").is_file()
    assert "monsearch_cli_monitor" in proc.stderr


# --------------------------------------------------------------------------- hosts


def test_fresh_venv_without_monsearch(setup, tmp_path):
    """Install only the plugin (and RestrictedPython from the index) into a new venv."""
    started = time.monotonic()
    folder, meta = setup["plugins"]["seed"]
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    pip = [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    # Build isolation fetches setuptools from the index; --no-deps keeps out everything else.
    subprocess.run([*pip, "--no-deps", str(folder)], check=True, env=env)
    subprocess.run([*pip, "RestrictedPython>=9.0,<10", "google-re2>=1.1,<2"], check=True, env=env)
    probe = (
        "import importlib.util, json, sys\n"
        f"import {meta['package']} as m\n"
        "assert importlib.util.find_spec('monsearch') is None\n"
        "from importlib.metadata import entry_points\n"
        f"[ep] = entry_points(group='monsearch.monitors', name={meta['name']!r})\n"
        "assert ep.load() is m.score\n"
        "r = m.evaluate(sys.argv[1])\n"
        "print(json.dumps([r.score, m.score(sys.argv[2]), m.MONITOR['strategy_hash'], r.status]))\n"
    )
    proc = subprocess.run(
        [str(py), "-c", probe, str(SB_FILE), str(ATIF_FILE)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    sb_score, atif_score, strategy, status = json.loads(proc.stdout)
    assert status == "ok"  # scored in its worker process, started from that venv
    plugin = _import(folder, meta["package"])
    assert (sb_score, atif_score, strategy) == (
        plugin.score(SB_FILE),
        plugin.score(ATIF_FILE),
        meta["strategy_hash"],
    )
    cli = env_dir / "bin" / meta["package"].replace("_", "-")
    proc = subprocess.run(
        [str(cli), str(SB_FILE)], capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode == 0 and json.loads(proc.stdout)["score"] == sb_score
    assert time.monotonic() - started < 120


def test_inspect_scorer_on_an_offline_log(setup, seed_plugin, tmp_path, monkeypatch):
    pytest.importorskip("inspect_ai")
    # Inspect keeps traces and buffers in the user's data folders: keep them in tmp.
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai import score as inspect_score
    from inspect_ai.dataset import Sample
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
    )
    from inspect_ai.solver import solver
    from inspect_ai.tool import ToolCall

    t = setup["val"][int(np.argmax(setup["scores"]["seed"]))]
    messages = [
        ChatMessageSystem(content="You are a pentester."),
        ChatMessageUser(content=t.prompt),
    ]
    for k, s in enumerate(t.steps):
        call = ToolCall(id=f"c{k}", function=s.tool, arguments=dict(s.arguments) or {"raw": s.text})
        messages.append(ChatMessageAssistant(content="", tool_calls=[call]))
        messages.append(
            ChatMessageTool(content=s.observation, tool_call_id=f"c{k}", function=s.tool)
        )

    @solver
    def replay():
        async def solve(state, generate):
            state.messages = list(messages)
            return state

        return solve

    task = Task(
        dataset=[
            Sample(
                input=t.prompt, metadata={"task": t.task, "outcome": t.outcome, "solved": t.solved}
            )
        ],
        solver=replay(),
    )
    [log] = inspect_eval(task, model="mockllm/model", log_dir=str(tmp_path), display="none")
    assert log.status == "success"
    scorer_module = importlib.import_module(seed_plugin.__name__ + ".inspect_scorer")
    scored = inspect_score(log, scorers=scorer_module.opsec_monitor(budget=0.05), display="none")
    [sample] = scored.samples
    [score] = sample.scores.values()
    from_messages = importlib.import_module(seed_plugin.__name__ + "._messages").messages_to_atif(
        messages, task=t.task, outcome=t.outcome, solved=t.solved
    )
    assert score.value == seed_plugin.score(from_messages)
    assert score.answer == seed_plugin.decide(score.value, 0.05)["decision"]
    assert score.metadata["findings"]["steps"]
    # Figures in the log are for reading: rounded as the plugin prints them.
    from monsearch.export.display import rounded

    raw = seed_plugin.findings(from_messages, top=5)
    assert score.metadata["findings"]["score"] == score.value
    assert [s["delta"] for s in score.metadata["findings"]["steps"]] == [
        rounded(s["delta"]) for s in raw["steps"]
    ]
    at5 = seed_plugin.threshold(0.05)
    assert score.metadata["decision"]["tau"] == at5["tau"]
    assert score.metadata["decision"]["g"] == rounded(at5["g"])
    assert "at a 5% audit budget" in score.explanation
    # The same trajectory read from the corpus scores the same: the transcript keeps it all.
    assert score.value == seed_plugin.score(t)
    importlib.import_module(seed_plugin.__name__ + "._inspect_registry")


def test_atif_scan_plugin(setup, seed_plugin, tmp_path):
    pytest.importorskip("atif_scan")
    from atif_scan import Context, Engine, load_trace

    plugin_module = importlib.import_module(seed_plugin.__name__ + ".atifscan_plugin")
    checks = plugin_module.checks()
    # A val trajectory as canonical ATIF without extra fields (atif-scan drops them).
    t = setup["val"][int(np.argmax(setup["scores"]["seed"]))]
    steps = [{"step_id": 1, "source": "user", "message": t.prompt}]
    for k, s in enumerate(t.steps):
        steps.append(
            {
                "step_id": k + 2,
                "source": "agent",
                "message": "",
                "tool_calls": [
                    {
                        "tool_call_id": f"c{k}",
                        "function_name": s.tool,
                        "arguments": dict(s.arguments) or {"raw": s.text},
                    }
                ],
                "observation": {"results": [{"source_call_id": f"c{k}", "content": s.observation}]},
            }
        )
    doc = {
        "schema_version": "ATIF-v1.6",
        "session_id": t.id,
        "agent": {"name": "a", "version": "1", "model_name": "m"},
        "steps": steps,
    }
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(doc))
    want = seed_plugin.score(doc)
    trace = load_trace(path)
    assessments = Engine(checks).evaluate(trace, Context())
    ours = [a for a in assessments if a.spec.id.startswith("opsec.")]
    assert len(ours) == 2
    for a in ours:
        assert a.result.status.value != "error", a
        assert dict(a.result.measure)["monitor_score"] == round(want, 6)
    flagged = [a for a in ours if a.result.status.value == "match"]
    assert flagged and all(a.result.evidence for a in flagged)
    # And through atif-scan's own command line, loading the plugin by module path.
    env = {
        **os.environ,
        "PYTHONPATH": str(setup["plugins"]["seed"][0] / "src"),
        "ATIF_SCAN_HOME": str(tmp_path / "home"),
        "HOME": str(tmp_path),
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "atif_scan",
            "--no-cache",
            "--no-sync",
            "--format",
            "json",
            "--plugin",
            f"{seed_plugin.__name__}.atifscan_plugin:checks",
            str(path),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    ids = {a["id"] for i in report["inputs"] for a in i["assessments"]}
    assert {c.spec.id for c in checks} <= ids


def test_a_real_evolve_run_exports_exactly(tmp_path_factory):
    """The selected strategy of a real ``monsearch evolve`` run (tests/run_fixtures)."""
    from run_fixtures import build_small_corpus, make_run

    from monsearch.export import load_strategy, load_val

    root = tmp_path_factory.mktemp("evolved")
    corpus = build_small_corpus(root, size=1000)
    outcome = make_run(root / "runs", corpus, run_id="r", budget=4)
    monitor = export("r", root / "plugin", runs_dir=root / "runs")
    assert monitor["strategy_hash"] == outcome["selected"]["strategy_hash"]
    assert monitor["verified"]["equal"] and monitor["selected"]
    strategy = load_strategy("r", runs_dir=root / "runs")
    records = [trajectory_to_dict(t) for t in load_val(strategy.config)]
    got = plugin_scores(root / "plugin", monitor["package"], records, hashseed="123")
    assert got["scores"] == strategy.val_scores


def test_sealed_test_and_escalation_band_from_the_report():
    """Shapes as ``monsearch test`` writes them (runs/<id>/test/report.json)."""
    from monsearch.export import _band, _compact_test
    from monsearch.export.readme import _test_row

    policy = {
        "budget": 0.3,
        "rule": "band",
        "feasible": True,
        "lower": 2.5,
        "upper": "inf",
        "region": "band",
        "recall": 0.6,
        "escalation_rate": 0.08,
        "cost": 0.3,
    }
    report = {
        "reopened": False,
        "ledger": {"path": "/somewhere/sealed-ledger.json"},
        "summary": [{"corpus": "test", "transferred_bauc": 0.7}],
        "corpora": {
            "test": {
                "n": 294,
                "status": "ok",
                "panel": {
                    "transferred": {
                        "bauc": {"aggregate": 0.72},
                        "recall_at": {"0.05": 0.64},
                        "n_failures": 121,
                        "curve": {"big": [1, 2]},
                    },
                    "recalibrated": {"bauc": {"aggregate": 0.69}},
                },
            }
        },
        "escalation": {
            "fit": {
                "np": {"rule": "np", "policies": [{**policy, "rule": "np", "upper": 4.0}]},
                "band": {
                    "rule": "band",
                    "costs": {"usd_per_unit": 0.15},
                    "policies": [{**policy, "budget": 0.2, "escalation_rate": 0.0}, policy],
                },
            }
        },
    }
    compact = _compact_test(report)
    assert "ledger" not in json.dumps(compact) and "curve" not in json.dumps(compact)
    assert compact["test"]["transferred"]["bauc"]["aggregate"] == 0.72
    assert "0.720 (recalibrated 0.690)" in _test_row(compact)[0]
    band = _band(report["escalation"]["fit"])
    assert band["rule"] == "band" and band["low"] == 2.5 and band["high"] == "inf"
    assert band["cost_budget"] == 0.3 and band["usd_per_unit"] == 0.15


def test_decide_reports_the_escalation_band(seed_plugin, monkeypatch):
    monkeypatch.setitem(seed_plugin.MONITOR, "escalation_band", {"low": 1.0, "high": "inf"})
    assert seed_plugin.decide(2.0, 0.05)["escalate"] is True
    assert seed_plugin.decide(0.5, 0.05)["escalate"] is False


def test_vendoring_refuses_imports_it_cannot_copy():
    from monsearch.export.vendor import VendorError, rewrite

    assert (
        rewrite("from monsearch.views.frozen import freeze\n") == "from .frozen import freeze\n"
    )
    assert rewrite("import re2\n") == "from . import _re2 as re2\n"
    assert rewrite("from monsearch.views import secrets as sec\n") == (
        "from . import secrets as sec\n"
    )
    with pytest.raises(VendorError):  # a new dependency of the view must be vendored too
        rewrite("from monsearch.eval.metrics import auroc\n")
