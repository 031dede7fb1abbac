"""The monitor's worker process: where the frozen program runs, under a time budget and a
memory cap, so that a program that loops or allocates without end stops there and not in
the host.

Started by :mod:`._isolation` (``python -P -c <boot> <init>``) with a scrubbed
environment and ``PYTHONHASHSEED=0`` (as monsearch's sandbox workers: set and dict
order are the ones the run's scores were measured with). It compiles the program once,
then serves requests one at a time: each is a pickle from the host (the trajectory
as the host got it, a dict or a parsed trajectory), each answer is JSON.

Limits, as in the sandbox:

* time: every request runs under a one-shot ``ITIMER_REAL`` alarm of the request's
  budget, which raises :class:`.core.BudgetExceeded` (a ``BaseException``: the program
  cannot catch it, a bare ``except:`` is compiled as ``except Exception:``). Waiting
  for the host's judge does not count. A program that does not stop even so (a loop in
  a ``finally``, a long computation inside one C call) is killed by the host at the
  budget plus a grace; ``RLIMIT_CPU`` backs that up should the host be gone;
* memory: ``RLIMIT_AS`` (Linux): the process may grow by the cap over its size after
  start-up; a ``MemoryError`` ends the request with status ``memory``.

After a ``timeout``, a ``memory`` or an internal error the worker answers and exits
(the host starts a fresh one): nothing a stopped program left half done outlives it.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import math
import os
import pickle
import resource
import signal
import time
from typing import Any

from . import core
from ._wire import Reader, write_frame

#: Exit code of a worker that ran out of memory outside any request it could answer.
EXIT_MEMORY = 71
_MIB = 1024 * 1024
#: Requests between two looks at how far the parse caches have grown.
_CACHE_CHECK_EVERY = 64


class Budget:
    """The request's time budget: an alarm that interrupts the program, paused while
    the host's judge answers."""

    __slots__ = ("armed", "fired", "left")

    def __init__(self) -> None:
        self.armed = False
        self.fired = False
        self.left = 0.0

    def alarm(self, signum: int, frame: Any) -> None:
        self.fired = True
        if self.armed:
            self.armed = False  # raised once: a program that goes on is the host's to kill
            raise core.BudgetExceeded()

    def start(self, seconds: float) -> None:
        self.fired = False
        self.armed = True
        signal.setitimer(signal.ITIMER_REAL, seconds)

    def stop(self) -> None:
        self.armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)

    def pause(self) -> None:
        self.armed = False
        self.left = signal.setitimer(signal.ITIMER_REAL, 0)[0]

    def resume(self) -> None:
        # An alarm that came while paused (or a budget already spent) ends the request.
        if self.fired or self.left <= 0:
            raise core.BudgetExceeded()
        self.armed = True
        signal.setitimer(signal.ITIMER_REAL, self.left)


class RemoteJudge:
    """``(traj, variant) -> answer``: the host's judge, asked over the pipe. The host
    decides what to answer (its own judge, capped); the budget waits meanwhile."""

    __slots__ = ("reader", "out", "budget")

    def __init__(self, reader: Reader, out: int, budget: Budget) -> None:
        self.reader = reader
        self.out = out
        self.budget = budget

    def __call__(self, traj: Any, variant: str | None) -> Any:
        self.budget.pause()
        write_frame(self.out, json.dumps({"oracle": variant}).encode("utf-8"))
        value, error = pickle.loads(self.reader.frame())  # noqa: S301 - from the host
        self.budget.resume()
        if error is not None:
            raise RuntimeError(f"the host's judge failed: {error}")
        return value


def address_space() -> int | None:
    """Bytes of address space this process has mapped (None where /proc is missing)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            pages = int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


class Memory:
    """The memory cap: ``RLIMIT_AS`` at the size after start-up plus the cap.

    The parse caches (bounded) grow inside the same allowance: when they hold more
    than half of it they are dropped, so a program keeps most of its cap.
    """

    __slots__ = ("baseline", "cap_mb", "requests")

    def __init__(self) -> None:
        self.baseline = address_space()
        self.cap_mb: int | None = None
        self.requests = 0

    @property
    def enforced(self) -> bool:
        return self.baseline is not None

    def apply(self, cap_mb: int) -> None:
        self.requests += 1
        if self.baseline is None:
            return
        if self.requests % _CACHE_CHECK_EVERY == 0:
            size = address_space()
            if size is not None and size - self.baseline > cap_mb * _MIB // 2:
                core.clear_caches()
                gc.collect()
                with contextlib.suppress(OSError, AttributeError):
                    ctypes.CDLL(None).malloc_trim(0)
        if cap_mb == self.cap_mb:
            return
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = self.baseline + cap_mb * _MIB
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
            self.cap_mb = cap_mb


class CpuBackstop:
    """``RLIMIT_CPU`` a little past the request's budget: should the host be gone (so
    nobody kills an overrun), the kernel ends a program stuck inside one C call. The
    limit is moved on only when a request could reach it (a system call saved on most)."""

    __slots__ = ("limit",)

    #: CPU seconds the limit is set past what a request may use, so it moves rarely.
    SLACK = 30

    def __init__(self) -> None:
        self.limit = 0

    def apply(self, seconds: float) -> None:
        need = time.process_time() + seconds + 5
        if need <= self.limit:
            return
        soft = math.ceil(need) + self.SLACK
        _old, hard = resource.getrlimit(resource.RLIMIT_CPU)
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
            self.limit = soft


# --------------------------------------------------------------------------- answers


def _result(r: core.Result) -> dict[str, Any]:
    return {
        "status": r.status,
        "score": r.score,
        "error": r.error,
        "oracle_calls": r.oracle_calls,
        "seconds": r.seconds,
    }


def failed(op: str, status: str, message: str) -> dict[str, Any]:
    """The answer for a request that ended before its operation could answer."""
    fallback = core._fallback()
    if op == "score":
        return _result(core.Result(fallback, message, status=status))
    if op == "steps":
        return {"status": status, "error": message, "scores": []}
    if op == "findings":
        return core._failed_findings(fallback, status, message)
    return {"status": status, "error": message}


#: score_many sessions a worker keeps at once (threads may interleave theirs).
MAX_SESSIONS = 16


class Server:
    """The request loop's state: the budget, the judge and the score_many sessions."""

    def __init__(self, reader: Reader, out: int, memory: Memory) -> None:
        self.reader = reader
        self.out = out
        self.budget = Budget()
        self.judge = RemoteJudge(reader, out, self.budget)
        self.memory = memory
        self.cpu = CpuBackstop()
        self.sessions: dict[int, core._Session] = {}

    def serve(self, op: str, payload: Any, has_judge: bool, extra: Any) -> dict[str, Any]:
        judge = self.judge if has_judge else None
        if op == "score":
            if extra == core._FRESH:
                return _result(core._evaluate(payload, judge))
            session = self.sessions.get(extra)
            if session is None:  # its first trajectory, or its worker was replaced
                if len(self.sessions) >= MAX_SESSIONS:
                    self._end(next(iter(self.sessions)))
                session = self.sessions[extra] = core._Session(judge)
            session.hook.host = judge
            return _result(session.score(payload))
        if op == "steps":
            scores, status, error = core._steps(payload, judge)
            return {"status": status, "error": error, "scores": scores}
        if op == "findings":
            return core._findings_of(payload, judge, int(extra))
        if op == "end":
            self._end(extra)
        elif op == "clear":
            core.clear_caches()
        return {"status": "ok", "error": None}

    def _end(self, sid: Any) -> None:
        session = self.sessions.pop(sid, None)
        if session is not None:
            session.close()

    def handle(self, request: tuple[Any, ...]) -> tuple[dict[str, Any], bool]:
        """The answer to one request, and whether the worker must stop after sending it."""
        op, blob, has_judge, timeout_s, memory_mb, extra = request
        self.memory.apply(memory_mb)
        self.cpu.apply(timeout_s)
        budget = self.budget
        try:
            budget.start(timeout_s)
            try:
                payload = pickle.loads(blob)  # noqa: S301 - from the host
                answer = self.serve(op, payload, has_judge, extra)
            finally:
                budget.stop()
        except core.BudgetExceeded:
            message = (
                f"the program did not finish within its time budget of {timeout_s:g} s "
                "for this trajectory"
            )
            return failed(op, "timeout", message), True
        except MemoryError:
            message = f"the program ran out of its memory cap of {memory_mb} MB"
            return failed(op, "memory", message), True
        except core.InputError as err:
            fields = ("path", "field", "expected", "got", "line")
            return {"status": "input", "input": {k: getattr(err, k) for k in fields}}, False
        except Exception as exc:  # the worker's own failure: say so, and start afresh
            message = f"internal error of the monitor process: {type(exc).__name__}: {exc}"
            return failed(op, "error", message[:500]), True
        return answer, answer.get("status") in ("timeout", "memory")


def main(init: dict[str, Any]) -> None:
    """The worker's entry point (see the module docstring); never returns."""
    # The protocol owns the pipes: stray output of any module must not corrupt it.
    fin, fout = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the host decides when the worker stops
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    core._code()  # compile once, before the first trajectory's budget starts
    gc.collect()
    gc.freeze()  # what start-up built is never garbage: later collections skip it
    memory = Memory()
    memory.apply(int(init["memory_mb"]))
    server = Server(Reader(fin, deadlines=False), fout, memory)
    signal.signal(signal.SIGALRM, server.budget.alarm)
    hello = {"ready": True, "pid": os.getpid(), "memory_cap": memory.enforced}
    write_frame(fout, json.dumps(hello).encode("utf-8"))
    while True:
        try:
            request = pickle.loads(server.reader.frame())  # noqa: S301 - from the host
            answer, stop = server.handle(request)
            if stop:
                answer["exit"] = True  # the host starts the next worker
            try:
                data = json.dumps(answer, allow_nan=False)
            except (TypeError, ValueError) as exc:
                message = f"internal error of the monitor process: unserialisable answer ({exc})"
                answer = {**failed(request[0], "error", message[:500]), "exit": True}
                data, stop = json.dumps(answer), True
            write_frame(fout, data.encode("utf-8"))
        except MemoryError:
            os._exit(EXIT_MEMORY)
        except (EOFError, OSError):  # the host is gone, or closed the pipe: done
            os._exit(0)
        if stop:
            os._exit(0)
