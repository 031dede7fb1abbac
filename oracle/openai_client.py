"""The project's one client for OpenAI-compatible ``/chat/completions`` endpoints.

Used by the LLM judge behind ``oracle()`` (:mod:`.judge`) and by the search's LLM
proposer; it lives at the oracle floor so both can import it (the search may import
the oracle, never the reverse). httpx, synchronous, one endpoint per client:

* chat completions, plain or streamed (server-sent events). A streamed call reports
  progress (tokens so far, seconds, tokens/s) so a slow CPU model is visibly alive,
  and counts content chunks as tokens when the server sends no ``usage`` (llama.cpp
  sends none in a stream; each chunk there is one token);
* a deadline per request (``timeout_s``): wall-clock time for the whole request,
  from connecting to the last byte, whatever the server's pace (a drip of one byte at a
  time, a connection kept open in silence), enforced at every socket read
  (:mod:`.bounded_http`), and a connect timeout;
* caps on what a reply may be (:class:`ReplyLimits`), counted as the bytes arrive: a
  plain reply's body, a streamed reply's bytes, one line of a stream, an error body;
  and, given ``max_chars``, the answer itself: a stream is closed where its answer
  passes the cap (finish reason ``answer_cap``), not read to its end;
* an answer nothing can decode (not UTF-8, an event that is not JSON, a lone surrogate,
  a compressed body although none was asked for) fails the request with a one-line
  reason, retried like a broken reply;
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
A :class:`ChatError`'s message shows the server's words escaped
(:func:`.openai_endpoint.shown`); its ``last`` and ``server_message`` keep them as sent
(the key only redacted verbatim), for a caller to scrub with its own rules and then
escape.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from monsearch.errors import MonsearchError

from .bounded_http import (
    Budget,
    ReplyCut,
    body_chunks,
    bounded,
    bounded_client,
    refuse_encoded,
    size_text,
)
from .openai_endpoint import (
    MAX_ERROR_BYTES,
    MAX_LISTING_BYTES,
    EndpointUnavailableError,
    describe_transport_error,
    listing_ids,
    probe_endpoint,
    shown,
)

__all__ = [
    "ANSWER_CAP",
    "RETRY_STATUS",
    "ChatError",
    "ChatReply",
    "OpenAIClient",
    "Progress",
    "ReplyLimits",
    "RetryPolicy",
]

RETRY_STATUS = frozenset({408, 409, 425, 429})
#: A streamed reply reports progress at most this often (seconds).
PROGRESS_EVERY_S = 0.5
#: The finish reason of a streamed answer closed where it passed ``max_chars``.
ANSWER_CAP = "answer_cap"
MB = 1024 * 1024
#: Token counts beyond this are a server's nonsense, not usage (they would only
#: overflow the spend).
MAX_TOKENS_REPORTED = 10**9


@dataclass(frozen=True)
class ReplyLimits:
    """What one reply may be, in bytes as they arrive (before any parsing).

    A plain reply is kept whole to parse: ``body_bytes``. A streamed one is read and
    dropped event by event: ``stream_bytes`` bounds its transfer, ``line_bytes`` one
    line (an event). Of an error body, ``error_bytes`` are read, the rest never.
    """

    body_bytes: int = 8 * MB
    stream_bytes: int = 64 * MB
    line_bytes: int = 4 * MB
    error_bytes: int = MAX_ERROR_BYTES


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
    """One completed chat call (after any retries). ``finish_reason`` as the server
    said it, or ``client_stop`` (``stop_when`` ended the stream) or :data:`ANSWER_CAP`."""

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
    #: Body bytes read (of the last request).
    received_bytes: int = 0


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
        super().__init__(shown(message, None))
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
    here is closed by :meth:`close`. A given client's socket reads do not know the
    deadline: it is then checked per chunk only. Thread-safe for the counters; one call at a time
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
        limits: ReplyLimits = ReplyLimits(),
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.limits = limits
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
        # identity: a compressed reply could inflate past every cap before one is checked
        headers = {"Content-Type": "application/json", "Accept-Encoding": "identity"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        return headers

    def redact(self, text: str) -> str:
        """``text`` without the key (verbatim); callers add their own, stricter scrubs."""
        return text.replace(self._key, "[redacted]") if self._key and len(self._key) >= 4 else text

    def _client(self) -> httpx.Client:
        if self._http is None:
            self._http = bounded_client(
                httpx.Timeout(self.timeout_s, connect=self.connect_timeout_s)
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
        """Model ids at ``GET /models`` as the server wrote them (show them through
        :func:`.openai_endpoint.shown`), or None when the route gives no listing in
        ``timeout_s`` (the whole request) and :data:`.openai_endpoint.MAX_LISTING_BYTES`."""
        budget = Budget(timeout_s, MAX_LISTING_BYTES)
        data = bytearray()
        try:
            with (
                bounded(budget, self.base_url),
                self._client().stream(
                    "GET",
                    f"{self.base_url}/models",
                    headers=self.headers,
                    timeout=self._timeout(timeout_s),
                ) as response,
            ):
                if response.status_code != 200:
                    return None
                refuse_encoded(response, self.base_url)
                for chunk in body_chunks(response, budget, MAX_LISTING_BYTES, self.base_url):
                    data += chunk
        except (httpx.TransportError, ReplyCut):
            return None
        return listing_ids(bytes(data))

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
                scrub=self.redact,
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
        max_chars: int | None = None,
    ) -> ChatReply:
        """POST ``body`` to ``/chat/completions`` (retrying as the policy says).

        ``stream``: ask for server-sent events and assemble them (``on_progress`` is
        called as tokens arrive; ``stop_when(text so far)`` true ends the stream there,
        finish reason ``client_stop``: the connection closes and a server that watches
        for it, as llama.cpp's does, stops writing). ``max_chars``: a streamed answer
        longer than this is closed there, its text the first ``max_chars`` characters
        and a little more, finish reason :data:`ANSWER_CAP` (a plain reply arrives whole
        within :attr:`ReplyLimits.body_bytes`; its text is returned as it is). Each
        request has ``timeout_s`` (default the client's) of wall-clock time in all.
        Raises :class:`ChatError`.
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
                try:
                    if stream:
                        reply = self._stream(url, payload, total, on_progress, stop_when, max_chars)
                    else:
                        reply = self._plain(url, payload, total)
                except ReplyCut as exc:
                    raise _NoAnswer(
                        str(exc), transport=exc.timed_out, timed_out=exc.timed_out
                    ) from None
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
                    said = server_message(text)
                    raise ChatError(
                        f"{where} refused the request: HTTP {status}: {said}",
                        kind="status",
                        status=status,
                        fatal=status in (401, 403, 404),
                        requests=attempt,
                        server_message=said,
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
        where = self.base_url
        limits = self.limits
        budget = Budget(total, limits.body_bytes)
        data = bytearray()
        with (
            bounded(budget, where),
            self._client().stream(
                "POST", url, json=payload, headers=self.headers, timeout=self._timeout(total)
            ) as response,
        ):
            if response.status_code != 200:
                raise self._status(response, budget)
            refuse_encoded(response, where)
            for chunk in body_chunks(response, budget, limits.body_bytes, where):
                data += chunk
        try:
            body = json.loads(bytes(data).decode("utf-8-sig"))
        except UnicodeDecodeError as exc:
            raise _NoAnswer(
                f"HTTP 200 with a body that is not valid UTF-8 (at byte {exc.start:,})",
                transport=False,
            ) from None
        except (ValueError, RecursionError):
            raise _NoAnswer("HTTP 200 with a body that is not JSON", transport=False) from None
        if not isinstance(body, dict):
            raise _NoAnswer("HTTP 200 with JSON that is not a chat completion", transport=False)
        text, finish = _message(body)
        _refuse_surrogates(text, where)
        reply = ChatReply(text, finish, _usage(body), 0, 0, 0.0, None, body)
        reply.received_bytes = len(data)
        return reply

    def _status(self, response: httpx.Response, budget: Budget) -> _Status:
        """A non-200 reply as :class:`_Status`, its body read up to the error cap."""
        data = bytearray()
        with contextlib.suppress(ReplyCut):
            for chunk in body_chunks(response, budget, self.limits.error_bytes, self.base_url):
                data += chunk
        text = bytes(data).decode("utf-8", errors="replace")
        return _Status(response.status_code, text, _retry_after(response))

    def _stream(
        self,
        url: str,
        payload: dict[str, Any],
        total: float,
        on_progress: Callable[[Progress], None] | None,
        stop_when: Callable[[str], bool] | None = None,
        max_chars: int | None = None,
    ) -> ChatReply:
        where = self.base_url
        limits = self.limits
        budget = Budget(total, limits.stream_bytes)
        parts: list[str] = []
        chars = 0
        chunks = 0
        finish: str | None = None
        usage: dict[str, int] | None = None
        saw_event = False
        t0 = time.monotonic()
        next_report = t0 + PROGRESS_EVERY_S
        with (
            bounded(budget, where),
            self._client().stream(
                "POST", url, json=payload, headers=self.headers, timeout=self._timeout(total)
            ) as response,
        ):
            if response.status_code != 200:
                raise self._status(response, budget)
            refuse_encoded(response, where)
            body = body_chunks(response, budget, limits.stream_bytes, where)
            for raw in _lines(body, limits.line_bytes, where):
                if not raw.startswith(b"data:"):
                    continue  # comments (keep-alives), event names, blank separators
                try:
                    data = raw[5:].decode("utf-8").strip()
                except UnicodeDecodeError as exc:
                    raise _NoAnswer(
                        f"the stream from {where} is not valid UTF-8 (an event's byte "
                        f"{exc.start + 5:,})",
                        transport=False,
                    ) from None
                if data == "[DONE]":
                    saw_event = True
                    break
                if not data:
                    continue
                try:
                    event = json.loads(data)
                except (ValueError, RecursionError):
                    raise _NoAnswer(
                        f"an event of the stream from {where} is not JSON "
                        f"({len(data):,} characters)",
                        transport=False,
                    ) from None
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
                        _refuse_surrogates(piece, where)
                        parts.append(piece)
                        chars += len(piece)
                        chunks += 1
                        if max_chars is not None and chars > max_chars:
                            finish = ANSWER_CAP  # closed here: the rest is never read
                            break
                        # (a fence's backticks are the only way an answer can end early)
                        if stop_when is not None and "`" in piece and stop_when("".join(parts)):
                            finish = "client_stop"
                            break
                    if choice.get("finish_reason"):
                        finish = shown(str(choice["finish_reason"]), 40)
                if finish in ("client_stop", ANSWER_CAP):
                    break
                now = time.monotonic()
                if on_progress is not None and now >= next_report:
                    next_report = now + PROGRESS_EVERY_S
                    on_progress(Progress(chunks, now - t0))
        if not saw_event:
            raise _NoAnswer("HTTP 200 without any server-sent event", transport=False)
        if on_progress is not None:
            on_progress(Progress(chunks, time.monotonic() - t0))
        text = "".join(parts) if parts else None
        reply = ChatReply(text, finish, usage, 0, 0, 0.0, chunks)
        reply.received_bytes = budget.received
        return reply


def _lines(chunks: Iterator[bytes], cap: int, where: str) -> Iterator[bytes]:
    """The lines of a byte stream (without their ``\\n`` or ``\\r\\n``), in time linear
    in its size; a line longer than ``cap`` bytes raises :class:`ReplyCut` as soon as
    it is, its bytes not kept."""
    pending = bytearray()
    for chunk in chunks:
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if pending:
                pending += chunk[start:end]
                line = bytes(pending)
                pending.clear()
            else:
                line = chunk[start:end]
            if len(line) > cap:
                break
            yield line[:-1] if line.endswith(b"\r") else line
            start = end + 1
        else:
            pending += chunk[start:]
            if len(pending) <= cap:
                continue
        raise ReplyCut(
            f"a line of the stream from {where} passed {size_text(cap)} without a newline",
            "line",
        )
    if pending:
        yield bytes(pending)


def _refuse_surrogates(text: str | None, where: str) -> None:
    """A text that cannot be written as UTF-8 (a lone surrogate, from a JSON escape such
    as ``\\ud800``) ends the request: kept, it would break every file and terminal
    it reaches."""
    if text is None:
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _NoAnswer(
            f"the answer from {where} holds a lone surrogate "
            f"({ascii(text[exc.start])[1:-1]} at character {exc.start:,}): not valid Unicode",
            transport=False,
        ) from None


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
        shown(str(finish), 40) if finish is not None else None
    )


def _usage(data: Mapping[str, Any]) -> dict[str, int] | None:
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return None
    try:
        counts = {
            "prompt_tokens": int(usage.get("prompt_tokens") or 0),
            "completion_tokens": int(usage.get("completion_tokens") or 0),
        }
    except (TypeError, ValueError, OverflowError):  # OverflowError: a JSON Infinity
        return None
    return {k: min(max(v, 0), MAX_TOKENS_REPORTED) for k, v in counts.items()}
