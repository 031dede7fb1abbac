"""The worker pool: isolation per candidate, statuses, fallback, recovery, oracle wiring."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest
from sandbox_support import BENIGN, LABEL_CANARY, make_trajectories

from monsearch.errors import MonsearchError
from monsearch.oracle.session import OracleConfig, replay_scores_from
from monsearch.sandbox.evaluate import SandboxLimits, SandboxPool, finalise
from monsearch.sandbox.runner import run_program
from monsearch.sandbox.workers import strip_for_sandbox, worker_environment
from monsearch.views.build import build_view

TRAJS = make_trajectories(20)
IDS = tuple(t.id for t in TRAJS)
LIMITS = SandboxLimits(wall_s=3.0, cpu_s=2.0, memory_mb=256, per_traj_ms=500)


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(TRAJS, workers=2, limits=LIMITS) as p:
        yield p


def in_process(source: str, params=None) -> np.ndarray:
    header, scores = run_program([build_view(t) for t in TRAJS], IDS, source, params=params)
    assert header["status"] == "done"
    return np.asarray(scores)


def test_scores_match_in_process_run_and_are_aligned(pool):
    result = pool.evaluate(BENIGN)
    assert result.ok and result.trajectory_ids == IDS and result.n_errors == 0
    assert result.scores.dtype == np.float64 and result.scores.shape == (len(IDS),)
    assert np.array_equal(result.scores, in_process(BENIGN))
    assert result.wall_s > 0 and result.cpu_s > 0


def test_params_override(pool):
    result = pool.evaluate(BENIGN, params={"w_req": 0.0, "w_secret": 10.0})
    assert result.ok
    assert np.array_equal(result.scores, in_process(BENIGN, {"w_req": 0.0, "w_secret": 10.0}))
    assert not np.array_equal(result.scores, pool.evaluate(BENIGN).scores)
    bad = pool.evaluate(BENIGN, params={"nope": 1.0})
    assert bad.status == "error" and "unknown PARAMS" in bad.message


def test_evaluate_many_keeps_order_and_is_deterministic_across_workers(pool):
    # Set iteration order depends on string hashing: every worker runs with the same seed.
    hashy = (
        "def score(t):\n"
        "    s = set(t.task + str(i) for i in range(40))\n"
        "    return float(sum((i + 1) * ord(x[-1]) for i, x in enumerate(s)))\n"
    )
    sources = [hashy, BENIGN, hashy, "def score(t):\n    return 1.0\n", hashy, hashy]
    results = pool.evaluate_many(sources)
    assert [r.status for r in results] == ["ok"] * 6
    assert np.array_equal(results[1].scores, in_process(BENIGN))
    assert set(results[3].scores) == {1.0}
    for r in (results[2], results[4], results[5]):
        assert np.array_equal(r.scores, results[0].scores)
    with SandboxPool(TRAJS[:5], workers=1, limits=LIMITS) as other:
        assert np.array_equal(other.evaluate(hashy).scores, results[0].scores[:5])


def test_failed_trajectories_get_the_fallback_or_fail_the_candidate(pool):
    one = "def score(t):\n    if t.id == IDS0:\n        raise ValueError('boom')\n    return float(t.n_steps)\n"
    ids = pool.view_ids  # what programs see: salted with the pool's secret
    result = pool.evaluate(one.replace("IDS0", repr(ids[3])))  # 1 of 20 = 5 %: allowed
    assert result.ok and result.n_errors == 1
    assert result.scores[3] == min(result.scores[i] for i in range(20) if i != 3)
    assert result.errors == [
        {"kind": "exception", "message": "ValueError: boom", "trajectory_id": IDS[3], "line": 3}
    ]
    two = one.replace("t.id == IDS0", f"t.id in ({ids[3]!r}, {ids[4]!r})")
    failed = pool.evaluate(two)
    assert failed.status == "error" and failed.scores is None and failed.n_errors == 2
    assert "2 of the first 5 of 20" in failed.message and "ValueError: boom" in failed.message


def test_finalise_rules():
    limits = SandboxLimits(max_error_rate=0.5)
    nan = float("nan")
    raw = np.array([1.0, nan, 3.0, nan], dtype=np.float64).tobytes()
    ok = finalise({"status": "done", "n_timeouts": 0}, raw, ("a", "b", "c", "d"), limits)
    assert ok.ok and list(ok.scores) == [1.0, 1.0, 3.0, 1.0] and ok.n_errors == 2
    slow = finalise(
        {"status": "done", "n_timeouts": 3},
        np.array([nan, nan, nan, 1.0]).tobytes(),
        ("a", "b", "c", "d"),
        limits,
    )
    assert slow.status == "timeout"
    bad = finalise({"status": "done"}, np.array([1.0, float("inf")]).tobytes(), ("a", "b"), limits)
    assert bad.status == "invalid"
    short = finalise({"status": "done"}, np.array([1.0]).tobytes(), ("a", "b"), limits)
    assert short.status == "crash"
    assert finalise({"status": "weird"}, b"", ("a",), limits).status == "crash"


def test_programs_never_see_labels_meta_generator_or_ids(pool):
    src = (
        "def score(t):\n"
        "    text = str(t) + repr(t.steps)\n"
        f"    bad = ({LABEL_CANARY!r}, 'persona-a', 'persona-b', 'judge-0', 'traj-0')\n"
        "    return float(sum(1 for b in bad if b in text))\n"
    )
    result = pool.evaluate(src)
    assert result.ok and set(result.scores) == {0.0}
    for t in strip_for_sandbox(TRAJS):
        assert t.panel == () and t.oracle == () and t.meta == {}


def test_worker_environment_is_scrubbed(monkeypatch):
    monkeypatch.setenv("MONSEARCH_SECRET_CANARY", "s3cr3t")
    env = worker_environment()
    assert "MONSEARCH_SECRET_CANARY" not in env and env["PYTHONHASHSEED"] == "0"
    assert set(env) == {"PATH", "LANG", "LC_ALL", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE"}


def test_dead_idle_worker_is_replaced(pool):
    before = pool.replacements
    for pid in pool.worker_pids:
        os.kill(pid, signal.SIGKILL)
    time.sleep(0.05)
    results = [pool.evaluate(BENIGN), pool.evaluate(BENIGN)]  # FIFO: each dead one in turn
    assert all(r.ok for r in results)
    assert np.array_equal(results[0].scores, in_process(BENIGN))
    assert pool.replacements == before + 2 and len(pool.worker_pids) == 2


def test_worker_killed_mid_candidate_is_replaced_and_candidate_retried():
    slow = "def score(t):\n    n = 0\n    for i in range(2000000):\n        n += i\n    return float(n % 7)\n"
    few = TRAJS[:4]
    limits = SandboxLimits(wall_s=20, cpu_s=10, per_traj_ms=5000)
    with SandboxPool(few, workers=1, limits=limits) as p:
        victim = p.worker_pids[0]
        out = {}
        thread = threading.Thread(target=lambda: out.setdefault("r", p.evaluate(slow)))
        thread.start()
        time.sleep(0.15)  # the candidate needs about half a second
        os.kill(victim, signal.SIGKILL)
        thread.join(60)
        result = out["r"]
        assert result.ok and p.replacements == 1 and p.worker_pids[0] != victim
        header, scores = run_program([build_view(t) for t in few], [t.id for t in few], slow)
        assert np.array_equal(result.scores, np.asarray(scores))


def test_statuses_for_limits(pool):
    results = pool.evaluate_many(
        [
            "def score(t):\n    while True:\n        pass\n",
            "def score(t):\n    return len('x' * 10**10)\n",
            "def score(t):\n    return 'high'\n",
            "def score(t):\n    return 1/0\n",
            "x = (\n",
        ]
    )
    assert [r.status for r in results] == ["timeout", "memory", "invalid", "error", "error"]
    assert "per-trajectory budget" in results[0].message
    assert results[4].errors[0]["line"] == 1 and results[4].errors[0]["kind"] == "compile"
    assert all(r.scores is None for r in results)


def test_wall_clock_limit_kills_a_child_that_uses_no_cpu():
    # Per-trajectory budget off and a CPU limit above the wall limit: only the wall clock
    # can stop this loop, and the worker must SIGKILL the child.
    limits = SandboxLimits(wall_s=0.5, cpu_s=30, per_traj_ms=None)
    with SandboxPool(TRAJS[:2], workers=1, limits=limits) as p:
        started = time.monotonic()
        result = p.evaluate("def score(t):\n    while True:\n        pass\n")
        assert result.status == "timeout" and "wall-clock" in result.message
        assert time.monotonic() - started < 5
        assert p.evaluate(BENIGN).ok


def test_oracle_through_the_pool_counts_per_trajectory():
    config = OracleConfig(backend="replay", per_traj_cap=1, replay_scores=replay_scores_from(TRAJS))
    src = (
        "def score(t):\n    a = oracle(t)\n    b = oracle(t)\n    return a if b is None else -1.0\n"
    )
    with SandboxPool(TRAJS, workers=2, limits=LIMITS, oracle=config) as p:
        result = p.evaluate(src)
        assert result.ok
        replay = replay_scores_from(TRAJS)
        assert list(result.scores) == [replay[i] for i in IDS]
        assert result.oracle["counts"] == dict.fromkeys(IDS, 1)
        assert result.oracle["refused"] == dict.fromkeys(IDS, 1)
        assert result.oracle["fresh"] == 20 and result.oracle["backend"] == "replay"
        # A second candidate gets a fresh session: caps are per candidate.
        again = p.evaluate("def score(t):\n    return 0.0 if oracle(t) is None else 1.0\n")
        assert set(again.scores) == {1.0}


def test_pool_argument_checks_and_close(tmp_path):
    with pytest.raises(MonsearchError):
        SandboxPool([], workers=1)
    with pytest.raises(MonsearchError):
        SandboxPool([TRAJS[0], TRAJS[0]], workers=1)
    p = SandboxPool(TRAJS[:3], workers=1, limits=LIMITS)
    pids, workdir = p.worker_pids, p.workdir
    assert workdir.is_dir() and list(workdir.iterdir()) == []
    p.close()
    assert not workdir.exists()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    with pytest.raises(MonsearchError):
        p.evaluate(BENIGN)


def test_live_judge_oracle_works_inside_the_limited_child(tmp_path):
    # The llm backend opens sockets and writes its sqlite cache from inside the child.
    from openai_stub_server import DEFAULT_KEYWORDS, StubJudgeServer

    from monsearch.oracle.session import LLMJudgeConfig

    few = [TRAJS[i] for i in (0, 5, 10, 12)]  # two the stub judge flags, two it passes
    src = "def score(t):\n    v = oracle(t)\n    return -1.0 if v is None else v\n"
    with StubJudgeServer() as stub:
        llm = LLMJudgeConfig(
            model="stub-judge", base_url=stub.base_url, api_key="k", backoff_base_s=0.0
        )
        config = OracleConfig(backend="llm", llm=llm, cache_dir=tmp_path / "cache")
        with SandboxPool(few, workers=1, limits=LIMITS, oracle=config) as p:
            first = p.evaluate(src)
            second = p.evaluate(src)
        assert first.ok, first.message
        flagged = [
            any(k in s.text or k in s.observation for s in t.steps for k in DEFAULT_KEYWORDS)
            for t in few
        ]
        assert flagged == [True, False, False, True]
        assert [bool(v > 0.5) for v in first.scores] == flagged and min(first.scores) >= 0.0
        assert first.oracle["fresh"] == 4 and stub.chat_count == 4
        assert np.array_equal(second.scores, first.scores) and second.oracle["fresh"] == 0
        assert list((tmp_path / "cache").iterdir())
