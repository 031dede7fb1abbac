"""The host's side of the monitor's worker process (see :mod:`._worker`).

One worker per plugin per host process, started at the first trajectory and kept, so a
trajectory costs one round trip over a pipe (tens of microseconds), not a process
start. Calls from several threads take turns. The host bounds every request: past the
time budget plus a grace (:func:`grace_s`) the worker is killed and the trajectory's
status is ``timeout``; a worker that dies answers for itself (``memory``, ``error``).
A worker that stopped or was killed is replaced at once, in the background: the next
trajectory finds a fresh one. Nothing the worker sends is unpickled: its answers are
JSON, checked field by field before the host uses them.

The worker runs ``sys.executable`` with this process's ``sys.path`` (and this
package's folder first), so it imports exactly what the host imported, in a scrubbed
environment: no API keys or tokens of the host reach the process that runs the program.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import pickle
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._wire import MAX_REPLY_BYTES, Reader, write_frame

#: How long a new worker may take to import the plugin and compile the program.
STARTUP_S = 60.0
#: Statuses a worker may answer with (``input``: the trajectory could not be read).
STATUSES = frozenset({"ok", "error", "timeout", "memory", "input"})
EXIT_MEMORY = 71  # the worker's own code for "out of memory" (see _worker)
_BOOT = (
    "import json, sys\n"
    "init = json.loads(sys.argv[1])\n"
    "sys.path[:] = init['path']\n"
    "import importlib\n"
    "importlib.import_module(init['package'] + '._worker').main(init)\n"
)
#: Environment variables a worker keeps: what an interpreter needs to start, no more.
_KEEP_ENV = ("PATH", "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH", "PYTHONHOME", "SYSTEMROOT", "TMPDIR")


def grace_s(timeout_s: float) -> float:
    """How long past the budget the host waits for the worker's own interrupt to answer."""
    return max(0.5, 0.25 * timeout_s)


def environment() -> dict[str, str]:
    env = {k: os.environ[k] for k in _KEEP_ENV if k in os.environ}
    env.update(
        PYTHONHASHSEED="0",  # the sandbox workers' seed: set order as in the run
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUTF8="1",
        LC_ALL="C.UTF-8",
    )
    return env


def host_path(package_dir: Path) -> list[str]:
    """This process's import path for the worker: absolute, the plugin's folder first."""
    cwd = os.getcwd()
    out = [str(package_dir.parent)]
    for entry in sys.path:
        if isinstance(entry, str):
            entry = os.path.join(cwd, entry) if entry else cwd
            if entry not in out:
                out.append(entry)
    return out


class Failure(Exception):
    """A request the worker did not answer: its status and why."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Worker:
    """One worker process (started, maybe not ready yet)."""

    def __init__(self, package: str, package_dir: Path, memory_mb: int) -> None:
        self.owner = os.getpid()
        self.ready = False
        self.memory_cap: bool | None = None
        # Kept as long as the process lives (closed by end()): its last words, if it dies.
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115
        init = {"path": host_path(package_dir), "package": package, "memory_mb": memory_mb}
        self.proc = subprocess.Popen(
            [sys.executable, "-P", "-c", _BOOT, json.dumps(init)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=environment(),
            cwd=os.path.abspath(os.sep),
            close_fds=True,
            start_new_session=True,  # a Ctrl-C at the host's terminal is the host's
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.out = self.proc.stdin.fileno()
        os.set_blocking(self.out, False)
        self.reader = Reader(self.proc.stdout.fileno())

    def wait_ready(self) -> None:
        if self.ready:
            return
        try:
            hello = json.loads(self.reader.frame(time.monotonic() + STARTUP_S, 4096))
        except (EOFError, TimeoutError, ValueError) as exc:
            how = self.end(kill=True)
            raise Failure(
                "error", f"the monitor process did not start ({how or type(exc).__name__})"
            ) from None
        if not (isinstance(hello, dict) and hello.get("ready") is True):
            self.end(kill=True)
            raise Failure("error", "the monitor process did not start (a bad greeting)")
        self.memory_cap = hello.get("memory_cap") is True
        self.ready = True

    def alive(self) -> bool:
        return self.proc.poll() is None

    def end(self, *, kill: bool) -> str:
        """Stop the process (``kill``: at once; else close its input and let it finish),
        reap it and say how it ended, with the tail of what it wrote to stderr."""
        if kill:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.proc.pid, signal.SIGKILL)
        else:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()  # type: ignore[union-attr]
        try:
            code = self.proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.proc.pid, signal.SIGKILL)
            code = self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError, AttributeError):
                pipe.close()  # type: ignore[union-attr]
        tail = ""
        with contextlib.suppress(OSError, ValueError):
            self.stderr.seek(0, os.SEEK_END)
            size = self.stderr.tell()
            self.stderr.seek(max(0, size - 600))
            tail = self.stderr.read().decode("utf-8", "replace").strip().splitlines()
            tail = tail[-1] if tail else ""
        with contextlib.suppress(OSError):
            self.stderr.close()
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            how = f"killed by {name}"
        else:
            how = f"exit code {code}"
        return f"{how}: {tail}" if tail else how

    def abandon(self) -> None:
        """In a forked child: the process is the parent's; only let go of the pipes."""
        for fd in (self.out, self.reader.fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(OSError):
            self.stderr.close()


Judge = Callable[[str | None], "tuple[float | None, str | None]"]


class Isolation:
    """The plugin's worker: start it, send it requests, replace it when it stops."""

    def __init__(self, package: str, package_dir: Path) -> None:
        self.package = package
        self.package_dir = package_dir
        self.lock = threading.Lock()
        self.holder: int | None = None
        self.worker: Worker | None = None
        # Pipes with deadlines (poll) and the worker's alarm and rlimits are POSIX.
        self.supported = os.name == "posix" and hasattr(select, "poll")
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forked)

    def _forked(self) -> None:
        self.lock = threading.Lock()
        self.holder = None
        if self.worker is not None:
            self.worker.abandon()
            self.worker = None

    def _worker(self, memory_mb: int) -> Worker:
        w = self.worker
        if w is not None and (w.owner != os.getpid() or not w.alive()):
            if w.owner == os.getpid():
                w.end(kill=True)
            w = self.worker = None
        if w is None:
            w = self.worker = Worker(self.package, self.package_dir, memory_mb)
        return w

    def _retire(self, *, kill: bool, memory_mb: int) -> str:
        """End the current worker and start its successor (not waited for)."""
        w, self.worker = self.worker, None
        how = w.end(kill=kill) if w is not None else ""
        with contextlib.suppress(OSError):  # no successor now: the next call starts one
            self.worker = Worker(self.package, self.package_dir, memory_mb)
        return how

    def request(
        self,
        blob: bytes,
        judge: Judge | None,
        timeout_s: float,
        memory_mb: int,
        check: Callable[[dict[str, Any]], Any],
    ) -> Any:
        """The worker's answer to one request (a pickled tuple, see ``_worker.Server``),
        passed through ``check`` (which raises ValueError for a malformed one: the worker
        is then replaced); :class:`Failure` when it gave none."""
        me = threading.get_ident()
        if self.holder == me:
            raise RuntimeError("the monitor was called again from inside its own oracle")
        with self.lock:
            self.holder = me
            try:
                message = self._request(blob, judge, timeout_s, memory_mb)
                try:
                    return check(message)
                except ValueError as exc:
                    self._retire(kill=True, memory_mb=memory_mb)
                    raise Failure(
                        "error", f"the monitor process sent a malformed answer ({exc})"[:300]
                    ) from None
            finally:
                self.holder = None

    def notify(self, blob: bytes, memory_mb: int) -> None:
        """Send a request that needs no answer but its arrival (``clear``, ``end``) to the
        worker if one is running and ready; none is started for it."""
        with self.lock:
            w = self.worker
            if w is None or not w.ready or w.owner != os.getpid() or not w.alive():
                return
            with contextlib.suppress(Failure):
                self._request(blob, None, 5.0, memory_mb)

    def _request(
        self, blob: bytes, judge: Judge | None, timeout_s: float, memory_mb: int
    ) -> dict[str, Any]:
        if not self.supported:
            raise Failure(
                "error",
                "the monitor's worker process needs a POSIX system (Linux, macOS); "
                "configure(isolation='none') runs the program in this process, without limits",
            )
        try:
            w = self._worker(memory_mb)
            w.wait_ready()
        except OSError as exc:
            raise Failure("error", f"the monitor process cannot be started: {exc}") from None
        except Failure:
            self.worker = None
            raise
        try:
            deadline = time.monotonic() + timeout_s + grace_s(timeout_s)
            write_frame(w.out, blob, deadline)
            deadline = time.monotonic() + timeout_s + grace_s(timeout_s)
            while True:
                message = json.loads(w.reader.frame(deadline, MAX_REPLY_BYTES))
                if not isinstance(message, dict):
                    raise ValueError("not an object")
                if "oracle" not in message:
                    break
                asked = time.monotonic()
                answer = (None, None) if judge is None else judge(_variant(message["oracle"]))
                deadline += time.monotonic() - asked  # the judge's time is not the program's
                write_frame(w.out, _pickled(answer), deadline)
        except TimeoutError:
            self._retire(kill=True, memory_mb=memory_mb)
            raise Failure(
                "timeout",
                f"the program did not finish within its time budget of {timeout_s:g} s for "
                "this trajectory and was stopped (its process was killed)",
            ) from None
        except (EOFError, BrokenPipeError, ConnectionError):
            how = self._retire(kill=False, memory_mb=memory_mb)
            raise _ended(how, memory_mb) from None
        except (ValueError, UnicodeDecodeError) as exc:
            self._retire(kill=True, memory_mb=memory_mb)
            raise Failure(
                "error", f"the monitor process sent a malformed answer ({exc})"[:300]
            ) from None
        except BaseException:
            # The host was interrupted mid-request (its judge raised, Ctrl-C): the
            # worker is somewhere in the protocol, so it cannot be used again.
            self._retire(kill=True, memory_mb=memory_mb)
            raise
        status = message.get("status")
        if status not in STATUSES:
            self._retire(kill=True, memory_mb=memory_mb)
            raise Failure("error", "the monitor process sent a malformed answer (status)")
        if message.get("exit") is True:
            self._retire(kill=False, memory_mb=memory_mb)  # it exits after this answer
        return message

    def close(self) -> None:
        """Stop the worker (a new one starts at the next call)."""
        with self.lock:
            w, self.worker = self.worker, None
            if w is not None and w.owner == os.getpid():
                w.end(kill=False)


def _variant(value: Any) -> str | None:
    return value if value is None or type(value) is str else None


def _pickled(answer: tuple[float | None, str | None]) -> bytes:
    return pickle.dumps(answer, protocol=5)


def _ended(how: str, memory_mb: int) -> Failure:
    if how.startswith(f"exit code {EXIT_MEMORY}"):
        return Failure("memory", f"the program ran out of its memory cap of {memory_mb} MB")
    if how.startswith("killed by SIGXCPU"):
        return Failure("timeout", "the program ran past its CPU allowance and was stopped")
    return Failure("error", f"the monitor process ended ({how})"[:500])


def checked_float(value: Any) -> float:
    """A finite float from a worker's answer, else ValueError."""
    if type(value) is not float or not math.isfinite(value):
        raise ValueError("not a finite number")
    return value
