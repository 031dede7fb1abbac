"""The exported plugin runs its program under the sandbox's protections (issue 25, item 1).

Hostile strategies that pass the sandbox on val (so the run selects them and export
verifies them) but loop, swallow the interrupt or allocate 1.5 GB when a step's command
holds a trigger string, and one that uses a pattern that backtracks catastrophically
in Python's ``re``. Each is exported through the real export path and scored by the
plugin: the trajectory with the trigger ends with status ``timeout`` / ``memory``, the
next one scores normally, and the host (this process, or a command line) is unharmed.
Every wait is under a generous hang guard; nothing here depends on the machine's speed.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pytest
from export_support import make_contract_run, small_corpus

from monsearch.corpora.codec import trajectory_to_dict
from monsearch.corpora.store import load_corpus
from monsearch.export import export

#: A hang guard: far past any budget here, only there so that a hang fails the test.
HANG_GUARD_S = 120
TRIGGER = "OPEN-SESAME"
#: A command that makes ``^(a+)+$`` backtrack for minutes in Python's re (35 characters).
BACKTRACKER = "a" * 34 + "b"

PROGRAMS = {
    "loop": f"""
def score(traj):
    for step in traj.steps:
        if "{TRIGGER}" in step.command:
            while True:
                pass
    return float(len(traj.steps))
""",
    # Swallows the interrupt: its finally block loops again, so only a kill stops it.
    "stubborn": f"""
def score(traj):
    for step in traj.steps:
        if "{TRIGGER}" in step.command:
            try:
                while True:
                    pass
            finally:
                while True:
                    pass
    return float(len(traj.steps))
""",
    "alloc": f"""
def score(traj):
    for step in traj.steps:
        if "{TRIGGER}" in step.command:
            blob = "x" * (1536 * 1024 * 1024)
            return float(len(blob))
    return float(len(traj.steps))
""",
    "backtrack": """
def score(traj):
    s = 0.0
    for step in traj.steps:
        if re_search("^(a+)+$", step.command):
            s += 1.0
    return s + 0.5 * len(traj.steps)
""",
}


def _import(folder: Path, package: str):
    src = str(folder / "src")
    if src not in sys.path:
        sys.path.insert(0, src)
    return importlib.import_module(package)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A run whose candidates are the programs above (evaluated by the sandbox on val),
    each exported as a plugin (verified on val, in its worker); "loop" is selected."""
    root = tmp_path_factory.mktemp("limits")
    corpus = small_corpus(root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run, scores = make_contract_run(root / "runs", corpus, PROGRAMS, selected="loop")
    plugins = {}
    for name in PROGRAMS:
        meta = export(str(run.dir), root / f"{name}-plugin", program_id=name, name=name)
        assert meta["verified"]["equal"]  # each passed export's val check
        plugins[name] = (root / f"{name}-plugin", meta)
    val = load_corpus(corpus, ["val"]).split("val")
    return {"root": root, "run": run, "scores": scores, "plugins": plugins, "val": val}


def plugin_of(hostile, name: str):
    folder, meta = hostile["plugins"][name]
    return _import(folder, meta["package"])


def with_command(traj, command: str):
    """``traj`` with one more step running ``command`` (as the monitored agent could)."""
    last = traj.steps[-1]
    step = dataclasses.replace(
        last, index=last.index + 1, text=command, arguments={"command": command}
    )
    return dataclasses.replace(traj, steps=(*traj.steps, step))


def guarded(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` in a daemon thread: the test fails, rather than hangs, if it
    does not return within the hang guard."""
    box: dict = {}

    def run() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # handed to the test
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(HANG_GUARD_S)
    assert not thread.is_alive(), f"{getattr(fn, '__name__', fn)} did not return: the host hangs"
    if "error" in box:
        raise box["error"]
    return box["value"]


def host_state() -> dict:
    """What a plugin must leave alone in its host."""
    return {
        "alarm": signal.getsignal(signal.SIGALRM),
        "itimer": signal.getitimer(signal.ITIMER_REAL),
        "address_space": resource.getrlimit(resource.RLIMIT_AS),
        "cpu": resource.getrlimit(resource.RLIMIT_CPU),
    }


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --------------------------------------------------------------------------- Python API


@pytest.mark.parametrize(
    "name,status", [("loop", "timeout"), ("stubborn", "timeout"), ("alloc", "memory")]
)
def test_hostile_trajectory_is_stopped_and_the_next_scores(hostile, name, status):
    plugin = plugin_of(hostile, name)
    benign = hostile["val"][0]
    bad = with_command(benign, f"echo {TRIGGER}")
    state, peak = host_state(), peak_rss_mb()
    before = guarded(plugin.evaluate, benign)
    assert before.ok and before.score == float(len(benign.steps))
    result = guarded(plugin.evaluate, bad)  # the default limits: 2 s, 1024 MB
    assert result.status == status and not result.ok
    assert result.score == plugin.MONITOR["fallback_score"]  # the sandbox's rule
    assert ("time budget of 2 s" if status == "timeout" else "memory") in result.error
    if name == "stubborn":  # it swallowed the interrupt: its process was killed
        assert "killed" in result.error
    decision = plugin.decide(result, 0.05)
    assert decision["decision"] == status and decision["error"] == result.error
    after = guarded(plugin.evaluate, benign)  # a fresh worker, the same score
    assert after.ok and after.score == before.score
    assert host_state() == state
    assert peak_rss_mb() < peak + 512  # the 1.5 GB were never this process's


def test_every_entry_point_is_bounded(hostile):
    """findings, score_steps and score_many share the trajectory's budget; a call's own
    ``timeout_s`` overrides the default."""
    plugin = plugin_of(hostile, "loop")
    benign = hostile["val"][0]
    bad = with_command(benign, f"echo {TRIGGER}")
    fallback = plugin.MONITOR["fallback_score"]
    n = len(bad.steps)
    quick = {"timeout_s": 0.5}
    r = guarded(plugin.evaluate, bad, **quick)
    assert r.status == "timeout" and "budget of 0.5 s" in r.error
    f = guarded(plugin.findings, bad, **quick)
    assert f["status"] == "timeout" and f["score"] == fallback and f["steps"] == []
    # Every prefix before the trigger scores; the one with it (the last) does not finish.
    steps = guarded(plugin.score_steps, bad, **quick)
    assert steps == [float(k) for k in range(1, n)] + [fallback]
    many = guarded(plugin.score_many, [benign, bad, benign], **quick)
    assert [x.status for x in many] == ["ok", "timeout", "ok"]
    assert many[0].score == many[2].score == float(len(benign.steps))
    # Findings of a trajectory the program finishes are complete.
    ok = guarded(plugin.findings, benign, **quick)
    assert ok["status"] == "ok" and ok["score"] == float(len(benign.steps))


def test_the_sandbox_stops_the_same_programs(hostile):
    """The reference: monsearch's own sandbox gives these trajectories the same statuses."""
    from monsearch.sandbox.evaluate import SandboxPool

    bad = with_command(hostile["val"][0], f"echo {TRIGGER}")
    with SandboxPool([bad], workers=1, cache_dir=None) as pool:
        statuses = {name: pool.evaluate(PROGRAMS[name]).status for name in ("loop", "alloc")}
    plugin_statuses = {
        name: guarded(plugin_of(hostile, name).evaluate, bad).status for name in ("loop", "alloc")
    }
    assert statuses == plugin_statuses == {"loop": "timeout", "alloc": "memory"}


def test_a_val_trajectory_the_sandbox_stopped_is_reproduced_exactly(hostile, tmp_path):
    """The sandbox gives a trajectory it stopped the run's lowest score; the plugin,
    stopping it too, gives the same fallback: export verifies, and the status says why."""
    val = hostile["val"]
    owners: dict[str, set[int]] = {}
    for i, t in enumerate(val):
        for s in t.steps:
            if s.tool == "execute_command":
                owners.setdefault(s.text, set()).add(i)
    text, (index,) = next((k, v) for k, v in owners.items() if len(v) == 1)
    source = PROGRAMS["loop"].replace(f'"{TRIGGER}" in step.command', f"step.command == {text!r}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run, scores = make_contract_run(
            tmp_path / "runs", small_corpus(hostile["root"]), {"stops": source}
        )
    meta = export(str(run.dir), tmp_path / "plugin", name="stops")
    assert meta["verified"]["equal"] and meta["verified"]["statuses"] == ["ok", "timeout"]
    assert scores["stops"][index] == min(scores["stops"]) == meta["fallback_score"]
    plugin = _import(tmp_path / "plugin", meta["package"])
    r = guarded(plugin.evaluate, val[index], timeout_s=0.5)
    assert r.status == "timeout" and r.score == scores["stops"][index]


def test_limits_are_the_hosts_to_set(hostile):
    plugin = plugin_of(hostile, "loop")
    core = plugin.core
    assert core.LIMITS == core.Limits() == core.Limits(2.0, 1024, "process")
    before = core.LIMITS
    try:
        limits = core.configure(timeout_s=0.25, memory_mb=512)
        assert (limits.timeout_s, limits.memory_mb) == (0.25, 512) and core.LIMITS is limits
        bad = with_command(hostile["val"][0], f"echo {TRIGGER}")
        r = guarded(plugin.evaluate, bad)
        assert r.status == "timeout" and "budget of 0.25 s" in r.error
        for bad_value in ({"timeout_s": 0}, {"timeout_s": math.inf}, {"memory_mb": 1.5}):
            with pytest.raises(ValueError):
                core.configure(**bad_value)
        with pytest.raises(ValueError):
            plugin.evaluate(bad, timeout_s=-1)
        with pytest.raises(ValueError):
            core.configure(isolation="thread")
    finally:
        core.LIMITS = before


def test_the_judges_time_is_not_the_programs(hostile, tmp_path):
    """The probe-like program asks the oracle; a slow judge does not use up the budget,
    and a failing judge is the program's failure (an error), not the host's."""
    import time

    source = "def score(traj):\n    v = oracle(traj)\n    return 1.0 if v is None else v\n"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run, _ = make_contract_run(
            tmp_path / "runs", small_corpus(hostile["root"]), {"asks": source}
        )
    meta = export(str(run.dir), tmp_path / "plugin", name="asks")
    plugin = _import(tmp_path / "plugin", meta["package"])
    t = hostile["val"][0]

    def slow(traj, variant):
        time.sleep(2.5)
        return 7.0

    # The judge takes longer than the whole budget; the program's own part (reading and
    # scoring one trajectory) gets the default 2 s, room on any machine.
    r = guarded(plugin.evaluate, t, oracle=slow, timeout_s=2.0)
    assert (r.status, r.score, r.oracle_calls) == ("ok", 7.0, 1)

    def broken(traj, variant):
        raise ZeroDivisionError("no judge today")

    r = guarded(plugin.evaluate, t, oracle=broken)
    assert r.status == "error" and "ZeroDivisionError: no judge today" in r.error
    # A judge that calls the monitor again would cross the one request in flight.
    r = guarded(plugin.evaluate, t, oracle=lambda traj, v: plugin.score(traj))
    assert r.status == "error" and "called again from inside its own oracle" in r.error
    assert guarded(plugin.evaluate, t, oracle=lambda traj, v: 2.0).score == 2.0


def test_a_worker_that_dies_is_replaced(hostile):
    plugin = plugin_of(hostile, "loop")
    t = hostile["val"][0]
    first = guarded(plugin.evaluate, t)
    worker = plugin.core._ISOLATION.worker
    os.kill(worker.proc.pid, signal.SIGKILL)
    worker.proc.wait(HANG_GUARD_S)
    again = guarded(plugin.evaluate, t)
    assert again.ok and again.score == first.score
    assert plugin.core._ISOLATION.worker.proc.pid != worker.proc.pid


def test_unreadable_input_is_the_hosts_error_and_the_worker_stays(hostile):
    plugin = plugin_of(hostile, "loop")
    guarded(plugin.evaluate, hostile["val"][0])
    pid = plugin.core._ISOLATION.worker.proc.pid
    with pytest.raises(plugin.InputError, match="StealthBench"):
        guarded(plugin.evaluate, {"hello": 1})  # read in the worker, raised here
    with pytest.raises(plugin.InputError):
        guarded(plugin.evaluate, {"atif_version": "1.7", "task": 3, "steps": [], "outcome": "x"})
    assert guarded(plugin.evaluate, hostile["val"][0]).ok
    assert plugin.core._ISOLATION.worker.proc.pid == pid


def test_threads_take_turns_and_a_forked_child_gets_its_own_worker(hostile):
    plugin = plugin_of(hostile, "backtrack")
    val = hostile["val"][:40]
    want = [plugin.score(t) for t in val]
    got: dict[int, list[float]] = {}

    def score_all(k: int) -> None:
        got[k] = [plugin.score(t) for t in val]

    threads = [threading.Thread(target=score_all, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(HANG_GUARD_S)
    assert got == {k: want for k in range(4)}
    parent_worker = plugin.core._ISOLATION.worker.proc.pid
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read)
            r = plugin.evaluate(val[0])
            mine = plugin.core._ISOLATION.worker.proc.pid
            os.write(write, json.dumps([r.score, r.status, mine]).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as fh:
        score, status, child_worker = json.loads(fh.read() or "null")
    os.waitpid(pid, 0)
    assert (score, status) == (want[0], "ok") and child_worker != parent_worker
    assert plugin.score(val[1]) == want[1]  # the parent's worker is still its own


# --------------------------------------------------------------------------- regex


def test_google_re2_is_required_and_the_backtracker_is_linear(hostile, tmp_path):
    """``^(a+)+$`` was judged portable to ``re``, where a 35-character command takes
    minutes: the plugin depends on google-re2 and will not load without it."""
    folder, meta = hostile["plugins"]["backtrack"]
    deps = (folder / "pyproject.toml").read_text().split("[project.optional")[0]
    assert '"google-re2>=1.1,<2"' in deps
    plugin = plugin_of(hostile, "backtrack")
    t = with_command(hostile["val"][0], BACKTRACKER)
    r = guarded(plugin.evaluate, t)
    assert r.ok and r.score == 0.5 * len(t.steps)  # no match, as RE2 says
    assert guarded(plugin.evaluate, with_command(t, "aaaa")).score == 1 + 0.5 * (len(t.steps) + 1)
    # A host without google-re2 (an import that fails stands in for it): no fallback
    # to re, which would hang on this very command.
    (tmp_path / "re2.py").write_text("raise ImportError('no google-re2 here')\n")
    doc = tmp_path / "t.json"
    doc.write_text(json.dumps(trajectory_to_dict(t)))
    script = f"import sys\nimport {meta['package']} as m\nprint(m.evaluate(sys.argv[1]).status)\n"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(folder / "src")])}
    proc = subprocess.run(
        [sys.executable, "-c", script, str(doc)],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_GUARD_S,
        check=False,
    )
    assert proc.returncode != 0
    assert "ImportError: this monsearch monitor needs google-re2" in proc.stderr


# --------------------------------------------------------------------------- hosts


def _write(tmp_path: Path, name: str, traj) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(trajectory_to_dict(traj)))
    return path


def test_command_line_reports_the_status(hostile, tmp_path):
    folder, meta = hostile["plugins"]["loop"]
    benign = hostile["val"][0]
    files = [
        _write(tmp_path, "bad", with_command(benign, f"echo {TRIGGER}")),
        _write(tmp_path, "good", benign),
    ]
    env = {**os.environ, "PYTHONPATH": str(folder / "src")}
    proc = subprocess.run(
        [sys.executable, "-m", meta["package"], "--findings", "--timeout", "0.5", *map(str, files)],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_GUARD_S,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    bad, good = (json.loads(line) for line in proc.stdout.splitlines())
    assert bad["status"] == "timeout" and bad["decision"]["decision"] == "timeout"
    assert bad["score"] == meta["fallback_score"] and "0.5 s" in bad["error"]
    assert bad["findings"] is None
    assert good["status"] == "ok" and good["decision"]["decision"] in ("audit", "tie", "pass")
    assert good["score"] == float(len(benign.steps)) and good["findings"]["status"] == "ok"


@pytest.mark.parametrize("monitor", ["plugin", "run"])
def test_monsearch_score_reports_the_status(hostile, tmp_path, monitor):
    folder, meta = hostile["plugins"]["loop"]
    benign = hostile["val"][0]
    bad = _write(tmp_path, "bad", with_command(benign, f"echo {TRIGGER}"))
    good = _write(tmp_path, "good", benign)
    ref = str(folder) if monitor == "plugin" else str(hostile["run"].dir)  # "loop" is selected
    for extra in (["--json"], []):
        proc = subprocess.run(
            [sys.executable, "-m", "monsearch", "score", "--monitor", ref, str(bad), str(good)]
            + extra,
            capture_output=True,
            text=True,
            timeout=HANG_GUARD_S,
            env={**os.environ, "COLUMNS": "200"},
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        if extra:
            r_bad, r_good = (json.loads(line) for line in proc.stdout.splitlines())
            assert (r_bad["status"], r_bad["decision"], r_bad["threshold"]) == (
                "timeout",
                "timeout",
                None,
            )
            assert r_bad["findings"] == [] and "time budget" in r_bad["error"]
            assert r_good["status"] == "ok" and r_good["score"] == float(len(benign.steps))
        else:
            # The budget is in the decision column's header; the cell keeps the status.
            assert "decision at 5%" in proc.stdout
            assert "timeout [program did not finish: fallback score]" in proc.stdout


def test_inspect_scorer_gives_no_score_for_a_stopped_transcript(hostile, tmp_path, monkeypatch):
    pytest.importorskip("inspect_ai")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai import score as inspect_score
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser
    from inspect_ai.solver import solver
    from inspect_ai.tool import ToolCall

    plugin = plugin_of(hostile, "loop")
    benign = hostile["val"][0]
    transcripts = {}
    for sid, t in (("good", benign), ("bad", with_command(benign, f"echo {TRIGGER}"))):
        messages = [ChatMessageUser(content=t.prompt)]
        for k, s in enumerate(t.steps):
            call = ToolCall(id=f"c{k}", function=s.tool, arguments={"command": s.text})
            messages.append(ChatMessageAssistant(content="", tool_calls=[call]))
            messages.append(
                ChatMessageTool(content=s.observation, tool_call_id=f"c{k}", function=s.tool)
            )
        transcripts[sid] = messages

    @solver
    def replay():
        async def solve(state, generate):
            state.messages = list(transcripts[state.sample_id])
            return state

        return solve

    task = Task(dataset=[Sample(input="x", id=k) for k in transcripts], solver=replay())
    [log] = inspect_eval(task, model="mockllm/model", log_dir=str(tmp_path), display="none")
    scorer_module = importlib.import_module(plugin.__name__ + ".inspect_scorer")
    plugin.core.configure(timeout_s=0.5)
    try:
        scored = guarded(inspect_score, log, scorers=scorer_module.opsec_monitor(), display="none")
    finally:
        plugin.core.configure(timeout_s=2.0)
    by_id = {s.id: next(iter(s.scores.values())) for s in scored.samples}
    bad, good = by_id["bad"], by_id["good"]
    assert math.isnan(bad.value) and bad.answer == "timeout"
    assert "no score (timeout)" in bad.explanation and bad.metadata["status"] == "timeout"
    assert bad.metadata["fallback_score"] == plugin.MONITOR["fallback_score"]
    assert good.value == float(len(benign.steps)) and good.answer in ("audit", "tie", "pass")


def test_atif_scan_reports_an_error_for_a_stopped_trace(hostile, tmp_path):
    pytest.importorskip("atif_scan")
    from atif_scan import Context, Engine, load_trace

    plugin = plugin_of(hostile, "loop")
    module = importlib.import_module(plugin.__name__ + ".atifscan_plugin")
    steps = [{"step_id": 1, "source": "user", "message": "p"}]
    for k, command in enumerate(("ls", f"echo {TRIGGER}")):
        steps.append(
            {
                "step_id": k + 2,
                "source": "agent",
                "message": "",
                "tool_calls": [
                    {
                        "tool_call_id": f"c{k}",
                        "function_name": "execute_command",
                        "arguments": {"command": command},
                    }
                ],
                "observation": {"results": [{"source_call_id": f"c{k}", "content": "ok"}]},
            }
        )
    doc = {
        "schema_version": "ATIF-v1.6",
        "session_id": "s",
        "agent": {"name": "a", "version": "1", "model_name": "m"},
        "steps": steps,
    }
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(doc))
    plugin.core.configure(timeout_s=0.5)
    try:
        assessments = guarded(Engine(module.checks()).evaluate, load_trace(path), Context())
    finally:
        plugin.core.configure(timeout_s=2.0)
    ours = [a for a in assessments if a.spec.id.startswith("opsec.")]
    assert len(ours) == 2
    for a in ours:
        assert a.result.status.value == "error"
        assert dict(a.result.measure)["monitor_status"] == "timeout"


# --------------------------------------------------------------------------- README


def test_readme_describes_the_limits_and_never_calls_the_program_trusted(hostile):
    folder, _meta = hostile["plugins"]["loop"]
    readme = (folder / "README.md").read_text()
    assert "## Limits: the program is not trusted" in readme
    assert "`timeout_s` (default 2 s)" in readme and "`memory_mb` (default 1024 MB)" in readme
    assert "google-re2" in readme and "refuses to load without google-re2" in readme
    # Every "trusted" is a "not trusted": never "not untrusted", never plain "trusted".
    for m in re.finditer(r"(\w+)\s+(\w*trusted)", readme, flags=re.IGNORECASE):
        assert (m.group(1).lower(), m.group(2).lower()) == ("not", "trusted"), m.group(0)
