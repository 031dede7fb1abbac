"""The app host of a live worker: a small process that starts fresh app processes fast.

Importing Flask and its friends takes a good part of a second; a live corpus starts a
fresh app process for every run (rate-limit counters, one-shot flags and seeded data
live in the process). The host imports them once and forks a child per run, which
loads the task's ``app.py`` anew (:mod:`~monsearch.live.app_child`). It speaks JSON
lines on stdin/stdout: ``start`` (a spec; answers the child's pid and ports) and
``stop`` (kills the child's process group). Children die with the host, and the host
with its driver (Linux's parent-death signal), so nothing outlives a worker.

Run as ``python -m monsearch.live.app_host``.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import subprocess
import sys
import threading
import traceback
from typing import Any

#: Seconds an app process may take to load its app and bind its ports.
START_TIMEOUT = 60.0
PR_SET_PDEATHSIG = 1


class AppHostError(RuntimeError):
    """The app host or one of its apps could not start."""


def die_with_parent() -> None:
    """Ask Linux to kill this process when its parent dies (elsewhere: a no-op)."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _child(spec: dict[str, Any], write_fd: int) -> None:
    os.setsid()
    die_with_parent()
    log = os.open(spec["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    try:
        from monsearch.live.app_child import serve

        ports = serve(spec)
        msg = {"ports": ports}
    except BaseException as exc:  # reported to the driver, which names the task
        traceback.print_exc()
        msg = {"error": f"{type(exc).__name__}: {exc}"}
    os.write(write_fd, (json.dumps(msg) + "\n").encode())
    os.close(write_fd)
    if "error" in msg:
        os._exit(1)
    while True:
        signal.pause()


def _start(spec: dict[str, Any]) -> dict[str, Any]:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's own process
        os.close(r)
        try:
            _child(spec, w)
        finally:
            os._exit(1)
    os.close(w)
    chunks = b""
    ready, _, _ = select.select([r], [], [], START_TIMEOUT)
    while ready:
        data = os.read(r, 65536)
        if not data:
            break
        chunks += data
        if chunks.endswith(b"\n"):
            break
        ready, _, _ = select.select([r], [], [], START_TIMEOUT)
    os.close(r)
    try:
        msg = json.loads(chunks.decode() or "{}")
    except ValueError:
        msg = {}
    if "ports" not in msg:
        _kill(pid)
        return {"error": msg.get("error", "the app process did not start in time")}
    return {"pid": pid, "ports": msg["ports"]}


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def main() -> None:
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver decides when we stop
    # The imports every app needs, done once (children inherit them).
    import flask  # noqa: F401
    import werkzeug.serving  # noqa: F401

    for optional in ("flask_limiter", "jwt"):
        with contextlib.suppress(ImportError):
            __import__(optional)
    import monsearch.live.app_child  # noqa: F401

    out = sys.stdout
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        try:
            req = json.loads(line)
            if req.get("op") == "start":
                reply = _start(req["spec"])
            elif req.get("op") == "stop":
                _kill(int(req["pid"]))
                reply = {"ok": True}
            else:
                reply = {"error": f"unknown op {req.get('op')!r}"}
        except Exception as exc:  # a bad request must not end the host
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(reply) + "\n")
        out.flush()


class AppHost:
    """The driver's handle on one app host process."""

    def __init__(self, python: str = sys.executable, env: dict[str, str] | None = None) -> None:
        self._lock = threading.Lock()
        self.proc = subprocess.Popen(
            [python, "-m", "monsearch.live.app_host"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            preexec_fn=die_with_parent,
        )
        first = self._read()
        if not first.get("ready"):
            err = self.proc.stderr.read() if self.proc.poll() is not None else ""
            last = err.strip().splitlines()[-1] if err.strip() else "no answer"
            raise AppHostError(f"the app host did not start: {last}")

    def _read(self) -> dict[str, Any]:
        line = self.proc.stdout.readline()
        if not line:
            return {}
        return json.loads(line)

    def _ask(self, req: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            if self.proc.poll() is not None:
                raise AppHostError("the app host has stopped")
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
            return self._read()

    def start(self, spec: dict[str, Any]) -> tuple[int, dict[str, int]]:
        reply = self._ask({"op": "start", "spec": spec})
        if "pid" not in reply:
            raise AppHostError(reply.get("error", "no answer from the app host"))
        return int(reply["pid"]), {k: int(v) for k, v in reply["ports"].items()}

    def stop(self, pid: int) -> None:
        self._ask({"op": "stop", "pid": pid})

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.proc.stdin.close()
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=5)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


if __name__ == "__main__":
    main()
