"""The project's one client for OpenAI-compatible ``/chat/completions`` endpoints.

Used by the LLM judge behind ``oracle()`` (:mod:`.judge`) and by the search's LLM
proposer; it lives at the oracle floor so both can import it (the search may import
the oracle, never the reverse). httpx, synchronous, one endpoint per client:

* chat completions, plain or streamed (server-sent events). A streamed call reports
  progress (tokens so far, seconds, tokens/s) so a slow CPU model is visibly alive,
  and counts content chunks as tokens when the server sends no ``usage`` (llama.cpp
  sends none in a stream; each chunk there is one token);
* a deadline per request (``timeout_s``, whole request, stream included) and a
  connect timeout;
* retries: HTTP 408/409/425/429/5xx, timeouts, broken or unreadable replies are
  retried with exponential backoff (``base * 2**(k-1)`` plus jitter from the caller's
  seeded rng), honouring a numeric ``Retry-After``, up to ``attempts`` requests; any
  other 4xx fails at once (401/403/404 as *fatal*: asking again cannot help). After
  ``max_transport_failures`` requests in a row with no HTTP answer at all (across
  calls) the client gives up with a fatal error;
* usage accounting: tokens and requests per client (:attr:`OpenAIClient.totals`);
* the model listing and the start-up probe (:mod:`.openai_endpoint`).

The API key is sent as a bearer token and nowhere else: it is not in ``repr``, and
every error text is scrubbed of it before it leaves this module (callers that keep
answers scrub them again with their own rules, e.g. the proposer's encoded forms).
"""

from __future__ import annotations

import json
import math
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from monsearch.errors import MonsearchError

from .openai_endpoint import (
    EndpointUnavailableError,
    describe_transport_error,
    model_ids,
    probe_endpoint,
)

__all__ = [
    "RETRY_STATUS",
    "ChatError",
    "ChatReply",
    "OpenAIClient",
    "Progress",
    "RetryPolicy",
]

RETRY_STATUS = frozenset({408, 409, 425, 429})
#: A streamed reply reports progress at most this often (seconds).
PROGRESS_EVERY_S = 0.5


@dataclass(frozen=True)
class RetryPolicy:
    """How many requests one call may make and how long to wait between them."""

    attempts: int = 1
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    #: Requests in a row (across calls) with no HTTP answer before giving up for good.
    max_transport_failures: int | None = None

    def delay(self, attempt: int, rng: random.Random, hint: float | None) -> float:
        base = self.backoff_base_s
        wait = base * (2 ** (attempt - 1)) + rng.uniform(0.0, base)
        if hint is not None:
            wait = max(wait, hint)
        return min(wait, self.backoff_max_s)


@dataclass(frozen=True)
class Progress:
    """A streamed reply so far."""

    tokens: int
    seconds: float

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0


@dataclass
class ChatReply:
    """One completed chat call (after any retries)."""

    text: str | None
    finish_reason: str | None
    #: ``prompt_tokens``/``completion_tokens`` as the server reported them, or None.
    usage: dict[str, int] | None
    requests: int
    retries: int
    seconds: float
    #: Content chunks of a streamed reply (one token each on llama.cpp), else None.
    chunks: int | None = None
    data: dict[str, Any] = field(default_factory=dict, repr=False)


class ChatError(MonsearchError):
    """A chat call that got no usable reply.

    ``kind``: ``"status"`` (a non-retried HTTP status: ``status`` and the server's
    ``message``), ``"transport"`` (``max_transport_failures`` requests in a row got no
    HTTP answer: fatal), ``"exhausted"`` (every attempt failed; ``last`` says how).
    ``fatal``: asking again cannot help (key refused, unknown model or route, dead).
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        status: int | None = None,
        fatal: bool = False,
        transport: bool = False,
        requests: int = 0,
        last: str = "",
        server_message: str = "",
        timed_out: bool = False,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.fatal = fatal
        self.transport = transport
        self.requests = requests
        self.last = last
        self.server_message = server_message
        self.timed_out = timed_out


class _NoAnswer(Exception):
    """A request that got no usable HTTP answer (retried like a transport failure)."""

    def __init__(self, text: str, *, transport: bool, timed_out: bool = False) -> None:
        super().__init__(text)
        self.transport = transport
        self.timed_out = timed_out


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None  # the HTTP-date form: fall back to the own schedule
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def server_message(text: str) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the body's head."""
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        return text[:300]
    inner = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(inner, dict) and inner.get("message"):
        return str(inner["message"])[:300]
    if isinstance(inner, str):
        return inner[:300]
    return text[:300]


class OpenAIClient:
    """Synchronous client of one OpenAI-compatible endpoint (see the module doc).

    ``client``/``sleep`` may be given (tests, a shared connection pool); a client made
    here is closed by :meth:`close`. Thread-safe for the counters; one call at a time
    per thread.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout_s: float = 60.0,
        connect_timeout_s: float = 5.0,
        retry: RetryPolicy = RetryPolicy(),
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._key = api_key or None
        self.timeout_s = float(timeout_s)
        self.connect_timeout_s = float(connect_timeout_s)
        self.retry = retry
        self._http = client
        self._owns = client is None
        self._sleep = sleep
        self._lock = threading.Lock()
        #: Requests in a row (across calls) that got no HTTP answer at all.
        self.transport_failures = 0
        self.totals: dict[str, int] = {
            "calls": 0,
            "requests": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
        }

    def __repr__(self) -> str:  # never the key
        return f"OpenAIClient({self.base_url!r}, key={'set' if self._key else 'none'})"

    # ----------------------------------------------------------------- plumbing

    @property
    def headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        return headers

    def redact(self, text: str) -> str:
        """``text`` without the key (verbatim); callers add their own, stricter scrubs."""
        return text.replace(self._key, "[redacted]") if self._key and len(self._key) >= 4 else text

    def _client(self) -> httpx.Client:
        if self._http is None:
            self._http = httpx.Client(
                timeout=httpx.Timeout(self.timeout_s, connect=self.connect_timeout_s)
            )
        return self._http

    def _timeout(self, total: float) -> httpx.Timeout:
        return httpx.Timeout(total, connect=min(self.connect_timeout_s, total))

    def close(self) -> None:
        if self._owns and self._http is not None:
            self._http.close()
            self._http = None

    def __enter__(self) -> OpenAIClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        # Connections and locks do not pickle; a copy opens its own on first use.
        state = self.__dict__.copy()
        state.update(_http=None, _owns=True, _lock=None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # ----------------------------------------------------------------- models

    def list_models(self, timeout_s: float = 5.0) -> list[str] | None:
        """Model ids at ``GET /models``, or None when the route gives no listing."""
        try:
            response = self._client().get(
                f"{self.base_url}/models", headers=self.headers, timeout=self._timeout(timeout_s)
            )
        except httpx.TransportError:
            return None
        if response.status_code != 200:
            return None
        try:
            return model_ids(response.json())
        except ValueError:
            return None

    def probe(
        self,
        models: Sequence[str],
        *,
        what: str,
        key_hint: str | None = None,
        timeout_s: float = 5.0,
        error: type[MonsearchError] = EndpointUnavailableError,
    ) -> list[str]:
        """One cheap request before any work (see :func:`.openai_endpoint.probe_endpoint`)."""
        try:
            return probe_endpoint(
                self.base_url,
                self.headers,
                models,
                what=what,
                key_hint=key_hint,
                timeout_s=timeout_s,
                client=self._http,
                error=error,
            )
        except MonsearchError as exc:
            raise type(exc)(self.redact(str(exc))) from None

    # ----------------------------------------------------------------- chat

    def chat(
        self,
        body: Mapping[str, Any],
        *,
        stream: bool = False,
        timeout_s: float | None = None,
        rng: random.Random | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        stop_when: Callable[[str], bool] | None = None,
    ) -> ChatReply:
        """POST ``body`` to ``/chat/completions`` (retrying as the policy says).

        ``stream``: ask for server-sent events and assemble them (``on_progress`` is
        called as tokens arrive; ``stop_when(text so far)`` true ends the stream there,
        finish reason ``client_stop``: the connection closes and a server that watches
        for it, as llama.cpp's does, stops writing). Raises :class:`ChatError`.
        """
        policy = self.retry
        rng = rng if rng is not None else random.Random(0)
        total = self.timeout_s if timeout_s is None else float(timeout_s)
        payload = dict(body)
        if stream:
            payload["stream"] = True
            payload.setdefault("stream_options", {"include_usage": True})
        url = f"{self.base_url}/chat/completions"
        where = self.base_url
        last = "no request made"
        only_transport = True
        timed_out = False
        t0 = time.monotonic()
        with self._lock:
            self.totals["calls"] += 1
        for attempt in range(1, policy.attempts + 1):
            hint: float | None = None
            with self._lock:
                self.totals["requests"] += 1
            try:
                if stream:
                    reply = self._stream(url, payload, total, on_progress, stop_when)
                else:
                    reply = self._plain(url, payload, total)
            except httpx.TransportError as exc:
                last = self.redact(describe_transport_error(exc, where))
                timed_out = isinstance(exc, httpx.TimeoutException)
                self._transport_failed(last, attempt)
            except _NoAnswer as exc:
                last = self.redact(str(exc))
                timed_out = exc.timed_out
                if exc.transport:
                    self._transport_failed(last, attempt)
                else:
                    self.transport_failures = 0
                    only_transport = False
            except _Status as exc:
                self.transport_failures = 0
                only_transport = False
                status, text = exc.status, self.redact(exc.text)
                if status in RETRY_STATUS or status >= 500:
                    last = f"HTTP {status} from {where}: {text[:200]}"
                    hint = exc.retry_after
                    timed_out = False
                else:
                    raise ChatError(
                        f"{where} refused the request: HTTP {status}: {text[:300]}",
                        kind="status",
                        status=status,
                        fatal=status in (401, 403, 404),
                        requests=attempt,
                        server_message=server_message(text),
                    ) from None
            else:
                self.transport_failures = 0
                reply.requests, reply.retries = attempt, attempt - 1
                reply.seconds = time.monotonic() - t0
                if reply.usage:
                    with self._lock:
                        self.totals["prompt_tokens"] += reply.usage.get("prompt_tokens", 0)
                        self.totals["completion_tokens"] += reply.usage.get("completion_tokens", 0)
                return reply
            if attempt < policy.attempts:
                self._sleep(policy.delay(attempt, rng, hint))
        raise ChatError(
            f"{where} failed after {policy.attempts} request(s); last: {last}",
            kind="exhausted",
            transport=only_transport,
            requests=policy.attempts,
            last=last,
            timed_out=timed_out,
        )

    def _transport_failed(self, last: str, attempt: int) -> None:
        self.transport_failures += 1
        cap = self.retry.max_transport_failures
        if cap is not None and self.transport_failures >= cap:
            raise ChatError(
                f"{last} ({self.transport_failures} requests in a row got no answer)",
                kind="transport",
                fatal=True,
                transport=True,
                requests=attempt,
                last=last,
            )

    def _plain(self, url: str, payload: dict[str, Any], total: float) -> ChatReply:
        response = self._client().post(
            url, json=payload, headers=self.headers, timeout=self._timeout(total)
        )
        if response.status_code != 200:
            raise _Status(response.status_code, response.text, _retry_after(response))
        try:
            data = response.json()
        except ValueError:
            raise _NoAnswer("HTTP 200 with a body that is not JSON", transport=False) from None
        if not isinstance(data, dict):
            raise _NoAnswer("HTTP 200 with JSON that is not a chat completion", transport=False)
        text, finish = _message(data)
        return ChatReply(text, finish, _usage(data), 0, 0, 0.0, None, data)

    def _stream(
        self,
        url: str,
        payload: dict[str, Any],
        total: float,
        on_progress: Callable[[Progress], None] | None,
        stop_when: Callable[[str], bool] | None = None,
    ) -> ChatReply:
        deadline = time.monotonic() + total
        parts: list[str] = []
        chunks = 0
        finish: str | None = None
        usage: dict[str, int] | None = None
        saw_event = False
        t0 = time.monotonic()
        next_report = t0 + PROGRESS_EVERY_S
        with self._client().stream(
            "POST", url, json=payload, headers=self.headers, timeout=self._timeout(total)
        ) as response:
            if response.status_code != 200:
                response.read()
                raise _Status(response.status_code, response.text, _retry_after(response))
            for line in response.iter_lines():
                now = time.monotonic()
                if now > deadline:
                    raise _NoAnswer(
                        f"no complete answer within {total:g} s at {self.base_url} "
                        f"({chunks} tokens streamed)",
                        transport=True,
                        timed_out=True,
                    )
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    saw_event = True
                    break
                try:
                    event = json.loads(data)
                except (ValueError, RecursionError):
                    continue
                if not isinstance(event, dict):
                    continue
                saw_event = True
                if isinstance(event.get("error"), dict | str):
                    raise _NoAnswer(
                        f"the stream carried an error: {server_message(json.dumps(event))}",
                        transport=False,
                    )
                got = _usage(event)
                if got:
                    usage = got
                for choice in event.get("choices") or ():
                    if not isinstance(choice, dict):
                        continue
                    delta = choice.get("delta") or {}
                    piece = delta.get("content") if isinstance(delta, dict) else None
                    if isinstance(piece, str) and piece:
                        parts.append(piece)
                        chunks += 1
                        # (a fence's backticks are the only way an answer can end early)
                        if stop_when is not None and "`" in piece and stop_when("".join(parts)):
                            finish = "client_stop"
                            break
                    if choice.get("finish_reason"):
                        finish = str(choice["finish_reason"])
                if finish == "client_stop":
                    break
                if on_progress is not None and now >= next_report:
                    next_report = now + PROGRESS_EVERY_S
                    on_progress(Progress(chunks, now - t0))
        if not saw_event:
            raise _NoAnswer("HTTP 200 without any server-sent event", transport=False)
        if on_progress is not None:
            on_progress(Progress(chunks, time.monotonic() - t0))
        text = "".join(parts) if parts else None
        return ChatReply(text, finish, usage, 0, 0, 0.0, chunks)


class _Status(Exception):
    def __init__(self, status: int, text: str, retry_after: float | None) -> None:
        super().__init__(status)
        self.status = status
        self.text = text
        self.retry_after = retry_after


def _message(data: Mapping[str, Any]) -> tuple[str | None, str | None]:
    try:
        choice = data["choices"][0]
    except (KeyError, IndexError, TypeError):
        return None, None
    if not isinstance(choice, dict):
        return None, None
    message = choice.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    finish = choice.get("finish_reason")
    return (content if isinstance(content, str) else None), (
        str(finish) if finish is not None else None
    )


def _usage(data: Mapping[str, Any]) -> dict[str, int] | None:
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return None
    try:
        return {
            "prompt_tokens": int(usage.get("prompt_tokens") or 0),
            "completion_tokens": int(usage.get("completion_tokens") or 0),
        }
    except (TypeError, ValueError):
        return None
