"""A stand-in for ``python -m llama_cpp.server``, to test ``monsearch llm serve``.

:func:`install` lays out a package ``llama_cpp.server`` whose ``__main__`` runs
:func:`main`; with that folder on ``PYTHONPATH`` the real command line
(``python -m llama_cpp.server --model ... --model_alias ... --port ...``) starts this
instead of llama.cpp. ``$FAKE_LLAMA_MODE`` picks a behaviour, ``$FAKE_LLAMA_STATE``
names a folder where it writes ``pid`` (its own), ``child`` (a process it started
in its group) and ``loading`` (written once the "model load" began), so a test
waits on those files, never on a clock:

``ok``       serve ``GET /v1/models`` and one-token chat completions
``child``    as ``ok``, with a child process of its own (it must be stopped too)
``sigill``   list the model, then die of SIGILL on the first completion (a build
             whose kernels trap on this CPU)
``load``     sleep in the "model load" until stopped
``stubborn`` as ``load``, ignoring SIGTERM (only SIGKILL ends it)
``noisy``    print a line with terminal control sequences and exit 3
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

_MAIN = "import fake_llama_server\nfake_llama_server.main()\n"


def install(folder: Path) -> Path:
    """The ``llama_cpp`` package that runs this fake, under ``folder``; returns the
    folder to put on ``PYTHONPATH`` (with this file's own folder)."""
    server = folder / "llama_cpp" / "server"
    server.mkdir(parents=True)
    (folder / "llama_cpp" / "__init__.py").write_text("")
    (server / "__init__.py").write_text("")
    (server / "__main__.py").write_text(_MAIN)
    return folder


def _arg(name: str, default: str = "") -> str:
    argv = sys.argv
    return argv[argv.index(name) + 1] if name in argv else default


def _mark(state: Path, name: str, text: str) -> None:
    tmp = state / f".{name}"
    tmp.write_text(text)
    os.replace(tmp, state / name)


class _Handler(BaseHTTPRequestHandler):
    alias = "fake"
    mode = "ok"

    def log_message(self, *args) -> None:
        pass

    def _json(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/v1/models":
            self._json({"object": "list", "data": [{"id": self.alias, "object": "model"}]})
        else:
            self.send_error(404)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        if self.path != "/v1/chat/completions":
            self.send_error(404)
            return
        if self.mode == "sigill":
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file
            os.kill(os.getpid(), signal.SIGILL)
        self._json({
            "id": "x", "object": "chat.completion", "model": self.alias,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "OK"},
                         "finish_reason": "length"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
        })  # fmt: skip


def main() -> None:
    mode = os.environ.get("FAKE_LLAMA_MODE", "ok")
    state = Path(os.environ.get("FAKE_LLAMA_STATE", "."))
    _mark(state, "pid", str(os.getpid()))
    if mode == "noisy":
        print("fatal: \x1b[2J\x1b]0;owned\x07 error: forged line\r\nmore", file=sys.stderr)
        sys.exit(3)
    if mode in ("load", "stubborn"):
        if mode == "stubborn":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _mark(state, "loading", "1")
        while True:
            time.sleep(3600)
    if mode == "child":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        _mark(state, "child", str(child.pid))
    _Handler.alias = _arg("--model_alias", "fake")
    _Handler.mode = mode
    server = HTTPServer((_arg("--host", "127.0.0.1"), int(_arg("--port"))), _Handler)
    server.serve_forever()
