"""The third-party sink of a live worker: where every host outside the task goes.

Inside the worker's walls there is no internet. A request for any other host (a
webhook catcher, an out-of-band callback domain, a package index) reaches this small
server instead, through curl's proxy setting or the container's resolver; so does an
app's server-side fetch of such a host. It records what reached it (the ground truth
of a third-party contact) and answers as the run's model of the internet says
(the synthetic generator's :func:`~monsearch.synth.tasks.internet.internet`); TLS
tunnels (``CONNECT``) are refused and recorded.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

#: Bytes of a request body kept in the record.
BODY_CAP = 64_000
Answer = Callable[[str, str, dict[str, str], bytes], "tuple[int, str, bytes] | None"]


class Sink:
    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.answer: Answer | None = None
        self.now: Callable[[], float] = lambda: 0.0
        self._lock = threading.Lock()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _record(self, method: str, url: str, body: bytes) -> None:
                with sink._lock:
                    sink.records.append(
                        {
                            "t": sink.now(),
                            "method": method,
                            "url": url,
                            "body": body[:BODY_CAP].decode("utf-8", "replace"),
                            "via": "proxy" if self.path.startswith(("http://", "https://")) else "direct",
                        }
                    )

            def do_CONNECT(self) -> None:
                self._record("CONNECT", "https://" + self.path, b"")
                self.send_response(403, "Forbidden")
                self.send_header("Content-Length", "0")
                self.send_header("Connection", "close")
                self.end_headers()

            def _any(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(min(n, 10_000_000)) if n > 0 else b""
                if self.path.startswith(("http://", "https://")):
                    url = self.path
                else:
                    url = f"http://{self.headers.get('Host', 'unknown')}{self.path}"
                self._record(self.command, url, body)
                reply = sink.answer(self.command, url, dict(self.headers), body) if sink.answer else None
                status, ctype, data = reply if reply is not None else (502, "text/plain", b"")
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_port
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def take(self) -> list[dict[str, Any]]:
        """The records since the last call."""
        with self._lock:
            out, self.records = self.records, []
        return out

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def host_of(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()
