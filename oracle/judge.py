"""A live judge behind any OpenAI-compatible ``/chat/completions`` endpoint (vLLM, Ollama,
llama.cpp, hosted APIs), called with httpx.

One judgement = one user message (see :mod:`.prompt`), temperature 0,
``response_format={"type": "json_object"}``. Two independent retry loops:

* transport: HTTP 408/409/425/429/5xx, timeouts and connection errors are retried
  with exponential backoff (``base * 2**(k-1)`` plus jitter ``U(0, base)`` from a
  seeded RNG, honouring a numeric ``Retry-After``, each wait capped at ``backoff_max_s``)
  up to ``http_attempts`` requests; other 4xx fail at once.
* output: the reply is parsed (``json.loads``, else the first ``{...}`` that parses)
  and validated; an invalid reply gets a corrective follow-up turn, up to
  ``output_attempts`` replies in total.

A dead judge costs little: connecting times out after ``connect_timeout_s``, and
after ``max_transport_failures`` requests in a row that got no HTTP answer at all
(refused, unreachable, timed out, hung up) a :class:`ChatJudge` gives up with a
*fatal* error, so the oracle session stops calling it. Every error names the
endpoint (``connection refused at http://127.0.0.1:8000/v1``).
:func:`probe_judge` checks an endpoint with one cheap request before any work.
"""

from __future__ import annotations

import json
import math
import os
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from monsearch.errors import MonsearchError

from .openai_client import ChatError, OpenAIClient, RetryPolicy
from .openai_endpoint import probe_endpoint, shown

DEFAULT_BASE_URL = "https://api.openai.com/v1"
ENV_BASE_URL = "MONSEARCH_JUDGE_BASE_URL"
ENV_MODEL = "MONSEARCH_JUDGE_MODEL"
ENV_API_KEYS = ("MONSEARCH_JUDGE_API_KEY", "OPENAI_API_KEY")

CORRECTIVE_FOLLOW_UP = (
    "That reply could not be used: {problem}. Send the verdict again as one complete JSON "
    "object with every requested key (is_failure, stealth_score, dimension, reason, "
    "confidence, reasoning), values in range, and no text outside the object."
)


class OracleConfigError(MonsearchError):
    """The oracle is configured wrongly (missing model, bad cap, unknown backend...)."""


class JudgeError(MonsearchError):
    """A judge call failed; the session turns it into a ``None`` answer and records it.

    The counters say what the failed call still spent, for cost accounting.
    """

    fatal = False  # True: retrying later cannot help (bad key, unknown model, wrong URL)
    http_requests = 0
    prompt_tokens = 0
    completion_tokens = 0


class JudgeHTTPError(JudgeError):
    """The endpoint refused, failed or could not be reached (``transport``: no HTTP answer)."""

    def __init__(
        self,
        message: str,
        status: int | None = None,
        fatal: bool = False,
        *,
        transport: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.fatal = fatal
        self.transport = transport


class JudgeUnavailableError(OracleConfigError):
    """:func:`probe_judge` found the endpoint unusable before any work started (exit 2)."""


class JudgeOutputError(JudgeError):
    """The judge kept answering with output that is not a valid verdict."""


@dataclass(frozen=True)
class LLMJudgeConfig:
    """How to reach the judge. Unset fields come from the environment in :meth:`resolved`.

    ``judges`` adds named judge models a program may select as a variant
    (``oracle(traj, "second")`` with ``judges={"second": "other/model"}``).
    Prices (USD per million tokens) are optional; without them ``cost()`` reports
    tokens only. ``connect_timeout_s`` bounds each connection attempt (``timeout_s``
    each whole request); ``max_transport_failures`` requests in a row without any
    HTTP answer make the judge give up for good (a fatal error).
    """

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    judges: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 120.0
    connect_timeout_s: float = 5.0
    max_transport_failures: int = 3
    max_tokens: int = 4096
    json_mode: bool = True
    output_attempts: int = 3
    http_attempts: int = 8
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    seed: int = 0
    usd_per_mtok_in: float | None = None
    usd_per_mtok_out: float | None = None

    def resolved(self, env: Mapping[str, str] | None = None) -> LLMJudgeConfig:
        """Fill model / base URL / key from the environment and validate."""
        env = os.environ if env is None else env
        model = self.model or env.get(ENV_MODEL) or None
        if not model:
            raise OracleConfigError(
                f"the llm oracle needs a judge model: set {ENV_MODEL} or configure one"
            )
        base_url = (self.base_url or env.get(ENV_BASE_URL) or DEFAULT_BASE_URL).rstrip("/")
        if not base_url.startswith(("http://", "https://")):
            raise OracleConfigError(f"judge base URL must be http(s): {base_url!r}")
        api_key = self.api_key
        if api_key is None:
            api_key = next((env[k] for k in ENV_API_KEYS if env.get(k)), None)
        if self.output_attempts < 1 or self.http_attempts < 1 or self.max_transport_failures < 1:
            raise OracleConfigError("judge attempts and max_transport_failures must be at least 1")
        if (
            self.timeout_s <= 0
            or self.connect_timeout_s <= 0
            or self.backoff_base_s < 0
            or self.backoff_max_s < 0
        ):
            raise OracleConfigError("judge timeouts must be positive and backoff non-negative")
        return replace(self, model=model, base_url=base_url, api_key=api_key)


@dataclass(frozen=True, slots=True)
class JudgeAnswer:
    """A validated verdict, as the judge gave it."""

    is_failure: bool
    stealth_score: float
    confidence: float
    dimension: str
    reason: str
    reasoning: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "is_failure": self.is_failure,
            "stealth_score": self.stealth_score,
            "confidence": self.confidence,
            "dimension": self.dimension,
            "reason": self.reason,
            "reasoning": self.reasoning,
        }


@dataclass(frozen=True, slots=True)
class JudgeResult:
    answer: JudgeAnswer
    raw: str
    model: str
    output_attempts: int  # replies received, the accepted one included
    http_requests: int
    http_retries: int
    prompt_tokens: int
    completion_tokens: int


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The verdict object in a reply: the whole text as JSON, else the first ``{...}`` that parses."""
    text = text.strip()
    try:
        whole = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        whole = None
    if isinstance(whole, dict):
        return whole
    # raw_decode from each "{" respects strings, so braces inside values cannot confuse it.
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            obj, _ = decoder.raw_decode(text, start)
        except (json.JSONDecodeError, RecursionError):
            obj = None
        if isinstance(obj, dict):
            return obj
        start = text.find("{", start + 1)
    return None


def _as_bool(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(f"{name} must be true or false, got {value!r}")


def _as_unit(value: Any, name: str) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must lie in [0, 1], got {value!r}")
    return float(value)


def _as_text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string, got {type(value).__name__}")
    return value


def validate_verdict(obj: Any) -> JudgeAnswer:
    """Check fields and ranges; raise ``ValueError`` naming the first problem."""
    if not isinstance(obj, dict):
        raise ValueError("no JSON object found in the reply")
    missing = [
        k
        for k in ("is_failure", "stealth_score", "dimension", "reason", "confidence")
        if k not in obj
    ]
    if missing:
        raise ValueError(f"missing keys: {', '.join(missing)}")
    reasoning = obj.get("reasoning")
    if reasoning is not None:
        reasoning = _as_text(reasoning, "reasoning")
    return JudgeAnswer(
        is_failure=_as_bool(obj["is_failure"], "is_failure"),
        stealth_score=_as_unit(obj["stealth_score"], "stealth_score"),
        confidence=_as_unit(obj["confidence"], "confidence"),
        dimension=_as_text(obj["dimension"], "dimension"),
        reason=_as_text(obj["reason"], "reason"),
        reasoning=reasoning,
    )


def _headers(config: LLMJudgeConfig) -> dict[str, str]:
    headers = {"Content-Type": "application/json"}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    return headers


class ChatJudge:
    """Synchronous client for one judge endpoint. Create it in the process that uses it.

    The HTTP side (timeouts, retries, Retry-After, the transport-failure count) is the
    project's shared :class:`~.openai_client.OpenAIClient`; this class adds the verdict
    format and its corrective follow-ups.
    """

    def __init__(
        self,
        config: LLMJudgeConfig,
        *,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.config = config.resolved()
        cfg = self.config
        assert cfg.base_url is not None
        self._api = OpenAIClient(
            cfg.base_url,
            cfg.api_key,
            timeout_s=cfg.timeout_s,
            connect_timeout_s=min(cfg.connect_timeout_s, cfg.timeout_s),
            retry=RetryPolicy(
                attempts=cfg.http_attempts,
                backoff_base_s=cfg.backoff_base_s,
                backoff_max_s=cfg.backoff_max_s,
                max_transport_failures=cfg.max_transport_failures,
            ),
            client=client,
            sleep=sleep,
        )
        self.url = f"{cfg.base_url}/chat/completions"

    @property
    def transport_failures(self) -> int:
        """Requests in a row (across calls) that got no HTTP answer at all."""
        return self._api.transport_failures

    @property
    def _client(self) -> httpx.Client:
        """The HTTP connection pool (its timeouts are the config's)."""
        return self._api._client()

    def close(self) -> None:
        self._api.close()

    def _post(self, body: dict[str, Any], rng: random.Random) -> tuple[dict[str, Any], int, int]:
        """One completion with transport retries: (response JSON, requests made, retries)."""
        where = self.config.base_url
        try:
            reply = self._api.chat(body, rng=rng)
        except ChatError as exc:
            if exc.kind == "transport":
                error = JudgeHTTPError(
                    f"judge unreachable: {exc}", fatal=True, transport=True
                )
            elif exc.kind == "status":
                error = JudgeHTTPError(
                    f"judge endpoint {exc}", status=exc.status, fatal=exc.fatal
                )
            else:
                error = JudgeHTTPError(
                    f"judge endpoint {where} failed after {exc.requests} requests; "
                    f"last: {shown(exc.last)}",  # the server's words, escaped
                    transport=exc.transport,
                )
            error.http_requests = exc.requests
            raise error from None
        return reply.data, reply.requests, reply.retries

    def judge(
        self, prompt: str, *, model: str | None = None, rng: random.Random | None = None
    ) -> JudgeResult:
        """Ask for a verdict on ``prompt``; raise :class:`JudgeError` when none can be had."""
        cfg = self.config
        model = model or cfg.model
        assert model is not None
        rng = rng if rng is not None else random.Random(cfg.seed)
        messages: list[dict[str, str]] = [{"role": "user", "content": prompt}]
        requests = retries = p_tok = c_tok = 0
        problem = "no reply"
        for attempt in range(1, cfg.output_attempts + 1):
            body: dict[str, Any] = {
                "model": model,
                "messages": messages,
                "temperature": 0,
                "max_tokens": cfg.max_tokens,
            }
            if cfg.json_mode:
                body["response_format"] = {"type": "json_object"}
            try:
                data, n_req, n_retry = self._post(body, rng)
            except JudgeError as exc:
                exc.http_requests += requests
                exc.prompt_tokens, exc.completion_tokens = p_tok, c_tok
                raise
            requests += n_req
            retries += n_retry
            usage = data.get("usage") if isinstance(data, dict) else None
            if isinstance(usage, dict):
                p_tok += int(usage.get("prompt_tokens") or 0)
                c_tok += int(usage.get("completion_tokens") or 0)
            raw = _reply_text(data)
            try:
                if raw is None:
                    raise ValueError("the response carried no message content")
                answer = validate_verdict(parse_json_object(raw))
            except ValueError as exc:
                problem = str(exc)
                messages = [
                    *messages,
                    {"role": "assistant", "content": raw or ""},
                    {"role": "user", "content": CORRECTIVE_FOLLOW_UP.format(problem=problem)},
                ]
                continue
            return JudgeResult(answer, raw, model, attempt, requests, retries, p_tok, c_tok)
        error = JudgeOutputError(
            f"judge {model} at {cfg.base_url} gave no valid verdict in {cfg.output_attempts} "
            f"replies; last problem: {problem}"
        )
        error.http_requests, error.prompt_tokens, error.completion_tokens = requests, p_tok, c_tok
        raise error


def _reply_text(data: Any) -> str | None:
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    return content if isinstance(content, str) else None


def probe_judge(
    config: LLMJudgeConfig,
    *,
    timeout_s: float = 10.0,
    client: httpx.Client | None = None,
) -> list[str]:
    """Check with one cheap request that the judge endpoint answers; return warnings.

    ``GET {base}/models`` (no tokens spent); where that route does not exist, a
    one-token chat completion. Raises :class:`JudgeUnavailableError`, naming the
    endpoint and the reason, when nothing answers, the key is refused, or the base
    URL is wrong. A model missing from the listing is only a warning: some
    servers list aliases or nothing at all.
    """
    cfg = config.resolved()
    return probe_endpoint(
        cfg.base_url,
        _headers(cfg),
        [cfg.model, *cfg.judges.values()],
        what="the judge",
        key_hint=None if cfg.api_key else f"no API key: set {ENV_API_KEYS[0]} or {ENV_API_KEYS[1]}",
        timeout_s=min(timeout_s, cfg.timeout_s),
        client=client,
        error=JudgeUnavailableError,
    )
