"""The language layer and the scoring loop, run in-process on real views.

Process isolation is tested in test_sandbox_pool / test_security_attacks; here the
guards and the runner's bookkeeping are checked directly.
"""

from __future__ import annotations

import math

import pytest
from sandbox_support import BENIGN, make_trajectories

from monsearch.oracle.session import OracleConfig, OracleSession, replay_scores_from
from monsearch.sandbox.helpers import HELPERS
from monsearch.sandbox.limits import SandboxLimits
from monsearch.sandbox.restricted import build_globals, compile_program, load_program
from monsearch.sandbox.runner import check_score, describe_exception, json_safe, run_program
from monsearch.views.build import build_view

TRAJS = make_trajectories(12)
VIEWS = tuple(build_view(t) for t in TRAJS)
IDS = tuple(t.id for t in TRAJS)


def call(body: str, view=None):
    """Compile ``def score(traj):`` + body and call it on one real view."""
    src = "def score(traj):\n" + "".join(f"    {line}\n" for line in body.splitlines())
    report = compile_program(src)
    assert report.ok, report.message
    return load_program(report.code, build_globals(helpers=HELPERS))(view or VIEWS[0])


@pytest.mark.parametrize(
    "body",
    [
        "traj.steps = ()",
        "traj['task'] = 'x'",
        "del traj['task']",
        "traj.requests[0].headers['x'] = 'y'",
        "traj.requests[0].headers.update({'x': 'y'})",
        "traj.hosts.clear()",
        "traj.steps[0].pop('tool')",
        "traj.requests[0].headers.setdefault('x', 'y')",
        "x = traj.hosts\nx |= {'evil': 1}",
        "traj.steps[0]['tool'] += 'x'",
    ],
)
def test_views_cannot_be_mutated(body):
    before = repr(VIEWS[0])
    with pytest.raises(TypeError):
        call(body)
    assert repr(VIEWS[0]) == before


def test_copies_are_mutable_and_detached():
    before = repr(VIEWS[0])
    assert (
        call("d = traj.to_dict()\nd['task'] = 'x'\nd['steps'].clear()\nreturn len(d['steps'])") == 0
    )
    assert repr(VIEWS[0]) == before


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ("return '{0}'.format(traj)", AttributeError),
        ("return '{x}'.format_map({'x': traj})", AttributeError),
        ("return str.format('{0}', 1)", AttributeError),
        ("return int.mro()", AttributeError),
        ("return ValueError.mro()", AttributeError),
        ("return score.func_globals", AttributeError),
        ("g = (s for s in traj.steps)\nreturn g.send", AttributeError),
        ("return traj.keys().mapping", AttributeError),
        ("return re_search.cache_info", AttributeError),
        ("return getattr(traj, '__class__')", AttributeError),
        ("return getattr(traj, '_' + '_class__')", AttributeError),
        ("g = (s for s in traj.steps)\nreturn getattr(g, 'gi_' + 'frame')", AttributeError),
        ("return getattr(1, 'real', 0, 1)", TypeError),
        ("return math.pow.abc", AttributeError),
        ("return type(traj)", NameError),
        ("return vars(traj)", NameError),
        ("return globals()", NameError),
        ("return open('/etc/hostname').read()", NameError),
        ("return compile('1', 'x', 'eval')", NameError),
        ("f = exit\nreturn f", NameError),
        ("return hash('x')", NameError),
        ("return id(traj)", NameError),
        ("raise SystemExit(0)", NameError),
        ("raise KeyboardInterrupt()", NameError),
        ("print('x', file=traj)", TypeError),
        ("return len[0]", TypeError),
        ("x = (i for i in range(3))\nreturn x[0]", TypeError),
        ("f = lambda: 1\nf.attr = 2", TypeError),
    ],
)
def test_guards_refuse(body, error):
    with pytest.raises(error):
        call(body)


def test_allowed_everyday_code():
    assert call("return len([s for s in traj.steps if s.tool == 'think'])") == 1
    assert call("return sum(1 for r in traj.requests if r.method == 'GET')") > 0
    assert call("return getattr(traj, 'nope', 5)") == 5
    assert call("return hasattr(traj, 'steps') and not hasattr(traj, '_x')") is True
    assert call("a, (b, c) = 1, (2, 3)\nreturn a + b + c") == 6
    assert call("return max((len(s.command), s.index) for s in traj.steps)[1]") >= 0
    assert call("return f'{traj.task!r}:{len(traj.steps):>3}'").startswith("'storefront-upload':")
    assert call("return '%s-%d' % (traj.task, 1)") == "storefront-upload-1"
    assert call("return ','.join(sorted(traj.hosts.keys()))") == "app"
    assert call("try:\n    1 / 0\nexcept Exception as e:\n    return e.args") == (
        "division by zero",
    )
    assert call("try:\n    raise ValueError(traj)\nexcept Exception as e:\n    return e.args") == (
        "<FrozenDict>",
    )
    assert call("return math.sqrt(16) + clamp(3.0)") == 5.0


def test_run_program_scores_and_records_errors_with_lines():
    src = "def score(t):\n    if t.n_steps > 5:\n        return {}['missing']\n    return float(t.n_steps)\n"
    # Every failure recorded: no error-rate stop for this check.
    header, scores = run_program(VIEWS, IDS, src, limits=SandboxLimits(max_error_rate=1.0))
    failed = [i for i, v in enumerate(VIEWS) if v.n_steps > 5]
    assert header["status"] == "done" and header["n_errors"] == len(failed) > 0
    assert all(math.isnan(scores[i]) for i in failed)
    assert [scores[i] for i in range(len(VIEWS)) if i not in failed] == [
        float(v.n_steps) for i, v in enumerate(VIEWS) if i not in failed
    ]
    first = header["errors"][0]
    assert first == {
        "kind": "exception",
        "message": "KeyError: missing",
        "trajectory_id": IDS[failed[0]],
        "line": 3,
    }
    assert len(header["errors"]) == min(len(failed), SandboxLimits().max_errors_kept)


@pytest.mark.parametrize(
    ("ret", "fragment"),
    [
        ("float('nan')", "non-finite"),
        ("float('inf')", "non-finite"),
        ("-1e308 * 10", "non-finite"),
        ("'1.0'", "returned str"),
        ("None", "returned NoneType"),
        ("[1.0]", "returned list"),
        ("10 ** 400", "too large"),
        ("score", "returned function"),
    ],
)
def test_non_numeric_and_non_finite_scores_are_invalid(ret, fragment):
    header, _ = run_program(VIEWS, IDS, f"def score(t):\n    return {ret}\n")
    assert header["status"] == "invalid" and fragment in header["message"]
    assert IDS[0] in header["message"]


def test_numbers_that_are_fine():
    assert check_score(True) == 1.0 and check_score(3) == 3.0 and check_score(-0.5) == -0.5


def test_compile_module_and_missing_score_statuses():
    header, _ = run_program(VIEWS, IDS, "def score(t)\n    return 1\n")
    assert header["status"] == "error" and header["errors"][0]["kind"] == "compile"
    assert header["errors"][0]["line"] == 1
    header, _ = run_program(VIEWS, IDS, "x = 1\n\ny = x / 0\ndef score(t):\n    return 1\n")
    assert header["status"] == "error" and "line 3" in header["message"]
    header, _ = run_program(VIEWS, IDS, "def scorer(t):\n    return 1\n")
    assert header["status"] == "invalid" and "score(traj)" in header["message"]


def test_per_trajectory_budget_interrupts_and_bare_except_cannot_swallow_it():
    src = (
        "def score(t):\n"
        "    if t.n_steps % 2 == 0:\n"
        "        return 1.0\n"
        "    n = 0\n"
        "    while True:\n"
        "        try:\n"
        "            n += 1\n"
        "        except:\n"
        "            pass\n"
    )
    # The even views return at once; 200 ms of wall time is room for that on a loaded
    # machine (20 ms was not: one preemption could take it).
    limits = SandboxLimits(per_traj_ms=200, max_error_rate=1.0)
    header, scores = run_program(VIEWS, IDS, src, limits=limits)
    odd = [i for i, v in enumerate(VIEWS) if v.n_steps % 2]
    assert header["status"] == "done"
    assert header["n_errors"] == header["n_timeouts"] == len(odd) > 0
    assert header["errors"][0]["kind"] == "timeout"
    assert all(math.isnan(scores[i]) for i in odd)
    assert all(scores[i] == 1.0 for i in range(len(VIEWS)) if i not in odd)


def test_scoring_stops_as_soon_as_the_error_limit_is_passed():
    # Fails on every trajectory after the first: with a 10 % limit over N views the
    # outcome is decided at the (floor(0.1 N) + 1)-th failure, and nothing after it runs.
    src = (
        "SEEN = []\n"
        "def score(t):\n"
        "    print(t.id)\n"
        "    SEEN.append(1)\n"
        "    if len(SEEN) > 1:\n"
        "        raise ValueError('no')\n"
        "    return 1.0\n"
    )
    limits = SandboxLimits(max_error_rate=0.1)
    header, scores = run_program(VIEWS, IDS, src, limits=limits)
    allowed = int(0.1 * len(VIEWS))
    assert header["status"] == "error" and "stopped early" in header["message"]
    assert header["n_errors"] == allowed + 1
    # Only the trajectories up to the deciding failure were scored (printed).
    assert header["output"].count("\n") == allowed + 2 < len(VIEWS)
    assert all(math.isnan(v) for v in scores[1:])


def test_early_stop_on_overruns_reports_timeout():
    src = "def score(t):\n    while True:\n        pass\n"
    limits = SandboxLimits(per_traj_ms=20, max_error_rate=0.0)
    header, _ = run_program(VIEWS, IDS, src, limits=limits)
    assert header["status"] == "timeout" and header["n_timeouts"] == header["n_errors"] == 1
    assert "stopped early" in header["message"] and "per-trajectory budget" in header["message"]


def test_print_is_collected_bounded_and_readable_as_printed():
    src = "def score(t):\n    print('task', t.task)\n    print('x' * 50000)\n    return float(len(printed))\n"
    header, scores = run_program(VIEWS, IDS, src, limits=SandboxLimits(max_print_bytes=1000))
    assert header["status"] == "done"
    assert header["output"].startswith("task storefront-upload\n") and len(header["output"]) == 1000
    assert header["output_dropped"] > 0
    assert scores[0] == 1000.0  # each function's own collector is bounded as well


def test_memory_error_is_a_candidate_status():
    # The name is not a builtin, so a program cannot fake the status: NameError each time.
    header, _ = run_program(
        VIEWS, IDS, "def score(t):\n    raise MemoryError\n", limits=SandboxLimits(max_error_rate=1)
    )
    assert header["status"] == "done" and header["n_errors"] == len(IDS)
    assert header["errors"][0]["message"].startswith("NameError")
    header, _ = run_program(VIEWS, IDS, "def score(t):\n    return len(b'x' * (1 << 62))\n")
    assert header["status"] == "memory" and IDS[0] in header["message"]


def test_oracle_calls_are_bound_to_the_scored_trajectory_and_counted():
    replay = replay_scores_from(TRAJS)
    config = OracleConfig(backend="replay", per_traj_cap=2, replay_scores=replay)
    session = OracleSession(config)
    src = (
        "def score(t):\n"
        "    a = oracle(t)\n"
        "    b = oracle('some-other-trajectory')\n"
        "    c = oracle(t)\n"
        "    return a + b + (1.0 if c is None else -100.0)\n"
    )
    header, scores = run_program(VIEWS, IDS, src, oracle_session=session)
    assert header["status"] == "done"
    assert list(scores) == [2 * replay[i] + 1.0 for i in IDS]
    assert header["oracle"]["counts"] == dict.fromkeys(IDS, 2)
    assert header["oracle"]["refused"] == dict.fromkeys(IDS, 1)
    assert header["oracle"]["fresh"] == len(IDS)


def test_without_an_oracle_the_function_answers_none():
    header, scores = run_program(
        VIEWS, IDS, "def score(t):\n    return 1.0 if oracle(t) is None else 0.0\n"
    )
    assert header["status"] == "done" and set(scores) == {1.0} and header["oracle"] == {}


def test_benign_program_is_deterministic_in_process():
    a = run_program(VIEWS, IDS, BENIGN)
    b = run_program(VIEWS, IDS, BENIGN)
    assert a[0]["status"] == "done" and list(a[1]) == list(b[1])


def test_describe_exception_and_json_safe_bound_host_data():
    assert describe_exception(ValueError("a" * 10_000)) == "ValueError: " + "a" * 488
    assert describe_exception(ValueError(10**5000)) == "ValueError: <large int>"
    assert describe_exception(KeyError(object())) == "KeyError: <object>"
    assert json_safe({"a": float("nan"), 1: (1, 2), "b": {"c": object()}})["a"] is None
