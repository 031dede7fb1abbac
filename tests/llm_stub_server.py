"""A scripted OpenAI-compatible ``/v1/chat/completions`` server for the LLM proposer tests.

Real HTTP on 127.0.0.1 (ephemeral port, a daemon thread); the real request and
response JSON shapes (``choices[0].message.content``, ``usage``, OpenAI error
bodies). Each chat request consumes the next scripted :class:`Reply` (then
``default``). Replies:

``Reply.text(content, usage=None)``  200 with that content; ``usage=(p, c)`` or None for
                                     a chars/4 count, ``usage=False`` to omit it
``Reply.null()``                     200 with ``message.content`` null
``Reply.status(code, message=None)`` HTTP ``code`` with an OpenAI-style error body (its
                                     message ``message``, else "scripted HTTP <code>")
``Reply.garbage()``                  HTTP 200 whose body is not JSON
``Reply.delay(s, content)``          sleep ``s`` seconds, then answer ``content``
``Reply.hangup()``                   close the connection without a reply
``Reply.echo_auth(template)``        ``template`` with ``{auth}`` replaced by the request's
                                     Authorization header (a server leaking the key)

Hostile servers (each also answers ``GET /v1/models`` when given as ``models_reply``);
they go on until the client leaves, ``lasting_s`` passes or ``limit_bytes`` are sent,
and record what they sent (:attr:`StubLLMServer.hostile`, :meth:`wait_hostile`):

``Reply.drip(every_s, phase=)``      one byte every ``every_s`` seconds, never a newline:
                                     of the status line (``phase="headers"``) or of the
                                     body after the headers (``"body"``)
``Reply.silent(phase=)``             nothing at all (``"headers"``), or the headers and
                                     then nothing (``"body"``), the connection kept open
``Reply.endless_line()``             ``data: aaaa...`` without a newline
``Reply.endless_stream(prefix, piece, content=True)``  well-formed events: ``prefix`` in
                                     4-character chunks, then ``piece`` for ever
                                     (``content=False``: events without any content)
``Reply.endless_body()``             a JSON body that never ends (``[[[[...``)
``Reply.raw(body, content_type=, headers=, code=200)``  HTTP ``code`` with exactly these
                                     bytes

A request with ``"stream": true`` is answered with server-sent events (see
``_Handler._stream``), as real servers do.

``GET /v1/models`` lists ``models`` (key-checked like the chat route), as vLLM, Ollama
and llama.cpp do; the search probes it before its first candidate.

Every request is recorded (method, path, lower-case headers, JSON body).
"""

from __future__ import annotations

import itertools
import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from loopback_server import LoopbackHTTPServer, LoopbackServer

#: What a hostile reply sends at most when the client never leaves.
HOSTILE_LIMIT_BYTES = 256 * 1024 * 1024
HOSTILE_LASTING_S = 60.0


@dataclass(frozen=True)
class Reply:
    kind: str
    content: str | None = None
    usage: Any = None
    seconds: float = 0.0
    code: int = 200
    phase: str = "body"
    piece: str = ""
    data: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    limit_bytes: int = HOSTILE_LIMIT_BYTES
    lasting_s: float = HOSTILE_LASTING_S

    @classmethod
    def text(cls, content: str, usage: tuple[int, int] | None | bool = None) -> Reply:
        return cls("text", content, usage)

    @classmethod
    def null(cls) -> Reply:
        return cls("null")

    @classmethod
    def status(cls, code: int, message: str | None = None) -> Reply:
        return cls("status", message, code=code)

    @classmethod
    def garbage(cls) -> Reply:
        return cls("garbage")

    @classmethod
    def delay(cls, seconds: float, content: str = "Idea: late") -> Reply:
        return cls("delay", content, seconds=seconds)

    @classmethod
    def hangup(cls) -> Reply:
        return cls("hangup")

    @classmethod
    def echo_auth(cls, template: str) -> Reply:
        return cls("echo_auth", template)

    @classmethod
    def drip(
        cls, every_s: float, *, phase: str = "body", lasting_s: float = HOSTILE_LASTING_S
    ) -> Reply:
        return cls("drip", seconds=every_s, phase=phase, lasting_s=lasting_s)

    @classmethod
    def silent(cls, *, phase: str = "body", lasting_s: float = HOSTILE_LASTING_S) -> Reply:
        return cls("silent", phase=phase, lasting_s=lasting_s)

    @classmethod
    def endless_line(cls, limit_bytes: int = HOSTILE_LIMIT_BYTES) -> Reply:
        return cls("endless_line", limit_bytes=limit_bytes)

    @classmethod
    def endless_stream(
        cls,
        prefix: str = "",
        piece: str = "<think>",
        *,
        content: bool = True,
        limit_bytes: int = HOSTILE_LIMIT_BYTES,
    ) -> Reply:
        kind = "endless_stream" if content else "endless_empty_stream"
        return cls(kind, prefix, piece=piece, limit_bytes=limit_bytes)

    @classmethod
    def endless_body(cls, limit_bytes: int = HOSTILE_LIMIT_BYTES) -> Reply:
        return cls("endless_body", limit_bytes=limit_bytes)

    @classmethod
    def raw(
        cls,
        body: bytes,
        content_type: str = "application/json",
        headers: tuple[tuple[str, str], ...] = (),
        code: int = 200,
    ) -> Reply:
        return cls("raw", data=body, headers=(("Content-Type", content_type), *headers), code=code)


#: The kinds :meth:`_Handler._hostile` answers.
HOSTILE = frozenset(
    {"drip", "silent", "endless_line", "endless_stream", "endless_empty_stream",
     "endless_body", "raw"}
)  # fmt: skip


@dataclass(frozen=True)
class HostileRecord:
    """What one hostile reply did: bytes sent, and whether the client left first."""

    kind: str
    sent: int
    client_left: bool


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackHTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep stderr quiet
        pass

    def _send(self, status: int, body: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeouts)
            pass

    def _error(self, status: int, message: str, kind: str) -> None:
        body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
        self._send(status, json.dumps(body).encode())

    def do_GET(self) -> None:
        stub = self.server.stub
        headers = {k.lower(): v for k, v in self.headers.items()}
        stub._record(RecordedRequest("GET", self.path, headers, None))
        if self.path != "/v1/models":
            return self._error(404, f"no route {self.path}", "invalid_request_error")
        if stub.api_key is not None and headers.get("authorization") != f"Bearer {stub.api_key}":
            return self._error(401, "Incorrect API key provided", "invalid_request_error")
        if stub.models_reply is not None:
            return self._hostile(stub.models_reply, None)
        data = [{"id": m, "object": "model", "owned_by": "stub"} for m in stub.models]
        self._send(200, json.dumps({"object": "list", "data": data}).encode())
        return None

    def do_POST(self) -> None:
        stub = self.server.stub
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        stub._record(RecordedRequest("POST", self.path, headers, body))
        if self.path != "/v1/chat/completions":
            return self._error(404, f"no route {self.path}", "invalid_request_error")
        if stub.api_key is not None and headers.get("authorization") != f"Bearer {stub.api_key}":
            return self._error(401, "Incorrect API key provided", "invalid_request_error")
        if not isinstance(body, dict) or "model" not in body or "messages" not in body:
            return self._error(400, "model and messages are required", "invalid_request_error")
        reply = stub._next()
        if reply.kind in HOSTILE:
            return self._hostile(reply, body)
        if reply.kind == "status":
            message = reply.content or f"scripted HTTP {reply.code}"
            return self._error(reply.code, message, "server_error")
        if reply.kind == "garbage":
            return self._send(200, b"<html>upstream proxy error</html>")
        if reply.kind == "hangup":
            self.close_connection = True
            return None
        if reply.kind == "delay":
            time.sleep(reply.seconds)
        content = reply.content
        if reply.kind == "null":
            content = None
        elif reply.kind == "echo_auth":
            content = (reply.content or "").replace("{auth}", headers.get("authorization", ""))
        prompt_chars = sum(len(str(m.get("content", ""))) for m in body["messages"])
        if body.get("stream"):
            return self._stream(body, reply, content, prompt_chars)
        response: dict[str, Any] = {
            "id": f"chatcmpl-stub-{len(stub.requests)}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
        }
        if reply.usage is not False:
            p, c = reply.usage if reply.usage else (prompt_chars // 4, len(content or "") // 4)
            response["usage"] = {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
        self._send(200, json.dumps(response).encode())


    def _stream(self, body: dict[str, Any], reply: Reply, content: str | None, chars: int) -> None:
        """Server-sent events as OpenAI-compatible servers send them: a role chunk, one
        chunk per 4 characters of content, a finish chunk, ``usage`` when asked for
        (``stream_options.include_usage``) and not scripted away, then ``[DONE]``."""
        base = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "model": body["model"]}

        def event(choices: list[Any], **extra: Any) -> bytes:
            return b"data: " + json.dumps({**base, "choices": choices, **extra}).encode() + b"\n\n"

        events = [event([{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}])]
        text = content or ""
        for i in range(0, len(text), 4):
            piece = {"index": 0, "delta": {"content": text[i : i + 4]}, "finish_reason": None}
            events.append(event([piece]))
        events.append(event([{"index": 0, "delta": {}, "finish_reason": "stop"}]))
        wants = (body.get("stream_options") or {}).get("include_usage")
        if wants and reply.usage is not False:
            p, c = reply.usage if reply.usage else (chars // 4, len(text) // 4)
            usage = {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
            events.append(event([], usage=usage))
        events.append(b"data: [DONE]\n\n")
        payload = b"".join(events)
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass


    # ------------------------------------------------------------------ hostile replies

    def _hostile(self, reply: Reply, body: Any) -> None:
        """Send ``reply``'s shape until the client leaves or the reply's own limits."""
        self.close_connection = True
        sent = 0
        left = False
        until = time.monotonic() + reply.lasting_s

        def send(data: bytes) -> None:
            nonlocal sent
            self.wfile.write(data)
            self.wfile.flush()
            sent += len(data)

        def head(content_type: str) -> bytes:
            return (
                f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\n"
                "Connection: close\r\n\r\n"
            ).encode()

        stream = isinstance(body, dict) and bool(body.get("stream"))
        kind_type = "text/event-stream" if stream else "application/json"
        try:
            if reply.kind == "raw":
                extra = "".join(f"{k}: {v}\r\n" for k, v in reply.headers)
                send(
                    f"HTTP/1.1 {reply.code} X\r\n{extra}Content-Length: {len(reply.data)}\r\n"
                    "Connection: close\r\n\r\n".encode()
                    + reply.data
                )
            elif reply.kind == "drip":
                if reply.phase == "headers":
                    drops: Iterable[int] = head(kind_type)
                else:
                    send(head(kind_type))
                    drops = itertools.chain(b"data: ", itertools.repeat(ord("x")))
                for byte in drops:
                    if time.monotonic() > until:
                        break
                    send(bytes((byte,)))
                    time.sleep(reply.seconds)
            elif reply.kind == "silent":
                if reply.phase != "headers":
                    send(head(kind_type))
                left = self._wait_for_leave(until)
            else:
                send(head(kind_type))
                for chunk in _endless(reply, body):
                    if sent >= reply.limit_bytes or time.monotonic() > until:
                        break
                    send(chunk)
        except (BrokenPipeError, ConnectionResetError):
            left = True
        self.server.stub._record_hostile(HostileRecord(reply.kind, sent, left))

    def _wait_for_leave(self, until: float) -> bool:
        """True once the client closes its end (before ``until``)."""
        sock = self.connection
        while time.monotonic() < until:
            readable, _, _ = select.select([sock], [], [], 0.1)
            if readable:
                try:
                    if not sock.recv(1, socket.MSG_PEEK):
                        return True
                except OSError:
                    return True
                time.sleep(0.1)  # data pending from the client: not a close
        return False


def _endless(reply: Reply, body: Any) -> Iterator[bytes]:
    """The chunks (about 64 KB each) of an endless body of ``reply``'s kind."""
    model = body.get("model", "m") if isinstance(body, dict) else "m"
    if reply.kind == "endless_line":
        yield b"data: "
        chunk = b"a" * 65536
        while True:
            yield chunk
    if reply.kind == "endless_body":
        chunk = b"[" * 65536
        while True:
            yield chunk

    def event(delta: dict[str, Any]) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": None}
        data = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "model": model,
                "choices": [choice]}  # fmt: skip
        return b"data: " + json.dumps(data).encode() + b"\n\n"

    yield event({"role": "assistant"})
    text = reply.content or ""
    if text:
        yield b"".join(event({"content": text[i : i + 4]}) for i in range(0, len(text), 4))
    one = event({"content": reply.piece} if reply.kind == "endless_stream" else {})
    chunk = one * max(1, 65536 // len(one))
    while True:
        yield chunk


class StubLLMServer(LoopbackServer):
    """``with StubLLMServer() as stub:``; point clients at ``stub.base_url``."""

    handler = _Handler

    def __init__(
        self,
        *,
        api_key: str | None = None,
        default: Reply | None = None,
        models: tuple[str, ...] = (),
        models_reply: Reply | None = None,
    ) -> None:
        self.api_key = api_key
        self.models = models
        #: A hostile reply to ``GET /v1/models`` instead of the listing.
        self.models_reply = models_reply
        self.hostile: list[HostileRecord] = []
        self._hostile_done = threading.Condition()
        self.default = default or Reply.text("I would not change anything.")
        self.requests: list[RecordedRequest] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def _next(self) -> Reply:
        with self._lock:
            return self._replies.popleft() if self._replies else self.default

    def _record(self, req: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(req)

    def _record_hostile(self, record: HostileRecord) -> None:
        with self._hostile_done:
            self.hostile.append(record)
            self._hostile_done.notify_all()

    def wait_hostile(self, n: int = 1, timeout: float = 120.0) -> list[HostileRecord]:
        """The first ``n`` hostile replies' records, once each has ended (the client
        left, or the reply's own limit); raises AssertionError after ``timeout``."""
        with self._hostile_done:
            ok = self._hostile_done.wait_for(lambda: len(self.hostile) >= n, timeout)
            assert ok, f"{len(self.hostile)} of {n} hostile replies ended in {timeout} s"
            return list(self.hostile[:n])

    @property
    def chat_bodies(self) -> list[Any]:
        with self._lock:
            return [r.body for r in self.requests if r.path == "/v1/chat/completions"]
