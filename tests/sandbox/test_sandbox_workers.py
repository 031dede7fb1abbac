"""Worker internals: the result wire format, child outcome classification, view compaction."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from array import array

import pytest
from sandbox_support import make_trajectories

from monsearch.sandbox.limits import SandboxLimits
from monsearch.sandbox.workers import (
    EXIT_MEMORY,
    classify_child,
    compact_views,
    pack_result,
    unpack_result,
)
from monsearch.views.build import build_view
from monsearch.views.frozen import FrozenDict

LIMITS = SandboxLimits(wall_s=2.0, cpu_s=1.0, memory_mb=128)


def test_result_round_trip_and_validation():
    scores = array("d", [1.0, float("nan"), -2.5])
    data = pack_result({"status": "done", "n_errors": 1}, scores.tobytes())
    header, raw = unpack_result(data, 3)
    back = array("d", raw)
    assert header == {"status": "done", "n_errors": 1}
    assert back[0] == 1.0 and back[1] != back[1] and back[2] == -2.5
    with pytest.raises(ValueError):
        unpack_result(data, 4)  # wrong number of scores
    with pytest.raises(ValueError):
        unpack_result(b"XXXX" + data[4:], 3)
    with pytest.raises(ValueError):
        unpack_result(data[:10], 3)
    with pytest.raises(ValueError):
        pack_result({"x": float("nan")}, b"")  # headers are strict JSON


def _real_status(code: str) -> tuple[int, float]:
    """Run a real process and return its raw wait status and CPU seconds."""
    proc = subprocess.Popen([sys.executable, "-c", code])
    _pid, status, rusage = os.wait4(proc.pid, 0)
    proc.returncode = 0  # reaped here, keep Popen from waiting again
    return status, rusage.ru_utime + rusage.ru_stime


@pytest.mark.parametrize(
    ("code", "status", "fragment"),
    [
        ("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", "crash", "segmentation fault"),
        ("import os, signal; os.kill(os.getpid(), signal.SIGXCPU)", "timeout", "CPU limit"),
        # CPython ignores SIGXFSZ by default; the sandbox child restores the default.
        (
            "import os, signal; signal.signal(signal.SIGXFSZ, signal.SIG_DFL); os.kill(os.getpid(), signal.SIGXFSZ)",
            "crash",
            "write a file",
        ),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "crash", "SIGKILL"),
        (f"import os; os._exit({EXIT_MEMORY})", "memory", "memory limit"),
        ("import os; os._exit(9)", "crash", "code 9"),
        ("import os; os._exit(0)", "crash", "no valid result"),
    ],
)
def test_classify_real_exits(code, status, fragment):
    wait_status, cpu = _real_status(code)
    header, scores = classify_child(
        wait_status, b"", n=3, limits=LIMITS, timed_out=False, too_big=False, cpu_s=cpu
    )
    assert header["status"] == status and fragment in header["message"] and scores == b""


def test_classify_timeouts_and_oversize():
    wait_status, cpu = _real_status("pass")
    header, _ = classify_child(
        wait_status, b"", n=1, limits=LIMITS, timed_out=True, too_big=False, cpu_s=cpu
    )
    assert header["status"] == "timeout" and "wall-clock" in header["message"]
    header, _ = classify_child(
        wait_status, b"", n=1, limits=LIMITS, timed_out=False, too_big=True, cpu_s=cpu
    )
    assert header["status"] == "invalid"
    good = pack_result({"status": "done"}, array("d", [0.5]).tobytes())
    header, raw = classify_child(
        wait_status, good, n=1, limits=LIMITS, timed_out=False, too_big=False, cpu_s=cpu
    )
    assert header["status"] == "done" and array("d", raw)[0] == 0.5


def test_compact_views_are_equal_frozen_and_shared_structure_kept():
    views = [build_view(t) for t in make_trajectories(8)]
    compact = compact_views(views)
    assert list(compact) == views
    assert repr(list(compact)) == repr(views)
    for original, copy in zip(views, compact, strict=True):
        assert copy is not original and type(copy) is FrozenDict
        assert type(copy.steps) is tuple and all(type(s) is FrozenDict for s in copy.steps)
        with pytest.raises(TypeError):
            copy["task"] = "x"  # type: ignore[index]
        with pytest.raises(TypeError):
            copy.requests[0].headers.update({"a": "b"})
        # A request object shared by the step and the trajectory stays one object.
        for req in copy.requests:
            step_reqs = copy.steps[req.step].requests
            assert any(r is req for r in step_reqs)


def test_signal_names_cover_what_limits_send():
    # The limits deliver these; the classifier must name them rather than guess.
    for sig in (signal.SIGXCPU, signal.SIGXFSZ, signal.SIGSEGV):
        code = f"import os, signal; signal.signal({int(sig)}, signal.SIG_DFL); os.kill(os.getpid(), {int(sig)})"
        wait_status, cpu = _real_status(code)
        header, _ = classify_child(
            wait_status, b"", n=1, limits=LIMITS, timed_out=False, too_big=False, cpu_s=cpu
        )
        assert header["message"]
