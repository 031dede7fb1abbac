"""Programs that will not stop, and what a program can learn from its view's id.

Each non-stopping program runs over ONE trajectory with the pool's default limits
(30 s CPU, 60 s wall): before the per-trajectory watch, each took a worker for
30-60 s. Now the worker SIGKILLs the child shortly after the call overruns its
budget, or the interrupt reaches a loop that used to run inside C. The assertions
check how the candidate was decided (status, the trajectory named, the mechanism),
not how fast this machine is: the elapsed-time bound is generous on purpose.
"""

from __future__ import annotations

import hashlib
import time

import numpy as np
import pytest
from sandbox_support import BENIGN, LABEL_CANARY, make_trajectories

from monsearch.sandbox.evaluate import SandboxLimits, SandboxPool
from monsearch.views.build import build_view, new_view_id_key, view_id
from monsearch.views.cache import build_views_file, load_views
from monsearch.views.frozen import thaw

TRAJS = make_trajectories(20)
ONE = TRAJS[:1]
#: The default candidate caps (30 s CPU, 60 s wall): only the per-trajectory watch
#: can decide these programs quickly.
DEFAULTS = SandboxLimits()
#: Far below the 30-60 s the caps would take, far above a 3x slower machine's decision.
DECIDED_WELL_BEFORE_CAPS_S = 20.0


def prog(body: str, prelude: str = "") -> str:
    lines = "".join(f"    {line}\n" for line in body.strip("\n").splitlines())
    return f"{prelude}\ndef score(traj):\n{lines}"


KILLED = "the program process was killed"
#: Interrupted from inside (the call counted as an overrun) or killed from outside:
#: which one depends on where CPython checks for signals, not on the sandbox.
EITHER = ""

# (name, source, what the message must say)
NON_STOPPING = [
    (
        "loop_in_finally_swallows_interrupt",
        prog(
            "while True:\n    try:\n        while True:\n            pass\n    finally:\n        while True:\n            pass"
        ),
        KILLED,
    ),
    (
        "nested_finally_restarts",
        prog(
            "return f(0)",
            "def f(n):\n    try:\n        while True:\n            pass\n    finally:\n"
            "        try:\n            f(n + 1)\n        finally:\n            while True:\n"
            "                pass\n",
        ),
        KILLED,
    ),
    ("bigint_pow_in_c", prog("return float(7 ** 10 ** 9 > 0)"), EITHER),
    ("builtin_pow_in_c", prog("return float(pow(3, 10 ** 9) > 0)"), EITHER),
    ("bigint_multiply_in_c", prog("x = 7 ** 10 ** 7\nreturn float(x * x * x > 0)"), EITHER),
    (
        "huge_repeat_str_method",
        prog("s = 'ab' * (10 ** 8)\nwhile True:\n    s.replace('a', 'b')"),
        "budget",
    ),
    (
        "iter_sentinel_any",
        prog("return float(any(x > 1 for x in iter(int, 1)) or any(iter(int, 1)))"),
        "budget",
    ),
    ("iter_sentinel_sum", prog("return float(sum(iter(int, 1)))"), "budget"),
    ("iter_sentinel_max", prog("return float(max(map(abs, iter(int, 1))))"), "budget"),
    ("iter_sentinel_sorted", prog("return float(len(sorted(iter(int, 1))))"), "budget"),
]


@pytest.fixture(scope="module")
def one_pool():
    with SandboxPool(ONE, workers=1, limits=DEFAULTS) as pool:
        baseline = pool.evaluate(BENIGN)
        assert baseline.ok
        yield pool, baseline.scores


@pytest.mark.parametrize(("name", "source", "says"), NON_STOPPING, ids=[c[0] for c in NON_STOPPING])
def test_a_program_that_will_not_stop_is_decided_on_one_trajectory(one_pool, name, source, says):
    pool, baseline = one_pool
    worker = pool.worker_pids
    started = time.monotonic()
    result = pool.evaluate(source)
    elapsed = time.monotonic() - started

    assert result.status == "timeout", (name, result.status, result.message)
    assert says in result.message, result.message
    assert "CPU limit" not in result.message and "wall-clock limit" not in result.message
    assert result.errors and result.errors[0]["trajectory_id"] == ONE[0].id
    assert elapsed < DECIDED_WELL_BEFORE_CAPS_S, (name, elapsed)
    # Same worker (not replaced), and the next candidate scores exactly as before.
    assert pool.worker_pids == worker
    after = pool.evaluate(BENIGN)
    assert after.ok and np.array_equal(after.scores, baseline)


def test_a_killed_candidate_leaves_the_next_candidate_on_the_same_worker_unaffected():
    hostile = NON_STOPPING[0][1]
    with SandboxPool(TRAJS, workers=1, limits=DEFAULTS) as pool:
        baseline = pool.evaluate(BENIGN).scores
        results = [pool.evaluate(s) for s in (hostile, BENIGN, hostile, BENIGN)]
        assert [r.status for r in results] == ["timeout", "ok", "timeout", "ok"]
        assert results[0].errors[0]["trajectory_id"] == TRAJS[0].id
        assert np.array_equal(results[1].scores, baseline)
        assert np.array_equal(results[3].scores, baseline)
        assert pool.replacements == 0


def test_a_module_body_that_will_not_stop_is_killed_after_the_setup_budget():
    source = prog(
        "return 1.0",
        "x = 0\ntry:\n    while True:\n        x += 1\nfinally:\n    while True:\n        pass\n",
    )
    limits = SandboxLimits(setup_s=0.5)
    with SandboxPool(ONE, workers=1, limits=limits) as pool:
        started = time.monotonic()
        result = pool.evaluate(source)
        assert result.status == "timeout" and "module body" in result.message
        assert time.monotonic() - started < DECIDED_WELL_BEFORE_CAPS_S
        assert pool.evaluate(BENIGN).ok


def test_candidate_caps_scale_with_the_work():
    limits = SandboxLimits(wall_s=60, cpu_s=30, per_traj_ms=500, setup_s=1.0, kill_grace_s=0.2)
    wall, cpu = limits.caps_for(1)
    assert wall == pytest.approx(1.0 + 0.2 + 1.25 * 0.5 + 0.2) and cpu == 3
    assert limits.caps_for(10_000) == (60, 30)  # capped by today's limits
    assert SandboxLimits(per_traj_ms=None).caps_for(1) == (60.0, 30)


def test_builtins_bound_what_c_loops_can_drain():
    with SandboxPool(ONE, workers=1) as pool:
        big = pool.evaluate(prog("return float(sum(range(10 ** 8)))"))
        assert big.status == "error" and "range() of more than" in big.message
        fine = pool.evaluate(prog("return float(sum(range(1000)) + len(list(iter([1, 2]))))"))
        assert fine.ok and fine.scores[0] == 499502.0
        finite = pool.evaluate(
            prog("n = []\nreturn float(len(list(iter(lambda: n.append(1) or len(n), 5))))")
        )
        assert finite.ok and finite.scores[0] == 4.0


# --------------------------------------------------------------------------- view ids

_HASHES = ("md5", "sha1", "sha224", "sha256", "sha384", "sha512", "blake2b", "blake2s", "sha3_256")


def _hidden_values(traj) -> set[str]:
    """Everything about a trajectory a program must not see, as strings."""
    out = {traj.id, traj.generator, LABEL_CANARY}
    for verdict in (*traj.panel, *traj.oracle):
        out.update({verdict.judge, verdict.reason})
    return {v for v in out if v}


def _digests(value: str) -> set[str]:
    data = value.encode()
    return {hashlib.new(name, data).hexdigest() for name in _HASHES}


def _leaves(value) -> list[str]:
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (str(k), *_leaves(v))]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _leaves(v)]
    return [str(value)]


def test_no_view_field_equals_or_hashes_a_hidden_field(tmp_path):
    path = build_views_file(TRAJS, tmp_path / "views.pkl")
    views = load_views(path, [t.id for t in TRAJS], new_view_id_key())
    for traj, view in zip(TRAJS, views, strict=True):
        hidden = _hidden_values(traj)
        digests = set().union(*(_digests(h) for h in hidden))
        for leaf in _leaves(thaw(view)):
            assert leaf not in hidden, leaf
            if len(leaf) >= 8 and all(c in "0123456789abcdef" for c in leaf.lower()):
                assert not any(d.startswith(leaf.lower()) for d in digests), leaf


def test_view_ids_cannot_be_recomputed_without_the_pools_secret():
    source = prog("return float(int(traj.id[:12], 16))")
    with SandboxPool(TRAJS, workers=1) as first, SandboxPool(TRAJS, workers=1) as second:
        a, b = first.evaluate(source), second.evaluate(source)
        assert a.ok and b.ok
        # Each pool has its own secret: the same trajectory gets unrelated ids.
        assert not np.intersect1d(a.scores, b.scores).size
        for pool, result in ((first, a), (second, b)):
            for traj, seen in zip(TRAJS, result.scores, strict=True):
                # With the secret, the host recomputes it ...
                assert seen == int(view_id(traj.id, pool.id_key)[:12], 16)
                # ... without it, no plain hash of the real id gives it.
                assert all(int(d[:12], 16) != seen for d in _digests(traj.id))
    # Outside a pool (e.g. `sandbox view`), the id is salted with a per-process secret.
    assert build_view(TRAJS[0]).id not in {d[:16] for d in _digests(TRAJS[0].id)}
