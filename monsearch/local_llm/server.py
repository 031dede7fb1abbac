"""Start and stop llama.cpp's OpenAI-compatible server (llama-cpp-python) on 127.0.0.1.

:class:`LocalServer` runs ``python -m llama_cpp.server`` (the Python of
``monsearch[local-llm]``, or another one given by ``--python`` /
``$MONSEARCH_LLAMA_PYTHON``) in its own process group and calls it ready only when

* the port it announces is held by that process group (a server of someone else
  already on the port is refused, never announced as ours: :class:`PortTaken`),
* ``GET /v1/models`` lists the model under its alias, and
* a one-token chat completion succeeds (a build whose kernels trap on this CPU dies
  there, not on the first proposal of a run).

A server that dies is described in one line (:func:`describe_exit`: the signal, the
likely cause, the fix). :meth:`LocalServer.stop` ends the whole process group
(SIGTERM, SIGKILL after a grace period) with SIGINT, SIGTERM and SIGHUP held back
meanwhile, so nothing is left behind; on Linux the server also gets SIGKILL if the
thread that started it dies (``PR_SET_PDEATHSIG``). Its flags are llama-cpp-python's
own spellings (``--n_ctx``, ``--model_alias``...; llama.cpp's ``llama-server`` spells
them differently).

Requests are served one at a time; ``--interrupt_requests False`` keeps a streamed
answer from being cut off when another request (a probe) arrives meanwhile.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import httpx

from monsearch.errors import MonsearchError

from .processes import group_members, group_sockets, listening_sockets

__all__ = [
    "ENV_PYTHON",
    "LocalServer",
    "PortTaken",
    "ServerDied",
    "ServerError",
    "describe_exit",
    "free_port",
    "port_in_use",
]

ENV_PYTHON = "MONSEARCH_LLAMA_PYTHON"

#: What ``monsearch llm install`` fixes, named in the messages about a broken build.
INSTALL_HINT = "reinstall it portably: monsearch llm install"

_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


class ServerError(MonsearchError):
    """The local model server could not be started (or died)."""


class PortTaken(ServerError):
    """Another process (not the server started here) listens on the port."""


class ServerDied(ServerError):
    """The server started but died, or never became ready: the work ran and failed."""

    exit_code = 1


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_in_use(host: str, port: int) -> bool:
    """Whether something listens on ``host:port`` (a bind as the server's would fail, or
    a connection is accepted)."""
    with socket.socket() as s:
        # As uvicorn binds: a port in TIME_WAIT is free, only a listener blocks it.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return True
            raise ServerError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    with socket.socket() as s:
        s.settimeout(2.0)
        return s.connect_ex((host, port)) == 0


# Why a server died of a signal, and what to do about it. A shell between us and the
# server reports a signal as 128 + its number; both forms are read.
_SIGNAL_CAUSES = {
    signal.SIGILL: (
        "illegal instruction: its llama.cpp build runs a CPU instruction this machine "
        "traps on, most likely the AMX or AVX-512 kernels of a native (-march=native) "
        "build (Linux traps AMX in a process that has not asked for it, and this "
        "llama.cpp does not always ask, so a CPU that advertises AMX is not enough); "
        + INSTALL_HINT
        + " (GGML_NATIVE=OFF)"
    ),
    signal.SIGKILL: (
        "killed, most often by the kernel's out-of-memory killer: a smaller model or a "
        "smaller --n-ctx needs less memory"
    ),
    signal.SIGSEGV: (
        "memory fault: a damaged model file (monsearch llm fetch checks a catalogued "
        "one) or a fault of this llama.cpp build (" + INSTALL_HINT + ")"
    ),
    signal.SIGBUS: (
        "bus error: the model file changed or shrank while mapped, or the disk failed"
    ),
    signal.SIGABRT: "aborted on one of llama.cpp's own checks (its log says which)",
    signal.SIGFPE: "arithmetic fault in llama.cpp (" + INSTALL_HINT + ")",
}


def _signal_of(code: int) -> signal.Signals | None:
    number = -code if code < 0 else code - 128 if 128 < code < 160 else None
    if number is None:
        return None
    try:
        return signal.Signals(number)
    except ValueError:
        return None


def describe_exit(code: int) -> str:
    """One line on a server that ended with ``code`` (a Popen return code)."""
    sig = _signal_of(code)
    if sig is None:
        return f"exited with code {code}"
    cause = _SIGNAL_CAUSES.get(sig)
    said = f"died of {sig.name}" + (f" (exit {code})" if code > 0 else "")
    return f"{said}: {cause}" if cause else said


def _default_threads() -> tuple[int, int]:
    cores = os.cpu_count() or 1
    # Generation is memory-bound: half the cores; reading the prompt uses them all.
    return max(1, cores // 2), cores


def _child_setup() -> Callable[[], None]:
    """What the server's process does between fork and exec: take the stop signals
    back (the parent holds them while it forks) and, on Linux when started from the
    main thread, die with its parent."""
    prctl = None
    if sys.platform.startswith("linux") and threading.current_thread() is threading.main_thread():
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            prctl = ctypes.CDLL(None, use_errno=True).prctl
    pr_set_pdeathsig = 1

    def setup() -> None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
        if prctl is not None:
            prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)

    return setup


@contextlib.contextmanager
def _signals_held():
    """SIGINT, SIGTERM and SIGHUP wait (in this thread) until the block ends: what it
    does is never cut in half by a stop request."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class LocalServer:
    """One llama.cpp server process; use as a context manager or start()/stop()."""

    def __init__(
        self,
        model: str | Path,
        alias: str,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        python: str | None = None,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        n_threads_batch: int | None = None,
        log_path: str | Path | None = None,
        extra_args: Sequence[str] = (),
    ) -> None:
        self.model = Path(model)
        self.alias = alias
        self.host = host
        self.port = port or free_port(host)
        self.python = python or os.environ.get(ENV_PYTHON) or sys.executable
        threads, batch = _default_threads()
        self.n_ctx = n_ctx
        self.n_threads = n_threads or threads
        self.n_threads_batch = n_threads_batch or batch
        self.log_path = Path(log_path) if log_path else None
        self.extra_args = tuple(extra_args)
        self.process: subprocess.Popen[bytes] | None = None
        self._log_file: object | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def command(self) -> list[str]:
        return [
            self.python, "-m", "llama_cpp.server",
            "--model", str(self.model),
            "--model_alias", self.alias,
            "--host", self.host,
            "--port", str(self.port),
            "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.n_threads),
            "--n_threads_batch", str(self.n_threads_batch),
            "--interrupt_requests", "False",
            "--verbose", "False",
            *self.extra_args,
        ]  # fmt: skip

    def _log_tail(self, lines: int = 8) -> str:
        """The log's last lines joined on one line (read from its last 64 KiB only: a
        server can write a lot)."""
        if self.log_path is None:
            return ""
        try:
            with self.log_path.open("rb") as f:
                f.seek(max(0, f.seek(0, os.SEEK_END) - 65536))
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return ""
        return " | ".join(text.strip().splitlines()[-lines:])

    def check(self) -> None:
        """What can be refused before anything starts: no model file, a log that cannot
        be written, a port in use."""
        if not self.model.is_file():
            raise ServerError(f"no model file at {self.model}")
        if self.log_path is not None:
            self._open_log().close()
        if port_in_use(self.host, self.port):
            raise PortTaken(
                f"port {self.port} on {self.host} is already in use by another process: "
                "give another --port, or none for a free one"
            )

    def _open_log(self):
        assert self.log_path is not None
        try:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            return self.log_path.open("ab")
        except OSError as exc:
            raise ServerError(
                f"cannot write the server's log {self.log_path}: {exc.strerror or exc}"
            ) from None

    def owns_port(self) -> bool | None:
        """Whether every listener on the port (for this host) is in the server's process
        group; None where the system does not tell (no ``/proc``)."""
        if self.process is None:
            return False
        listeners = listening_sockets(self.port, self.host)
        ours = group_sockets(self.process.pid)
        if listeners is None or ours is None:
            return None
        return bool(listeners) and listeners <= ours

    def _died(self, code: int, when: str) -> ServerError:
        tail = self._log_tail()
        hint = (
            " (llama-cpp-python is not installed for that Python: monsearch llm install, "
            f"or give its Python with --python / ${ENV_PYTHON})"
            if "No module named" in tail
            else ""
        )
        line = f"the llama.cpp server {describe_exit(code)} {when}{hint}"
        return ServerDied(f"{line}; its log: {tail}" if tail else line)

    def start(self, timeout_s: float = 300.0) -> LocalServer:
        """Start the server and wait until it is ready (see the module's docstring), or
        fail leaving nothing. Any exception meanwhile (a signal handler's included)
        stops the process group before it propagates."""
        self.check()
        if self.log_path is None:
            import tempfile

            fd, name = tempfile.mkstemp(prefix="monsearch-llama-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)
        log = self._open_log()
        self._log_file = log
        # A stop signal arriving during the fork would lose the child's pid: held back
        # until self.process is set, then delivered (and the child unblocks them).
        try:
            with _signals_held():
                self.process = subprocess.Popen(
                    self.command(),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group: stopped as a whole
                    preexec_fn=_child_setup(),
                )
        except OSError as exc:
            log.close()
            self._log_file = None
            raise ServerError(f"cannot start {self.python}: {exc.strerror or exc}") from None
        try:
            self._wait_ready(time.monotonic() + timeout_s, timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, deadline: float, timeout_s: float) -> None:
        assert self.process is not None
        listed = False
        with httpx.Client(timeout=5.0) as http:
            while True:
                code = self.process.poll()
                if code is not None:
                    raise self._died(
                        code, "on its first completion" if listed else "while starting"
                    )
                if time.monotonic() > deadline:
                    raise ServerDied(
                        f"the llama.cpp server did not answer within {timeout_s:g} s: "
                        + self._log_tail()
                    )
                try:
                    if not listed:
                        listed = self._lists_model(http)
                    if listed and self._completes(http, deadline):
                        return
                except httpx.TransportError:
                    pass  # not listening yet, or it just died: poll() tells next turn
                time.sleep(0.25)

    def _lists_model(self, http: httpx.Client) -> bool:
        response = http.get(f"{self.base_url}/models")
        if response.status_code != 200:
            return False
        owner = self.owns_port()
        if owner is False:
            raise PortTaken(
                f"port {self.port} on {self.host} is answered by another process, not the "
                "llama.cpp server started here: give another --port, or none for a free one"
            )
        try:
            ids = [m.get("id") for m in response.json().get("data", [])]
        except (ValueError, AttributeError, TypeError):
            ids = []
        if self.alias not in ids:
            raise PortTaken(
                f"the server on port {self.port} does not list the model {self.alias!r}: "
                "another process answers there"
            )
        return True

    def _completes(self, http: httpx.Client, deadline: float) -> bool:
        """One token of a chat completion: the model runs on this CPU."""
        body = {
            "model": self.alias,
            "messages": [{"role": "user", "content": "Say OK."}],
            "max_tokens": 1,
            "temperature": 0,
        }
        wait = max(5.0, deadline - time.monotonic())
        response = http.post(f"{self.base_url}/chat/completions", json=body, timeout=wait)
        if response.status_code != 200:
            raise ServerDied(
                f"the llama.cpp server answered its first completion with HTTP "
                f"{response.status_code}: {response.text[:300]}"
            )
        return True

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM to the server's process group, SIGKILL after ``grace_s``, until no
        process of the group is left; stop signals wait until it is done."""
        proc = self.process
        with _signals_held():
            if proc is not None:
                self._end_group(proc, grace_s)
            if self._log_file is not None:
                self._log_file.close()  # type: ignore[attr-defined]
                self._log_file = None

    @staticmethod
    def _end_group(proc: subprocess.Popen[bytes], grace_s: float) -> None:
        pgid = proc.pid

        def left() -> bool:
            members = group_members(pgid)
            return proc.poll() is None or bool(members)

        for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 30.0)):
            if not left():
                break
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, sig)
            end = time.monotonic() + wait_s
            while left() and time.monotonic() < end:
                time.sleep(0.05)
        if proc.poll() is None:
            proc.wait()

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
