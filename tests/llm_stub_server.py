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

A request with ``"stream": true`` is answered with server-sent events (see
``_Handler._stream``), as real servers do.

``GET /v1/models`` lists ``models`` (key-checked like the chat route), as vLLM, Ollama
and llama.cpp do; the search probes it before its first candidate.

Every request is recorded (method, path, lower-case headers, JSON body).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from loopback_server import LoopbackHTTPServer, LoopbackServer


@dataclass(frozen=True)
class Reply:
    kind: str
    content: str | None = None
    usage: Any = None
    seconds: float = 0.0
    code: int = 200

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


class StubLLMServer(LoopbackServer):
    """``with StubLLMServer() as stub:``; point clients at ``stub.base_url``."""

    handler = _Handler

    def __init__(
        self,
        *,
        api_key: str | None = None,
        default: Reply | None = None,
        models: tuple[str, ...] = (),
    ) -> None:
        self.api_key = api_key
        self.models = models
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

    @property
    def chat_bodies(self) -> list[Any]:
        with self._lock:
            return [r.body for r in self.requests if r.path == "/v1/chat/completions"]
