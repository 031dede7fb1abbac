"""The third-party sink of a live worker: where every host outside the task goes.

Inside the worker's walls there is no internet. A request for any other host (a
webhook catcher, an out-of-band callback domain, a package index, an identity
provider) reaches this small server instead: through curl's proxy setting (plain
requests, and ``CONNECT`` tunnels, whose TLS the sink answers itself), or through the
container's and the apps' resolvers (port 443 to its TLS port, anything else to its
plain one). It records what reached it (the ground truth of a third-party contact)
and answers as the run's model of the internet says (the synthetic generator's
:func:`~monsearch.synth.tasks.internet.internet`), or with a bare 502 where that model
has no answer. Its certificate is a throwaway one (:mod:`~monsearch.live.tls`) that
the container's clients are set to accept.
"""

from __future__ import annotations

import contextlib
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

#: Bytes of a request body kept in the record.
BODY_CAP = 64_000
Answer = Callable[[str, str, dict[str, str], bytes], "tuple[int, str, bytes] | None"]


class Sink:
    def __init__(self, cert_dir: Path) -> None:
        from monsearch.live.tls import self_signed

        self.records: list[dict[str, Any]] = []
        self.answer: Answer | None = None
        self.now: Callable[[], float] = lambda: 0.0
        self._lock = threading.Lock()
        cert, key = self_signed(cert_dir)
        self.tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.tls.load_cert_chain(cert, key)
        sink = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            scheme = "http"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _record(self, method: str, url: str, body: bytes, via: str) -> None:
                with sink._lock:
                    sink.records.append(
                        {
                            "t": sink.now(),
                            "method": method,
                            "url": url,
                            "body": body[:BODY_CAP].decode("utf-8", "replace"),
                            "via": via,
                        }
                    )

            def do_CONNECT(self) -> None:
                host = self.path
                self.send_response(200, "Connection established")
                self.end_headers()
                self.wfile.flush()
                try:
                    inner = sink.tls.wrap_socket(self.connection, server_side=True)
                except (ssl.SSLError, OSError):
                    self._record("CONNECT", "https://" + host, b"", "tunnel")
                    self.close_connection = True
                    return
                self.close_connection = True
                tunnel = type("Tunnel", (Handler,), {"scheme": "https"})
                with contextlib.suppress(OSError, ssl.SSLError):
                    tunnel(inner, self.client_address, self.server)

            def _any(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(min(n, 10_000_000)) if n > 0 else b""
                if self.path.startswith(("http://", "https://")):
                    url, via = self.path, "proxy"
                else:
                    url = f"{self.scheme}://{self.headers.get('Host', 'unknown')}{self.path}"
                    via = "direct"
                self._record(self.command, url, body, via)
                reply = sink.answer(self.command, url, dict(self.headers), body) if sink.answer else None
                status, ctype, data = reply if reply is not None else (502, "text/plain", b"")
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                self.close_connection = True

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _any

        class TlsHandler(Handler):
            scheme = "https"

            def setup(self) -> None:
                self.request = sink.tls.wrap_socket(self.request, server_side=True)
                super().setup()

        self.servers = []
        for cls in (Handler, TlsHandler):
            srv = ThreadingHTTPServer(("127.0.0.1", 0), cls)
            srv.daemon_threads = True
            srv.handle_error = lambda *a: None  # a client that drops a tunnel is no news
            threading.Thread(target=srv.serve_forever, daemon=True).start()
            self.servers.append(srv)
        self.port = self.servers[0].server_port
        self.tls_port = self.servers[1].server_port

    def take(self) -> list[dict[str, Any]]:
        """The records since the last call."""
        with self._lock:
            out, self.records = self.records, []
        return out

    def close(self) -> None:
        for srv in self.servers:
            srv.shutdown()
            srv.server_close()
