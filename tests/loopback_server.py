"""A threaded HTTP server on 127.0.0.1 (ephemeral port) for the tests' stub endpoints."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar


class LoopbackHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    stub: Any


class LoopbackServer:
    """Subclasses set ``handler``; the handler reaches the stub as ``self.server.stub``."""

    handler: ClassVar[type[BaseHTTPRequestHandler]]
    _server: LoopbackHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> Any:
        self._server = LoopbackHTTPServer(("127.0.0.1", 0), self.handler)
        self._server.stub = self
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
