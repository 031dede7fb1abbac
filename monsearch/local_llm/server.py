"""Start and stop llama.cpp's OpenAI-compatible server (llama-cpp-python) on 127.0.0.1.

:class:`LocalServer` runs ``python -m llama_cpp.server`` (the Python of
``monsearch[local-llm]``, or another one given by ``--python`` /
``$MONSEARCH_LLAMA_PYTHON``) in its own process group, waits until ``GET /v1/models``
answers, and stops it with SIGTERM (SIGKILL after a grace period), so no process is
left behind. Its flags are llama-cpp-python's own spellings (``--n_ctx``,
``--model_alias``...; llama.cpp's ``llama-server`` spells them differently).

Requests are served one at a time; ``--interrupt_requests False`` keeps a streamed
answer from being cut off when another request (a probe) arrives meanwhile.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from monsearch.errors import MonsearchError

__all__ = ["ENV_PYTHON", "LocalServer", "ServerError", "free_port"]

ENV_PYTHON = "MONSEARCH_LLAMA_PYTHON"


class ServerError(MonsearchError):
    """The local model server could not be started (or died)."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _default_threads() -> tuple[int, int]:
    cores = os.cpu_count() or 1
    # Generation is memory-bound: half the cores; reading the prompt uses them all.
    return max(1, cores // 2), cores


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
        if self.log_path is None or not self.log_path.exists():
            return ""
        text = self.log_path.read_text(errors="replace").strip().splitlines()
        return " | ".join(text[-lines:])

    def start(self, timeout_s: float = 300.0) -> LocalServer:
        """Start the server and wait until it lists its model (or fail, leaving nothing)."""
        if not self.model.is_file():
            raise ServerError(f"no model file at {self.model}")
        if self.log_path is None:
            import tempfile

            fd, name = tempfile.mkstemp(prefix="monsearch-llama-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        self._log_file = log
        try:
            self.process = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stopped as a whole
            )
        except OSError as exc:
            log.close()
            raise ServerError(f"cannot start {self.python}: {exc}") from None
        deadline = time.monotonic() + timeout_s
        with httpx.Client(timeout=2.0) as http:
            while True:
                code = self.process.poll()
                if code is not None:
                    tail = self._log_tail()
                    self.stop()
                    hint = (
                        " (llama-cpp-python is not installed for that Python: pip install "
                        "'monsearch[local-llm]', or give its Python with --python / "
                        f"${ENV_PYTHON})"
                        if "No module named" in tail
                        else ""
                    )
                    raise ServerError(f"the llama.cpp server exited with code {code}{hint}: {tail}")
                try:
                    response = http.get(f"{self.base_url}/models")
                    if response.status_code == 200:
                        return self
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    self.stop()
                    raise ServerError(
                        f"the llama.cpp server did not answer within {timeout_s:g} s: "
                        + self._log_tail()
                    )
                time.sleep(0.25)

    def stop(self, grace_s: float = 15.0) -> None:
        """SIGTERM to the server's process group, SIGKILL after ``grace_s``."""
        proc = self.process
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if self._log_file is not None:
            self._log_file.close()  # type: ignore[attr-defined]
            self._log_file = None

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
