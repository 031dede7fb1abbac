"""Score every view of a split with one program: the loop that runs inside the child.

:func:`run_program` compiles the program, runs its module body, then calls
``score(view)`` once per trajectory, each call under a per-trajectory wall budget
(an ``ITIMER_REAL`` interrupt raising :class:`TrajectoryTimeout`, a ``BaseException``
the program cannot catch: a bare ``except:`` is compiled as ``except Exception:``).

It returns a JSON-safe header and the scores as ``array('d')``: a failed trajectory
is NaN there (valid scores are always finite), so the parent can tell failures
apart without a second list. Statuses it reports: ``done`` (every trajectory ran),
``error`` (compile or module-level error, or more trajectories raised than
``max_error_rate`` allows), ``timeout`` (more per-trajectory overruns than that),
``invalid`` (no ``score`` function, or a non-numeric / non-finite score), ``memory``
(MemoryError). It stops as soon as the outcome is decided: once the failed share can
no longer stay within ``max_error_rate``, scoring the rest would only spend CPU (and
let the status depend on how fast the machine is).

Progress for the watchdog outside the child: when given a ``progress`` array
(``[phase, index, started_ns, judge_ns]`` of int64 in memory shared with the
worker), the runner writes the phase (:data:`PHASE_SETUP`, :data:`PHASE_SCORING`),
the index of the trajectory being scored and when its call started
(``time.monotonic_ns``), so the worker can SIGKILL a call that overran and did not
stop by itself; and the time spent waiting on the oracle's judge, which the worker
adds to the candidate's wall allowance.
"""

from __future__ import annotations

import math
import signal
import time
from array import array
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from monsearch.sandbox.helpers import HELPERS
from monsearch.sandbox.limits import SandboxLimits
from monsearch.sandbox.restricted import (
    FILENAME,
    PrintSink,
    ProgramError,
    build_globals,
    compile_program,
    load_program,
)

MAX_MESSAGE_CHARS = 500
MAX_OUTPUT_CHARS = 4096
_NAN = float("nan")

#: Slot of the shared progress array that accumulates judge waiting time (ns).
JUDGE_SLOT = 3
#: Phases written to the shared progress array (slot 0).
PHASE_IDLE = 0
PHASE_SETUP = 1
PHASE_SCORING = 2


class TrajectoryTimeout(BaseException):
    """Raised into a ``score()`` call that overran its per-trajectory budget."""


def describe_exception(exc: BaseException) -> str:
    """``Type: message`` bounded in size, without calling program-defined code."""
    parts = []
    for arg in exc.args[:3]:
        t = type(arg)
        if t is str:
            parts.append(arg[:MAX_MESSAGE_CHARS])
        elif t in (float, bool, type(None)):
            parts.append(repr(arg))
        elif t is int:
            parts.append(repr(arg) if arg.bit_length() < 200 else "<large int>")
        else:
            parts.append(f"<{t.__name__}>")
    text = f"{type(exc).__name__}: {', '.join(parts)}" if parts else type(exc).__name__
    return text[:MAX_MESSAGE_CHARS]


def program_line(exc: BaseException) -> int | None:
    """The innermost line of the monitor program in the exception's traceback."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def check_score(value: Any) -> float | str:
    """The score as a finite float, or a message saying why it is not one."""
    t = type(value)
    if t is float:
        result = value
    elif t is int or t is bool:
        try:
            result = float(value)
        except OverflowError:
            return "score() returned an integer too large for a float"
    else:
        return f"score() returned {t.__name__}, not a number"
    if not math.isfinite(result):
        return f"score() returned a non-finite number ({result!r})"
    return result


class _Watchdog:
    """The per-trajectory interrupt.

    One periodic ``ITIMER_REAL`` tick (a quarter of the budget) instead of arming a
    timer per trajectory keeps the per-call cost to two attribute stores; the tick
    raises :class:`TrajectoryTimeout` into a ``score()`` call that has run longer
    than the budget, so a call is interrupted within 1.25x its budget.
    """

    __slots__ = ("seconds", "armed", "started", "previous")

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.armed = False
        self.started = 0.0
        self.previous: Any = None

    def _tick(self, signum: int, frame: Any) -> None:
        if (
            self.armed
            and self.seconds is not None
            and time.perf_counter() - self.started > self.seconds
        ):
            self.armed = False
            raise TrajectoryTimeout()

    def install(self) -> None:
        if self.seconds is not None:
            self.previous = signal.signal(signal.SIGALRM, self._tick)
            tick = max(self.seconds / 4.0, 0.001)
            signal.setitimer(signal.ITIMER_REAL, tick, tick)

    def uninstall(self) -> None:
        self.armed = False
        if self.seconds is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous or signal.SIG_DFL)


class OracleHook:
    """What the program calls as ``oracle(traj, variant=None)``.

    The session (H6's ``OracleSession``) is bound to the trajectory being scored
    before each call, so the argument can never select another trajectory's answer.
    """

    __slots__ = ("session", "bound", "progress")

    def __init__(self, session: Any | None, progress: Any | None = None) -> None:
        self.session = session
        self.bound: Callable[..., Any] | None = None
        #: Shared progress array: slot 3 accumulates the time spent waiting on the judge,
        #: which the worker adds to the candidate's wall allowance (a slow judge is not
        #: the program's fault).
        self.progress = progress

    def bind(self, traj_id: str) -> None:
        self.bound = self.session.bind(traj_id) if self.session is not None else None

    def function(self) -> Callable[..., float | None]:
        hook = self

        def oracle(traj: Any = None, variant: str | None = None) -> float | None:
            bound = hook.bound
            if bound is None:
                return None
            started = time.monotonic_ns()
            try:
                value = bound(traj) if variant is None else bound(traj, variant)
            finally:
                if hook.progress is not None:
                    hook.progress[JUDGE_SLOT] += time.monotonic_ns() - started
            if type(value) is float and math.isfinite(value):
                return value
            if type(value) is int:
                return float(value)
            return None

        return oracle

    def report(self) -> dict[str, Any]:
        """The session's accounting (``counts`` per trajectory, ``refused``, ``fresh``, ``cost``...)."""
        session = self.session
        if session is None:
            return {}
        if hasattr(session, "summary"):
            summary = session.summary()
        else:
            summary = {
                "counts": session.counts(),
                "refused": session.refused(),
                "fresh": session.fresh(),
                "cost": session.cost(),
            }
        return json_safe(summary)


def json_safe(value: Any, depth: int = 0) -> Any:
    """Host-made data reduced to JSON types (non-finite floats become None)."""
    if depth > 8:
        return None
    t = type(value)
    if t in (str, int, bool) or value is None:
        return value
    if t is float:
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v, depth + 1) for v in value]
    return str(value)


def run_program(
    views: Sequence[Any],
    ids: Sequence[str],
    source: str,
    *,
    params: Mapping[str, float] | None = None,
    limits: SandboxLimits | None = None,
    oracle_session: Any | None = None,
    progress: Any | None = None,
) -> tuple[dict[str, Any], array]:
    """Compile ``source`` and score every view; see the module docstring."""
    limits = limits or SandboxLimits()
    if progress is None:
        progress = [PHASE_IDLE, 0, 0, 0]
    now_ns = time.monotonic_ns
    progress[2] = now_ns()
    progress[0] = PHASE_SETUP
    n = len(views)
    scores = array("d", [_NAN]) * n
    header: dict[str, Any] = {
        "status": "done",
        "message": "",
        "n": n,
        "errors": [],
        "n_timeouts": 0,
    }
    sink = PrintSink(limits.max_print_bytes)

    report = compile_program(source, params, max_source_bytes=limits.max_source_bytes)
    if not report.ok or report.code is None:
        header.update(
            status="error",
            message=f"compile error: {report.message}"[:2000],
            errors=[{"kind": "compile", **e.to_dict()} for e in report.errors[:20]],
        )
        return header, scores

    hook = OracleHook(oracle_session, progress)
    glb = build_globals(helpers=HELPERS, print_sink=sink, extra={"oracle": hook.function()})
    try:
        score = load_program(report.code, glb)
    except ProgramError as exc:
        header.update(status="invalid", message=str(exc))
        return header, scores
    except MemoryError:
        header.update(status="memory", message="MemoryError while running the module body")
        return header, scores
    except Exception as exc:
        message = describe_exception(exc)
        line = program_line(exc)
        header.update(
            status="error",
            message=f"module body raised {message}" + (f" (line {line})" if line else ""),
            errors=[{"kind": "module", "message": message, "trajectory_id": None, "line": line}],
        )
        return header, scores

    watchdog = _Watchdog(None if limits.per_traj_ms is None else limits.per_traj_ms / 1000.0)
    seconds = watchdog.seconds if watchdog.seconds is not None else math.inf
    timeout_message = f"score() exceeded the per-trajectory budget of {limits.per_traj_ms} ms"
    errors: list[dict[str, Any]] = header["errors"]
    keep = limits.max_errors_kept
    # More failures than this and the candidate fails whatever the rest would do.
    max_failures = math.floor(limits.max_error_rate * n + 1e-9)
    n_errors = n_timeouts = 0
    bind = hook.bind if oracle_session is not None else None
    clock = time.perf_counter
    watchdog.install()
    # Start before phase: the watcher must never time the set-up against a call's budget.
    progress[1] = 0
    progress[2] = now_ns()
    progress[0] = PHASE_SCORING
    try:
        for i in range(n):
            if bind is not None:
                bind(ids[i])
            failure: tuple[str, str, int | None] | None = None
            progress[2] = now_ns()
            progress[1] = i
            try:
                watchdog.started = started = clock()
                watchdog.armed = True
                value = score(views[i])
                watchdog.armed = False
            except TrajectoryTimeout:
                failure = ("timeout", timeout_message, None)
            except MemoryError:
                watchdog.armed = False
                header.update(
                    status="memory", message=f"MemoryError while scoring trajectory {ids[i]}"
                )
                break
            except Exception as exc:
                watchdog.armed = False
                failure = ("exception", describe_exception(exc), program_line(exc))
            else:
                if clock() - started > seconds:
                    # The tick came during a long C call and found the call finished.
                    failure = ("timeout", timeout_message, None)
                elif type(value) is float and value - value == 0.0:  # finite float: fast path
                    scores[i] = value
                else:
                    checked = check_score(value)
                    if type(checked) is str:
                        header.update(status="invalid", message=f"{checked} (trajectory {ids[i]})")
                        break
                    scores[i] = checked
            if failure is not None:
                n_errors += 1
                if failure[0] == "timeout":
                    n_timeouts += 1
                if len(errors) < keep:
                    errors.append(
                        {
                            "kind": failure[0],
                            "message": failure[1],
                            "trajectory_id": ids[i],
                            "line": failure[2],
                        }
                    )
                if n_errors > max_failures:
                    header.update(
                        status="timeout" if n_timeouts * 2 > n_errors else "error",
                        message=(
                            f"score() failed on {n_errors} of the first {i + 1} of {n} "
                            f"trajectories, past the limit of {limits.max_error_rate:.1%} "
                            f"({max_failures}); stopped early. First: {errors[0]['message']}"
                            if errors
                            else f"score() failed on {n_errors} trajectories; stopped early"
                        ),
                    )
                    break
    finally:
        progress[0] = PHASE_IDLE
        watchdog.uninstall()

    header["n_errors"] = n_errors
    header["n_timeouts"] = n_timeouts
    header["oracle"] = hook.report()
    text = sink.text()
    header["output"] = text[:MAX_OUTPUT_CHARS]
    header["output_dropped"] = sink.dropped + max(0, len(text) - MAX_OUTPUT_CHARS)
    return header, scores
