"""HTTP requests to LLM servers bounded in time and size at the socket.

httpx's timeouts are per operation: its read timeout restarts with every read, so a
server that sends one byte every few seconds is never cut, and a body is read to its
end however long it is. Here a request runs under a :class:`Budget` (a wall-clock
deadline and a cap on the bytes read): every socket read of a client made by
:func:`bounded_client` waits at most until the deadline and counts what it gets, so a
drip, a silent connection or an endless body ends at the deadline or at the cap,
whatever the server's pace, from the status line to the last byte (a TLS handshake is
cut at the deadline too). :func:`body_chunks` checks the same budget chunk by chunk, for
any httpx client. Replies are asked for uncompressed and a compressed one is refused
unread: a small gzip body can inflate a thousandfold before any cap sees it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

__all__ = [
    "Budget",
    "ReplyCut",
    "body_chunks",
    "bounded",
    "bounded_client",
    "refuse_encoded",
    "size_text",
]

MB = 1024 * 1024
#: Bytes a reply's status line and headers may add to its body's cap at the socket.
HEADER_ALLOWANCE = 64 * 1024


def size_text(n: int) -> str:
    """``n`` bytes as a person reads a limit: ``8 MB``, else ``65,536 bytes``."""
    return f"{n // MB} MB" if n >= MB and n % MB == 0 else f"{n:,} bytes"


class ReplyCut(Exception):
    """A reply cut short: its deadline passed (``why == "deadline"``), it passed its
    size cap (``"bytes"``), a line passed its cap (``"line"``) or it came encoded
    (``"encoding"``). The message names the endpoint and the limit, on one line."""

    def __init__(self, message: str, why: str) -> None:
        super().__init__(message)
        self.why = why

    @property
    def timed_out(self) -> bool:
        return self.why == "deadline"


class Budget:
    """One request's limits: ``seconds`` of wall-clock time from now for everything
    (connecting, sending, waiting, reading), and ``max_bytes`` of body."""

    def __init__(self, seconds: float, max_bytes: int) -> None:
        self.seconds = float(seconds)
        self.deadline = time.monotonic() + self.seconds
        self.max_bytes = int(max_bytes)
        #: Bytes read at the socket (status line and headers included).
        self.received = 0
        #: Why the budget ran out ("deadline", "bytes"), or None.
        self.exceeded: str | None = None

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def cut(self, where: str) -> ReplyCut | None:
        """The cut this budget's end made (None: it has not ended)."""
        if self.exceeded == "bytes":
            return ReplyCut(
                f"the reply at {where} passed {size_text(self.max_bytes)}; read no further",
                "bytes",
            )
        if self.exceeded == "deadline" or self.remaining() <= 0:
            return ReplyCut(
                f"no complete reply within {self.seconds:g} s at {where} (the deadline of "
                f"the whole request; {self.received:,} bytes came)",
                "deadline",
            )
        return None


_CURRENT: ContextVar[Budget | None] = ContextVar("monsearch_http_budget", default=None)


@contextlib.contextmanager
def bounded(budget: Budget, where: str) -> Iterator[Budget]:
    """Run the requests of the block under ``budget``: a transport error that the
    budget's end caused comes out as :class:`ReplyCut`."""
    token = _CURRENT.set(budget)
    try:
        yield budget
    except httpx.TransportError:
        cut = budget.cut(where)
        if cut is None:
            raise
        raise cut from None
    finally:
        _CURRENT.reset(token)


def body_chunks(response: httpx.Response, budget: Budget, cap: int, where: str) -> Iterator[bytes]:
    """The raw body of ``response`` chunk by chunk, at most ``cap`` bytes (more raises
    :class:`ReplyCut`), the deadline checked on every chunk (for a client whose socket
    reads do not check it)."""
    got = 0
    for chunk in response.iter_raw():
        got += len(chunk)
        if got > cap:
            budget.exceeded = "bytes"
            raise ReplyCut(
                f"the reply at {where} passed {size_text(cap)}; read no further", "bytes"
            )
        if budget.remaining() <= 0:
            budget.exceeded = "deadline"
            cut = budget.cut(where)
            assert cut is not None
            raise cut
        yield chunk


def refuse_encoded(response: httpx.Response, where: str) -> None:
    """Raise :class:`ReplyCut` when ``response`` is compressed (none was asked for)."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding not in ("", "identity"):
        raise ReplyCut(
            f"the reply at {where} is {encoding[:40]!r}-encoded although none was asked "
            "for; not read",
            "encoding",
        )


# --------------------------------------------------------------------------- the transport


def _deadline_left(timeout: float | None) -> tuple[Budget | None, float | None]:
    """The calling request's budget and how long one operation may wait."""
    budget = _CURRENT.get()
    if budget is None:
        return None, timeout
    left = budget.remaining()
    if left <= 0:
        budget.exceeded = budget.exceeded or "deadline"
        return budget, 0.0
    return budget, left if timeout is None else min(left, timeout)


class _Stream(httpcore.NetworkStream):
    """A connection whose reads and writes honour the calling request's budget."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        budget, wait = _deadline_left(timeout)
        if budget is None:
            return self._inner.read(max_bytes, timeout)
        if wait is not None and wait <= 0:
            raise httpcore.ReadTimeout("the request's deadline passed")
        try:
            data = self._inner.read(max_bytes, wait)
        except httpcore.ReadTimeout:
            if budget.remaining() <= 0:
                budget.exceeded = budget.exceeded or "deadline"
            raise
        budget.received += len(data)
        if budget.received > budget.max_bytes + HEADER_ALLOWANCE:
            budget.exceeded = "bytes"
            raise httpcore.ReadError("the reply passed its size cap")
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        step = 65536  # a server that reads slowly meets the deadline between sends
        for start in range(0, max(len(buffer), 1), step):
            budget, wait = _deadline_left(timeout)
            if wait is not None and wait <= 0:
                raise httpcore.WriteTimeout("the request's deadline passed")
            self._inner.write(buffer[start : start + step], wait)

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: Any,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        budget, wait = _deadline_left(timeout)
        if budget is None:
            return _Stream(self._inner.start_tls(ssl_context, server_hostname, timeout))
        if wait is not None and wait <= 0:
            raise httpcore.ConnectTimeout("the request's deadline passed")
        # A handshake is many reads inside one call: past the deadline the socket is
        # shut down under it, which ends the call.
        sock = self._inner.get_extra_info("socket")
        timer = threading.Timer(budget.remaining(), _shut, (sock,))
        timer.daemon = True
        timer.start()
        try:
            return _Stream(self._inner.start_tls(ssl_context, server_hostname, wait))
        except (httpcore.ConnectError, httpcore.ReadError, httpcore.WriteError) as exc:
            if budget.remaining() <= 0:
                budget.exceeded = budget.exceeded or "deadline"
                raise httpcore.ConnectTimeout("the request's deadline passed") from exc
            raise
        finally:
            timer.cancel()

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


def _shut(sock: socket.socket | None) -> None:
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


class _Backend(httpcore.NetworkBackend):
    """httpcore's own backend, its connections wrapped in :class:`_Stream`."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        _, wait = _deadline_left(timeout)
        if wait is not None and wait <= 0:
            raise httpcore.ConnectTimeout("the request's deadline passed")
        return _Stream(self._inner.connect_tcp(host, port, wait, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.NetworkStream:
        _, wait = _deadline_left(timeout)
        if wait is not None and wait <= 0:
            raise httpcore.ConnectTimeout("the request's deadline passed")
        return _Stream(self._inner.connect_unix_socket(path, wait, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def bounded_client(timeout: httpx.Timeout) -> httpx.Client:
    """An httpx client (proxies from the environment as usual) whose connections honour
    the budget of :func:`bounded` at every socket read and write.

    httpx offers no public hook for its network backend: the backend of each of the
    client's connection pools (the direct one and any proxy's) is wrapped in place. A
    pool without one (an httpx that changed) keeps httpx's own reads: then the budget
    is checked per chunk only (:func:`body_chunks`).
    """
    client = httpx.Client(timeout=timeout)
    transports = [client._transport, *client._mounts.values()]  # noqa: SLF001
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if backend is not None and not isinstance(backend, _Backend):
            pool._network_backend = _Backend(backend)  # type: ignore[union-attr]  # noqa: SLF001
    return client
