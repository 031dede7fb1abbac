"""The LLM proposer: asks any OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp,
hosted APIs) for a child of the parent program, with weighted model ensembles.

Calls go through openevolve's :class:`~openevolve.llm.ensemble.LLMEnsemble` of
:class:`~openevolve.llm.openai.OpenAILLM` clients, with its pitfalls avoided
(``shared/research/openevolve-0.4.0.md`` §10): the model is drawn from the
proposal's ``rng`` (not the ensemble's own constant-seeded generator), the
``seed`` sent to the server is drawn from the same ``rng`` (so a seed-honouring
server answers reproducibly per candidate without giving every candidate the
same answer), and the SDK's own retries are switched off so ``retries`` means
what it says and a dead endpoint costs ``(retries + 1) * timeout`` at most.

Every failure is a :class:`Proposal` with ``source=None`` and an ``error``, never
an exception: a malformed answer, a child failing the sandbox's static check, an
HTTP error, a refused connection, a timeout. Endpoint failures in a row are
counted (:attr:`LLMProposer.consecutive_failures`); :attr:`LLMProposer.endpoint_dead`
tells the loop to stop asking. The API key is never logged, repr'd, written by
:meth:`LLMProposerConfig.to_dict`, or kept in a proposal: answers and error texts go
through :mod:`.key_scrub` (the key verbatim is redacted; a text holding any 12-character
run of it, reversed, hex, base64 or percent-encoded, is withheld whole, and such an
answer is not parsed). An answer longer than ``max_answer_chars`` is refused unparsed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import math
import os
import random
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from monsearch.errors import MonsearchError
from monsearch.sandbox.check import check_program

from .config import ConfigError
from .diffs import DEFAULT_MAX_ANSWER_CHARS, ParsedAnswer, parse_answer
from .key_scrub import KeyScrubber
from .prompts import BuiltPrompt, PromptOptions, build_prompt
from .proposal import ProgramInfo, Proposal, ProposalContext

__all__ = [
    "DEFAULT_BASE_URL",
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_MODEL",
    "LLMProposer",
    "LLMProposerConfig",
    "ModelSpec",
]

ENV_API_KEY = "MONSEARCH_LLM_API_KEY"
ENV_BASE_URL = "MONSEARCH_LLM_BASE_URL"
ENV_MODEL = "MONSEARCH_LLM_MODEL"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Sent when no key is configured: local servers (vLLM, Ollama) accept any string, and
#: the OpenAI SDK refuses to build a client without one.
_NO_KEY = "EMPTY"
_MAX_ERROR_CHARS = 600
_MAX_DESCRIPTION_CHARS = 800

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- config


@dataclass(frozen=True)
class ModelSpec:
    """One model of the ensemble. Prices are USD per million tokens (for the spend ledger)."""

    name: str
    weight: float = 1.0
    #: None: the config's ``base_url``, then ``$MONSEARCH_LLM_BASE_URL``, ``$OPENAI_BASE_URL``.
    base_url: str | None = None
    #: Name of the environment variable holding this model's key (preferred over ``api_key``).
    api_key_env: str | None = None
    api_key: str | None = field(default=None, repr=False)
    temperature: float = 0.7
    max_tokens: int = 4096
    price_input_per_mtok: float = 0.0
    price_output_per_mtok: float = 0.0
    top_p: float | None = None
    reasoning_effort: str | None = None

    def cost_usd(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (
            prompt_tokens * self.price_input_per_mtok
            + completion_tokens * self.price_output_per_mtok
        ) / 1e6


@dataclass(frozen=True)
class LLMProposerConfig:
    """The LLM proposer's settings; :meth:`from_dict` reads a TOML table.

    ``retries`` 0-1 and a short ``timeout`` suit a search loop: a failed call costs
    one candidate, not minutes. ``rewrite_probability``: share of prompts asking for
    a full rewrite instead of SEARCH/REPLACE edits (either answer is accepted).
    """

    models: tuple[ModelSpec, ...]
    timeout: float = 60.0
    retries: int = 0
    retry_delay: float = 1.0
    base_url: str | None = None
    #: The environment variable read for the key when neither the model nor this config
    #: names one; ``OPENAI_API_KEY`` is the last resort.
    api_key_env: str = ENV_API_KEY
    api_key: str | None = field(default=None, repr=False)
    rewrite_probability: float = 0.2
    #: Send a per-candidate ``seed`` drawn from the proposal rng (servers that honour it
    #: then answer reproducibly). Turn off for endpoints that reject the parameter.
    send_seed: bool = True
    #: Endpoint failures in a row after which :attr:`LLMProposer.endpoint_dead` is set.
    max_consecutive_failures: int = 5
    max_prompt_chars: int = 24_000
    #: Answers longer than this are refused unparsed (their head is kept, scrubbed).
    max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS
    n_missed: int = 3
    n_false_alarms: int = 3
    max_inspirations: int = 3
    #: The run's oracle caps, stated in the prompt (None: not stated).
    oracle_per_traj_cap: int | None = None
    oracle_rho: float | None = None
    oracle_available: bool = True

    def __post_init__(self) -> None:
        problems: list[str] = []
        if not self.models:
            problems.append("llm: at least one model is needed")
        for m in self.models:
            if not m.name:
                problems.append("llm model: a name is needed")
            if not (m.weight >= 0 and math.isfinite(m.weight)):
                problems.append(f"llm model {m.name!r}: weight must be >= 0")
            if m.max_tokens < 1:
                problems.append(f"llm model {m.name!r}: max_tokens must be >= 1")
            if m.price_input_per_mtok < 0 or m.price_output_per_mtok < 0:
                problems.append(f"llm model {m.name!r}: prices must be >= 0")
        if self.models and sum(m.weight for m in self.models) <= 0:
            problems.append("llm: the model weights sum to 0")
        if not self.timeout > 0:
            problems.append(f"llm timeout {self.timeout}: must be > 0")
        if not 0 <= self.retries <= 5:
            problems.append(f"llm retries {self.retries}: 0 to 5 (0-1 recommended)")
        if self.retry_delay < 0:
            problems.append("llm retry_delay: must be >= 0")
        if not 0 <= self.rewrite_probability <= 1:
            problems.append("llm rewrite_probability: must be in [0, 1]")
        if self.max_consecutive_failures < 1:
            problems.append("llm max_consecutive_failures: must be >= 1")
        if self.max_prompt_chars < 2_000:
            problems.append("llm max_prompt_chars: must be >= 2000")
        if not (isinstance(self.max_answer_chars, int) and self.max_answer_chars >= 1_000):
            problems.append("llm max_answer_chars: must be an integer >= 1000")
        if problems:
            raise ConfigError("; ".join(problems))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "[llm]") -> LLMProposerConfig:
        """From a TOML table: ``models = [{name, weight, base_url, api_key_env, ...}]``, or a
        single ``model = "name"`` (plus the model keys at the top level). Unknown keys are
        errors (openevolve's config silently drops them)."""
        if not isinstance(d, Mapping):
            raise ConfigError(f"{where}: expected a table")
        data = {k: v for k, v in d.items() if k != "api_key_set"}  # written by to_dict
        model_keys = {f.name for f in fields(ModelSpec)}
        top_keys = {f.name for f in fields(cls)} - {"models"}
        raw_models = data.pop("models", None)
        single = data.pop("model", None)
        if raw_models is None:
            if single is None:
                single = os.environ.get(ENV_MODEL)
            if not single:
                raise ConfigError(
                    "the llm proposer has no model: give --llm-model NAME and --llm-base-url "
                    "URL (any OpenAI-compatible server: vLLM, Ollama, llama.cpp, a hosted API), "
                    f"or `model`/`models` in the {where} table of --config, or ${ENV_MODEL}"
                )
            shared = {k: data.pop(k) for k in list(data) if k in model_keys - top_keys}
            raw_models = [{"name": single, **shared}]
        elif single is not None:
            raise ConfigError(f"{where}: give `models` or `model`, not both")
        if not isinstance(raw_models, Sequence) or isinstance(raw_models, str):
            raise ConfigError(f"{where}: `models` must be a list of tables")
        models = []
        for i, m in enumerate(raw_models):
            if isinstance(m, str):
                m = {"name": m}
            if not isinstance(m, Mapping):
                raise ConfigError(f"{where}: models[{i}] must be a table")
            m = {k: v for k, v in m.items() if k != "api_key_set"}  # written by to_dict
            unknown = sorted(set(m) - model_keys)
            if unknown:
                raise ConfigError(f"{where}: models[{i}]: unknown key(s) {', '.join(unknown)}")
            try:
                models.append(ModelSpec(**m))
            except TypeError as exc:
                raise ConfigError(f"{where}: models[{i}]: {exc}") from None
        unknown = sorted(set(data) - top_keys)
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}")
        return cls(models=tuple(models), **data)

    def to_dict(self) -> dict[str, Any]:
        """For the run's recorded config: everything but the keys themselves."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "models":
                out["models"] = [
                    {g.name: getattr(m, g.name) for g in fields(ModelSpec) if g.name != "api_key"}
                    | {"api_key_set": m.api_key is not None}
                    for m in self.models
                ]
            elif f.name == "api_key":
                out["api_key_set"] = self.api_key is not None
            else:
                out[f.name] = getattr(self, f.name)
        return out

    def prompt_options(self) -> PromptOptions:
        return PromptOptions(
            max_chars=self.max_prompt_chars,
            n_missed=self.n_missed,
            n_false_alarms=self.n_false_alarms,
            max_inspirations=self.max_inspirations,
            oracle_per_traj_cap=self.oracle_per_traj_cap,
            oracle_rho=self.oracle_rho,
            oracle_available=self.oracle_available,
        )

    def with_oracle_caps(
        self, per_traj_cap: int | None, rho: float | None, available: bool = True
    ) -> LLMProposerConfig:
        """The same config stating the run's oracle caps in the prompt."""
        return replace(
            self, oracle_per_traj_cap=per_traj_cap, oracle_rho=rho, oracle_available=available
        )


@dataclass(frozen=True)
class _Endpoint:
    spec: ModelSpec
    base_url: str
    key: str = field(repr=False)
    #: Where the key came from ("env MONSEARCH_LLM_API_KEY", "config", "none"): never the key.
    key_source: str = ""


def _resolve(spec: ModelSpec, cfg: LLMProposerConfig, env: Mapping[str, str]) -> _Endpoint:
    base = (
        spec.base_url
        or cfg.base_url
        or env.get(ENV_BASE_URL)
        or env.get("OPENAI_BASE_URL")
        or DEFAULT_BASE_URL
    )
    candidates: list[tuple[str | None, str]] = [
        (spec.api_key, "config (model)"),
        (env.get(spec.api_key_env) if spec.api_key_env else None, f"env {spec.api_key_env}"),
        (cfg.api_key, "config"),
        (env.get(cfg.api_key_env) if cfg.api_key_env else None, f"env {cfg.api_key_env}"),
        (env.get("OPENAI_API_KEY"), "env OPENAI_API_KEY"),
    ]
    for key, source in candidates:
        if key:
            return _Endpoint(spec, base.rstrip("/"), key, source)
    return _Endpoint(spec, base.rstrip("/"), _NO_KEY, "none")


def probe_endpoints(
    config: LLMProposerConfig,
    *,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 5.0,
) -> list[str]:
    """Check once, before the search starts, that every endpoint of the ensemble answers.

    Raises :class:`~monsearch.sandbox.openai_endpoint.EndpointUnavailableError` (exit 2)
    naming the model, endpoint and reason; returns warnings (a model not listed).
    Keys are sent, never shown.
    """
    from monsearch.sandbox.openai_endpoint import probe_endpoint

    environ = os.environ if env is None else env
    by_endpoint: dict[tuple[str, str], list[str]] = {}
    for spec in config.models:
        if spec.weight <= 0:
            continue
        ep = _resolve(spec, config, environ)
        by_endpoint.setdefault((ep.base_url, ep.key), []).append(spec.name)
    warnings: list[str] = []
    for (where, key), names in by_endpoint.items():
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
        hint = f"no API key: set ${ENV_API_KEY} or $OPENAI_API_KEY" if key == _NO_KEY else None
        try:
            warnings += probe_endpoint(
                where, headers, names, what=f"the LLM proposer's endpoint ({', '.join(names)})",
                key_hint=hint, timeout_s=min(timeout_s, config.timeout),
            )
        except MonsearchError as exc:
            raise type(exc)(KeyScrubber([key]).scrub(str(exc)) + _url_hint(where)) from None
    return warnings


def _url_hint(where: str) -> str:
    return (
        " — give the server with --llm-base-url URL (e.g. http://127.0.0.1:8000/v1) or "
        f"${ENV_BASE_URL}" if where == DEFAULT_BASE_URL else ""
    )


class _RedactKeys(logging.Filter):
    """Scrubs keys out of the log lines of openevolve's client and the OpenAI SDK (they
    log exception texts verbatim). Logger filters see only records logged on that very
    logger, hence the explicit module loggers."""

    LOGGERS = ("openevolve.llm.openai", "openevolve.llm.ensemble", "openai._base_client")

    def __init__(self) -> None:
        super().__init__()
        self.keys: set[str] = set()
        self.scrubber = KeyScrubber(())
        self.installed = False

    def add(self, keys: Sequence[str]) -> None:
        new = {k for k in keys if len(k) >= 4 and k != _NO_KEY} - self.keys
        if new:
            self.keys.update(new)
            self.scrubber = KeyScrubber(self.keys)
        if not self.installed:
            for name in self.LOGGERS:
                logging.getLogger(name).addFilter(self)
            self.installed = True

    def filter(self, record: logging.LogRecord) -> bool:
        if self.keys:
            msg = record.getMessage()
            clean = self.scrubber.scrub(msg)
            if clean != msg:
                record.msg, record.args = clean, None
        return True


_KEY_FILTER = _RedactKeys()


# --------------------------------------------------------------------------- proposer


class _EndpointError(Exception):
    def __init__(self, message: str, fatal: bool = False) -> None:
        super().__init__(message)
        self.fatal = fatal


def _describe_exception(exc: BaseException, timeout: float) -> tuple[str, bool]:
    """A short text for an endpoint failure, and whether retrying is pointless."""
    import openai

    if isinstance(exc, openai.APITimeoutError | asyncio.TimeoutError | TimeoutError):
        return f"no answer within {timeout:g} s (timeout)", False
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return f"HTTP {exc.status_code}: the endpoint refused the API key", True
    if isinstance(exc, openai.NotFoundError):
        return f"HTTP 404: {_api_message(exc)} (wrong base URL or model name?)", True
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {_api_message(exc)}", False
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        detail = f"{type(cause).__name__}: {cause}" if cause else str(exc)
        return f"connection failed ({detail})", False
    if isinstance(exc, openai.APIResponseValidationError | ValueError):
        return f"not a chat completion: {exc}", False
    return f"{type(exc).__name__}: {exc}", False


def _api_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return str(getattr(exc, "message", exc))


def _run_coroutine(work: Any) -> Any:
    """Run ``work()`` (a function returning a coroutine's result via asyncio.run) even when
    the caller is inside a running event loop (then in a helper thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return work()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(work).result()


class LLMProposer:
    """Proposer for OpenAI-compatible chat endpoints (see the module doc).

    ``propose`` draws from ``rng``, in this order: the model (by weight), diff or
    full rewrite, the request ``seed``, then the train feedback shown. Counters:
    :attr:`consecutive_failures` (endpoint failures since the last answer),
    :attr:`endpoint_dead`, :attr:`last_error`, :meth:`stats`.
    """

    name = "llm"

    def __init__(self, config: LLMProposerConfig, *, env: Mapping[str, str] | None = None) -> None:
        self.config = config
        environ = os.environ if env is None else env
        self._endpoints = tuple(_resolve(m, config, environ) for m in config.models)
        self._keys = sorted(
            {e.key for e in self._endpoints if e.key != _NO_KEY and len(e.key) >= 4},
            key=len,
            reverse=True,
        )
        self._scrubber = KeyScrubber(self._keys)
        total = sum(m.weight for m in config.models)
        acc, self._cumulative = 0.0, []
        for m in config.models:
            acc += m.weight / total
            self._cumulative.append(acc)
        self._local = threading.local()
        self._lock = threading.Lock()
        _KEY_FILTER.add(self._keys)
        self._consecutive = 0
        self._fatal: str | None = None
        self.last_error: str | None = None
        self._stats: dict[str, Any] = {
            "calls": 0,
            "answers": 0,
            "endpoint_failures": 0,
            "bad_answers": 0,
            "children": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cost_usd": 0.0,
            "by_model": {
                m.name: {"calls": 0, "failures": 0, "consecutive_failures": 0}
                for m in config.models
            },
        }

    @classmethod
    def from_dict(
        cls,
        table: Mapping[str, Any],
        *,
        per_traj_cap: int | None = None,
        rho: float | None = None,
        oracle_available: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> LLMProposer:
        """From the run config's ``llm`` table, stating the run's oracle caps in the prompt."""
        cfg = LLMProposerConfig.from_dict(table)
        if per_traj_cap is not None or rho is not None or not oracle_available:
            cfg = cfg.with_oracle_caps(per_traj_cap, rho, oracle_available)
        return cls(cfg, env=env)

    # ----------------------------------------------------------------- state for the loop

    @property
    def consecutive_failures(self) -> int:
        """Endpoint failures (HTTP errors, timeouts, refused connections) since the last
        call that returned an answer (a malformed answer still counts as an answer)."""
        return self._consecutive

    @property
    def endpoint_dead(self) -> bool:
        """True once ``max_consecutive_failures`` calls in a row failed, or the endpoint
        refused the key / does not know the model (no point asking again)."""
        return self._fatal is not None or self._consecutive >= self.config.max_consecutive_failures

    def reset_failures(self) -> None:
        """Forget the failure streak (e.g. after the operator fixed the endpoint)."""
        with self._lock:
            self._consecutive = 0
            self._fatal = None

    def stats(self) -> dict[str, Any]:
        """Counts and spend so far (calls, answers, failures, tokens, USD, per model)."""
        with self._lock:
            out = dict(self._stats)
            out["by_model"] = {k: dict(v) for k, v in self._stats["by_model"].items()}
            out["consecutive_failures"] = self._consecutive
            out["endpoint_dead"] = self.endpoint_dead
            return out

    def describe(self) -> list[dict[str, Any]]:
        """Models, weights, base URLs and where each key comes from (never the key)."""
        return [
            {
                "name": e.spec.name,
                "weight": e.spec.weight,
                "base_url": e.base_url,
                "key_source": e.key_source,
            }
            for e in self._endpoints
        ]

    def pick_model(self, rng: random.Random) -> int:
        """Index of the model for one call, by weight, from one ``rng.random()`` draw."""
        u = rng.random()
        for i, c in enumerate(self._cumulative):
            if u < c and self.config.models[i].weight > 0:
                return i
        return max(i for i, m in enumerate(self.config.models) if m.weight > 0)

    # ----------------------------------------------------------------- proposing

    def build_prompt(
        self,
        parent: ProgramInfo,
        inspirations: Sequence[ProgramInfo],
        rng: random.Random,
        context: ProposalContext,
        mode: str = "diff",
    ) -> BuiltPrompt:
        return build_prompt(
            parent, inspirations, context, rng, mode=mode, options=self.config.prompt_options()
        )

    def propose(
        self,
        parent: ProgramInfo,
        inspirations: Sequence[ProgramInfo],
        rng: random.Random,
        context: ProposalContext,
    ) -> Proposal:
        """One child of ``parent``; failures come back as ``Proposal(source=None, error=...)``."""
        try:
            return self._propose(parent, inspirations, rng, context)
        except Exception as exc:  # the contract: a failure costs one candidate, never the run
            log.exception("LLM proposer failed")
            return Proposal(
                None,
                "llm_diff",
                (parent.id,),
                error=self._scrub(f"LLM proposer internal error: {type(exc).__name__}: {exc}")[
                    :_MAX_ERROR_CHARS
                ],
            )

    def _propose(
        self,
        parent: ProgramInfo,
        inspirations: Sequence[ProgramInfo],
        rng: random.Random,
        context: ProposalContext,
    ) -> Proposal:
        idx = self.pick_model(rng)
        mode = "rewrite" if rng.random() < self.config.rewrite_probability else "diff"
        seed = rng.getrandbits(31)
        endpoint = self._endpoints[idx]
        spec = endpoint.spec
        operator = f"llm_{mode}"
        parents = (parent.id,)
        try:
            prompt = self.build_prompt(parent, inspirations, rng, context, mode)
        except Exception as exc:  # a prompt bug costs this candidate, not the run
            return Proposal(
                None, operator, parents, error=f"building the prompt failed: {exc}", model=spec.name
            )
        try:
            text, usage = self._call(idx, prompt, seed if self.config.send_seed else None)
        except _EndpointError as exc:
            # The server's part scrubbed on its own: if it held the key, the rest still says
            # which endpoint failed.
            message = self._scrub(
                f"LLM endpoint error ({spec.name} at {endpoint.base_url}): "
                + self._scrub(str(exc))
            )[:_MAX_ERROR_CHARS]
            self._record_failure(spec.name, message, exc.fatal)
            return Proposal(None, operator, parents, error=message, model=spec.name)
        cost = spec.cost_usd(usage["prompt_tokens"], usage["completion_tokens"])
        cap = self.config.max_answer_chars
        if text is not None and len(text) > cap:
            # Refused before any parsing; only its head (scrubbed) is kept to look at.
            raw: str | None = self._scrub(text[:cap])
            parsed = parse_answer(parent.source, text, max_chars=cap)
        elif text is None:
            raw, parsed = None, parse_answer(parent.source, None)
        else:
            # Scrubbed before parsing: a key echoed into code must not reach the lineage.
            raw, withheld = self._scrubber.scan(text)
            if withheld:
                parsed = ParsedAnswer(
                    None,
                    "none",
                    "the answer held the API key (or a fragment or encoding of it): "
                    "withheld and not parsed",
                )
            else:
                parsed = parse_answer(parent.source, raw, max_chars=None)
        if parsed.kind in ("diff", "rewrite"):
            operator = f"llm_{parsed.kind}"
        error = parsed.error
        if error is None and parsed.source is not None:
            report = check_program(parsed.source)
            if not report.ok:
                error = f"the child fails the sandbox check: {report.message}"
        if error is not None and usage["completion_tokens"] >= spec.max_tokens:
            error += f" (the answer hit max_tokens = {spec.max_tokens} and may be cut off)"
        self._record_answer(spec.name, usage, cost, error is None)
        description = "\n".join(x for x in (parsed.idea, parsed.summary) if x)
        return Proposal(
            source=parsed.source if error is None else None,
            operator=operator,
            parent_ids=parents,
            description=self._scrub(description)[:_MAX_DESCRIPTION_CHARS],
            error=None if error is None else self._scrub(error)[:_MAX_ERROR_CHARS],
            raw_response=raw,
            model=spec.name,
            usage=usage,
            cost_usd=cost,
        )

    # ----------------------------------------------------------------- internals

    def _scrub(self, text: str) -> str:
        return self._scrubber.scrub(text)

    def _ensemble(self) -> Any:
        """This thread's ensemble (clients keep ``last_usage`` per call, so threads must not
        share them); built on first use so an unused proposer opens no client."""
        ens = getattr(self._local, "ensemble", None)
        if ens is None:
            from openevolve.config import LLMModelConfig
            from openevolve.llm.ensemble import LLMEnsemble

            cfgs = []
            for e in self._endpoints:
                m = e.spec
                mc = LLMModelConfig(
                    name=m.name,
                    api_base=e.base_url,
                    weight=m.weight,
                    temperature=m.temperature,
                    top_p=m.top_p,
                    max_tokens=m.max_tokens,
                    timeout=self.config.timeout,
                    retries=self.config.retries,
                    retry_delay=self.config.retry_delay,
                    random_seed=None,  # else a constant seed goes with every request
                    reasoning_effort=m.reasoning_effort,
                )
                mc.api_key = e.key  # set after __post_init__: a key is never "${VAR}"-expanded
                cfgs.append(mc)
            ens = LLMEnsemble(cfgs)
            for model in ens.models:
                # openevolve retries around the SDK's own retries; keep only its outer loop.
                model.client = model.client.with_options(max_retries=0)
            self._local.ensemble = ens
        return ens

    def _call(
        self, idx: int, prompt: BuiltPrompt, seed: int | None
    ) -> tuple[str | None, dict[str, int]]:
        spec = self._endpoints[idx].spec
        with self._lock:
            self._stats["calls"] += 1
            self._stats["by_model"][spec.name]["calls"] += 1

        def work() -> tuple[str | None, dict[str, Any] | None]:
            model = self._ensemble().models[idx]
            model.last_usage = None
            kwargs: dict[str, Any] = {} if seed is None else {"seed": seed}
            text = asyncio.run(
                model.generate_with_context(prompt.system, prompt.messages(), **kwargs)
            )
            return text, model.last_usage

        try:
            text, last_usage = _run_coroutine(work)
        except Exception as exc:
            message, fatal = _describe_exception(exc, self.config.timeout)
            raise _EndpointError(message, fatal) from None
        if text is not None and not isinstance(text, str):
            raise _EndpointError(f"not a chat completion: content of type {type(text).__name__}")
        if last_usage:
            usage = {
                "prompt_tokens": int(last_usage.get("prompt_tokens") or 0),
                "completion_tokens": int(last_usage.get("completion_tokens") or 0),
            }
        else:
            # No usage from the server: estimate (4 chars a token) so spend caps still bite.
            usage = {
                "prompt_tokens": math.ceil(prompt.chars / 4),
                "completion_tokens": math.ceil(len(text or "") / 4),
                "estimated": 1,
            }
        return text, usage

    def _record_failure(self, model: str, message: str, fatal: bool) -> None:
        with self._lock:
            self._consecutive += 1
            self.last_error = message
            if fatal:
                self._fatal = message
            self._stats["endpoint_failures"] += 1
            per = self._stats["by_model"][model]
            per["failures"] += 1
            per["consecutive_failures"] += 1
        log.warning("%s", message)

    def _record_answer(self, model: str, usage: dict[str, int], cost: float, ok: bool) -> None:
        with self._lock:
            self._consecutive = 0
            self._fatal = None
            self._stats["answers"] += 1
            self._stats["children" if ok else "bad_answers"] += 1
            self._stats["prompt_tokens"] += usage["prompt_tokens"]
            self._stats["completion_tokens"] += usage["completion_tokens"]
            self._stats["cost_usd"] += cost
            self._stats["by_model"][model]["consecutive_failures"] = 0

    def __getstate__(self) -> dict[str, Any]:
        # Clients, locks and thread-locals do not pickle; they are rebuilt on first use.
        state = self.__dict__.copy()
        for k in ("_local", "_lock"):
            state.pop(k, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._local = threading.local()
        self._lock = threading.Lock()
        _KEY_FILTER.add(self._keys)
