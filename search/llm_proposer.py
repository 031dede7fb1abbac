"""The LLM proposer: asks any OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp,
hosted APIs) for a child of the parent program, with weighted model ensembles.

Calls go through the project's one client, :class:`~monsearch.oracle.openai_client.OpenAIClient`
(streamed by default, so a slow CPU model reports tokens/s through :attr:`LLMProposer.on_progress`).
The model is drawn from the proposal's ``rng`` and the ``seed`` sent to the server is drawn
from the same ``rng`` (a seed-honouring server answers reproducibly per candidate without
giving every candidate the same answer); ``retries`` means what it says, so a dead endpoint
costs ``(retries + 1) * timeout`` at most.

What the model is asked for is set per model (``edit``): ``detector`` (the default; one
``detect_<name>`` function, :mod:`.detector_edit`, for parents in the convention), ``diff``
(SEARCH/REPLACE edits or a full rewrite, :mod:`.prompts`, :mod:`.diffs`) or ``full``. An
unusable answer gets ``repair_turns`` follow-up turns that show the model the exact error.

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

import logging
import math
import os
import random
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from monsearch.errors import MonsearchError
from monsearch.oracle.openai_client import ChatError, OpenAIClient, Progress, RetryPolicy
from monsearch.oracle.openai_endpoint import shown
from monsearch.sandbox.check import check_program
from monsearch.strategies.convention import parse_program

from .config import ConfigError
from .detector_edit import (
    DetectorError,
    DetectorTask,
    answer_code,
    answer_complete,
    build_detector_task,
    defines_score,
    wire_answer,
)
from .diffs import DEFAULT_MAX_ANSWER_CHARS, ParsedAnswer, parse_answer, strip_reasoning
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
    "merge_cli_options",
]

ENV_API_KEY = "MONSEARCH_LLM_API_KEY"
EDIT_MODES = ("detector", "diff", "full")
#: max_tokens of a request when the model's own is not set, by what it is asked for.
DEFAULT_MAX_TOKENS = {"detector": 1024, "diff": 4096, "full": 4096}
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


#: Values of a model's ``retry`` (see :attr:`ModelSpec.retry`).
RETRY_MODES = ("repair", "fresh")
#: Values of ``[llm] parent`` (see :attr:`LLMProposerConfig.parent`).
PARENT_CHOICES = ("best", "sampled")


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
    #: None: by the edit mode (:data:`DEFAULT_MAX_TOKENS`): a detector is short, a
    #: rewrite is not, and a small model left at 4,096 may ramble for minutes.
    max_tokens: int | None = None
    price_input_per_mtok: float = 0.0
    price_output_per_mtok: float = 0.0
    top_p: float | None = None
    reasoning_effort: str | None = None
    #: What the model is asked for: ``detector`` (one new or rewritten ``detect_*``
    #: function, wired in by the convention: what a small model gets right), ``diff``
    #: (SEARCH/REPLACE edits, a full rewrite at ``rewrite_probability``) or ``full``
    #: (always the whole program). ``detector`` falls back to ``diff`` for a parent
    #: outside the convention.
    edit: str = "detector"
    #: Seconds for one whole request (a streamed one included); None: the config's.
    timeout: float | None = None
    #: Wall-clock seconds for one whole proposal (its repair turns included; each
    #: request gets what is left of it); None: the config's ``deadline``.
    deadline: float | None = None
    #: Stream the answer (server-sent events): progress shows, and a stalled server is
    #: told apart from a slow one. Off for servers that do not stream.
    stream: bool = True
    #: What a follow-up turn after an unusable answer is: ``repair`` (the conversation
    #: goes on with the exact error) or ``fresh`` (the same prompt asked anew, another
    #: seed). Measured with a 1.5B model on the detector contract, repair turns saved 10
    #: of 48 unusable answers once the errors said where a field lives (2 of 51 before)
    #: and fresh turns 0 of 7, so the default keeps the error in front of the model.
    retry: str = "repair"

    def deadline_for(self, config: LLMProposerConfig) -> float:
        return self.deadline if self.deadline is not None else config.deadline

    def tokens_for(self, edit: str) -> int:
        return self.max_tokens if self.max_tokens is not None else DEFAULT_MAX_TOKENS[edit]

    def cost_usd(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (
            prompt_tokens * self.price_input_per_mtok
            + completion_tokens * self.price_output_per_mtok
        ) / 1e6


@dataclass(frozen=True)
class LLMProposerConfig:
    """The LLM proposer's settings; :meth:`from_dict` reads a TOML table.

    ``retries`` 0-1 suit a search loop: a failed call costs one candidate. ``timeout``
    bounds one whole request (a model's own ``timeout`` wins); the default leaves a
    model on a CPU room to read its prompt and write its answer. ``rewrite_probability``:
    share of ``diff`` prompts asking for a full rewrite instead (either answer is
    accepted). ``repair_turns``: follow-up turns that show the model the exact error of
    an unusable answer (a parse error, the sandbox's check, a run on train) before the
    candidate counts as failed.

    ``deadline``: wall-clock seconds a whole proposal may take (a model's own wins).
    In a mixed run the search never waits for it (the offline proposer keeps the
    workers busy meanwhile); it frees the slot of a server that stalls. ``slots``:
    LLM proposals in flight at once. One by default, on purpose: llama.cpp's server
    (``monsearch llm serve``) answers one request at a time, and a second request
    would only queue there; a server with parallel slots (vLLM, a hosted API) can
    take more.
    """

    models: tuple[ModelSpec, ...]
    timeout: float = 600.0
    #: Generous for a 1.5B model on a loaded 2-core machine (158-217 s a proposal
    #: measured at load 4-13); a stalled server is given up on after it.
    deadline: float = 300.0
    slots: int = 1
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
    repair_turns: int = 1
    #: Which program an LLM proposal edits: ``best`` (the database's best so far: a
    #: proposal costs tens of seconds on a CPU model, or money on a hosted one, and a
    #: detector added to the best program is the one most likely to enter the selected
    #: strategy) or ``sampled`` (the island's sampled parent, as the offline proposer).
    parent: str = "best"

    def __post_init__(self) -> None:
        problems: list[str] = []
        if not self.models:
            problems.append("llm: at least one model is needed")
        for m in self.models:
            if not m.name:
                problems.append("llm model: a name is needed")
            if not (m.weight >= 0 and math.isfinite(m.weight)):
                problems.append(f"llm model {m.name!r}: weight must be >= 0")
            if m.max_tokens is not None and m.max_tokens < 1:
                problems.append(f"llm model {m.name!r}: max_tokens must be >= 1")
            if m.edit not in EDIT_MODES:
                problems.append(
                    f"llm model {m.name!r}: edit {m.edit!r}: one of {', '.join(EDIT_MODES)}"
                )
            if m.retry not in RETRY_MODES:
                problems.append(
                    f"llm model {m.name!r}: retry {m.retry!r}: one of {', '.join(RETRY_MODES)}"
                )
            if m.timeout is not None and not m.timeout > 0:
                problems.append(f"llm model {m.name!r}: timeout must be > 0")
            if m.deadline is not None and not (m.deadline > 0 and math.isfinite(m.deadline)):
                problems.append(f"llm model {m.name!r}: deadline must be > 0 seconds")
            if m.price_input_per_mtok < 0 or m.price_output_per_mtok < 0:
                problems.append(f"llm model {m.name!r}: prices must be >= 0")
        if self.models and sum(m.weight for m in self.models) <= 0:
            problems.append("llm: the model weights sum to 0")
        if not self.timeout > 0:
            problems.append(f"llm timeout {self.timeout}: must be > 0")
        if not (self.deadline > 0 and math.isfinite(self.deadline)):
            problems.append(f"llm deadline {self.deadline}: must be > 0 seconds")
        if not (isinstance(self.slots, int) and 1 <= self.slots <= 64):
            problems.append(f"llm slots {self.slots!r}: an integer from 1 to 64")
        if not 0 <= self.retries <= 5:
            problems.append(f"llm retries {self.retries}: 0 to 5 (0-1 recommended)")
        if self.retry_delay < 0:
            problems.append("llm retry_delay: must be >= 0")
        if not 0 <= self.rewrite_probability <= 1:
            problems.append("llm rewrite_probability: must be in [0, 1]")
        if not (isinstance(self.repair_turns, int) and 0 <= self.repair_turns <= 3):
            problems.append("llm repair_turns: an integer from 0 to 3")
        if self.parent not in PARENT_CHOICES:
            problems.append(f"llm parent {self.parent!r}: one of {', '.join(PARENT_CHOICES)}")
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


def merge_cli_options(
    table: Mapping[str, Any],
    models: Sequence[Mapping[str, Any]] = (),
    *,
    base_url: str | None = None,
    timeout: float | None = None,
    max_tokens: int | None = None,
    edit: str | None = None,
    deadline: float | None = None,
    slots: int | None = None,
) -> dict[str, Any]:
    """The ``[llm]`` table with the command line's options merged in, never dropping a
    setting of the config.

    ``models`` (``{"name": ..., "weight"?: ...}`` from ``--llm-model NAME[:W]``) choose
    which models the run uses; a model the config describes keeps every setting it has
    there (its weight too, unless the command line gives one), and a model the config
    does not name gets the config's model-level defaults (the keys written beside a
    single ``model``). ``timeout``, ``deadline``, ``max_tokens`` and ``edit`` then apply
    to every model (the command line wins); ``slots`` is the run's. The result always
    has the ``models`` form.
    """
    data = dict(table)
    model_keys = {f.name for f in fields(ModelSpec)} - {"name", "weight"}
    top_keys = {f.name for f in fields(LLMProposerConfig)}
    described: list[dict[str, Any]] = []
    defaults: dict[str, Any] = {}
    raw = data.pop("models", None)
    single = data.pop("model", None)
    if raw is None:
        # Model keys beside a single `model` are its settings; they are the defaults of
        # any model the command line names instead (e.g. its max_tokens).
        defaults = {k: data.pop(k) for k in list(data) if k in model_keys - top_keys}
        if single:
            described.append({"name": single, **defaults})
    elif isinstance(raw, Sequence) and not isinstance(raw, str):
        for m in raw:
            described.append({"name": m} if isinstance(m, str) else dict(m))
    if models:
        by_name = {str(m.get("name")): m for m in described}
        chosen = []
        for cli in models:
            entry = dict(by_name.get(cli["name"], {"name": cli["name"], **defaults}))
            if cli.get("weight") is not None:
                entry["weight"] = cli["weight"]
            chosen.append(entry)
        described = chosen
    elif raw is None and not single:
        # No model anywhere yet: keep the table as it was (from_dict names what is missing).
        data.update(defaults)
        if single is not None:
            data["model"] = single
        described = []
    for key, value in (("max_tokens", max_tokens), ("edit", edit)):
        if value is not None:
            for m in described:
                m[key] = value
            if not described:
                data[key] = value
    for key, value in (("timeout", timeout), ("deadline", deadline)):
        if value is not None:
            data[key] = value
            for m in described:
                m.pop(key, None)  # the command line's value is for every model
    if slots is not None:
        data["slots"] = slots
    if base_url:
        data["base_url"] = base_url
    if described:
        data["models"] = described
    return data


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

    Raises :class:`~monsearch.oracle.openai_endpoint.EndpointUnavailableError` (exit 2)
    naming the model, endpoint and reason; returns warnings (a model not listed).
    Keys are sent, never shown.
    """
    from monsearch.oracle.openai_endpoint import probe_endpoint

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
                scrub=KeyScrubber([key]).scrub,
            )
        except MonsearchError as exc:
            text = KeyScrubber([key]).scrub(str(exc))
            raise type(exc)(text + _url_hint(where) + _busy_hint(where, text)) from None
    return warnings


def _busy_hint(where: str, error: str) -> str:
    """For a local server that did not answer the probe in time: why it may be busy.
    Measured with llama.cpp (0.5B model, 2 cores at load 4-6): a request whose run ended
    while it was in flight held the server about 3 minutes, until its prompt was read."""
    local = re.match(r"https?://(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:|/|$)", where)
    timed_out = re.search(r"timed out|timeout|no complete reply|bytes came", error)
    if not (local and timed_out):
        return ""
    return (
        " — a local llama.cpp server answers one request at a time: it may still be busy "
        "with a request of a run that ended while its LLM proposal was in flight (until it "
        "has read that prompt: minutes on a loaded CPU); try again shortly, or restart it"
    )


def _url_hint(where: str) -> str:
    return (
        " — give the server with --llm-base-url URL (e.g. http://127.0.0.1:8000/v1) or "
        f"${ENV_BASE_URL}" if where == DEFAULT_BASE_URL else ""
    )


class _RedactKeys(logging.Filter):
    """Scrubs keys out of the log lines of the HTTP stack and of this module (a
    library may log an exception text verbatim). Logger filters see only records
    logged on that very logger, hence the explicit module loggers."""

    LOGGERS = ("httpx", "httpcore", __name__, "monsearch.oracle.openai_client")

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


def _describe_chat_error(exc: ChatError, timeout: float) -> tuple[str, bool]:
    """A short text for an endpoint failure, and whether retrying is pointless."""
    if exc.kind == "status":
        status = exc.status
        if status in (401, 403):
            return f"HTTP {status}: the endpoint refused the API key", True
        if status == 404:
            return (
                f"HTTP 404: {exc.server_message} (wrong base URL or model name?)",
                True,
            )
        return f"HTTP {status}: {exc.server_message}", False
    last = exc.last or str(exc)
    if exc.timed_out:
        return f"no answer within {timeout:g} s (timeout): {last}", exc.fatal
    if exc.transport:
        return f"connection failed ({last})", exc.fatal
    if last.startswith("HTTP 200"):
        return f"not a chat completion: {last}", exc.fatal
    return last, exc.fatal


class _Deadline:
    """The wall-clock deadline of one proposal, and whether the run still wants it."""

    def __init__(self, seconds: float, cancelled: Callable[[], bool] | None = None) -> None:
        self.seconds = float(seconds)
        self._t0 = time.monotonic()
        self._cancelled = cancelled

    def elapsed(self) -> float:
        return time.monotonic() - self._t0

    def left(self) -> float:
        return self.seconds - self.elapsed()

    def cancelled(self) -> bool:
        return bool(self._cancelled is not None and self._cancelled())

    def why_not(self) -> str | None:
        """Why no further request may start (None: one may)."""
        if self.cancelled():
            return "the run ended before the model was asked"
        if self.left() <= 0:
            return f"the proposal's deadline of {self.seconds:g} s passed"
        return None


@dataclass
class _Outcome:
    """What one answer turned into: a child source, or the error a repair turn shows."""

    source: str | None
    kind: str
    description: str = ""
    error: str | None = None
    #: False: showing the model its error cannot help (an answer withheld for the key,
    #: an answer over the size cap, an empty reply cut off at max_tokens...).
    repairable: bool = True


_REPAIR = (
    "That answer cannot be used: {error}\n"
    "Fix exactly this and answer again in the same format (one ```python block{what}). "
    "The same code again fails the same way: change it."
)
#: Temperature added per repair turn (capped at :data:`_MAX_REPAIR_TEMPERATURE`).
_REPAIR_TEMPERATURE_STEP = 0.3
_MAX_REPAIR_TEMPERATURE = 1.2


def _repair_temperature(base: float, turn: int) -> float:
    """The temperature of turn ``turn`` (0: the first answer, at the model's own)."""
    if turn == 0:
        return base
    return max(base, min(base + _REPAIR_TEMPERATURE_STEP * turn, _MAX_REPAIR_TEMPERATURE))


class LLMProposer:
    """Proposer for OpenAI-compatible chat endpoints (see the module doc).

    ``propose`` draws from ``rng``, in this order: the model (by weight), diff or
    full rewrite, the request ``seed``, then what the prompt shows (train feedback;
    for the detector contract the task). Counters: :attr:`consecutive_failures`
    (endpoint failures since the last answer), :attr:`endpoint_dead`,
    :attr:`last_error`, :meth:`stats`. ``on_progress`` (settable): called with a
    one-line text while a streamed answer arrives ("llm model: 143 tokens, 17.2 tok/s").
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
        self._clients: dict[int, OpenAIClient] = {}
        self._lock = threading.Lock()
        _KEY_FILTER.add(self._keys)
        self._consecutive = 0
        self._fatal: str | None = None
        self.last_error: str | None = None
        self.on_progress: Callable[[str], None] | None = None
        self._stats: dict[str, Any] = {
            "calls": 0,
            "answers": 0,
            "endpoint_failures": 0,
            "bad_answers": 0,
            "children": 0,
            "repair_turns": 0,
            "repaired": 0,
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
    def parent_choice(self) -> str:
        """``best`` or ``sampled``: which program the engine hands this proposer."""
        return self.config.parent

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
        """Counts and spend so far (calls, answers, failures, repairs, tokens, USD, per model)."""
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
                "edit": e.spec.edit,
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
        rewrite = rng.random() < self.config.rewrite_probability
        seed = rng.getrandbits(31)
        endpoint = self._endpoints[idx]
        spec = endpoint.spec
        clock = _Deadline(spec.deadline_for(self.config), context.cancelled)
        parents = (parent.id,)
        program = parse_program(parent.source) if spec.edit == "detector" else None
        if program is not None:
            mode = "detector"
        else:
            mode = "rewrite" if spec.edit == "full" or (spec.edit == "diff" and rewrite) else "diff"
            if spec.edit == "detector":  # a parent outside the convention: SEARCH/REPLACE
                mode = "rewrite" if rewrite else "diff"
        operator = f"llm_{mode}"
        task: DetectorTask | None = None
        try:
            if program is not None:
                task = build_detector_task(
                    parent, program, context, rng, n_missed=min(self.config.n_missed, 3)
                )
                system, user = task.system, task.user
            else:
                built = self.build_prompt(parent, inspirations, rng, context, mode)
                system, user = built.system, built.user
        except Exception as exc:  # a prompt bug costs this candidate, not the run
            return Proposal(
                None, operator, parents, error=f"building the prompt failed: {exc}", model=spec.name
            )
        max_tokens = spec.tokens_for("detector" if mode == "detector" else spec.edit)
        messages: list[dict[str, str]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ]
        usage: dict[str, int] = {"prompt_tokens": 0, "completion_tokens": 0}
        raws: list[str] = []
        outcome = _Outcome(None, mode, error="no answer")
        parent_scores = None
        if program is not None:
            scores, _ = context.run_on_train(parent.source)
            parent_scores = None if scores is None else np.asarray(scores, dtype=float)
        turns = 1 + self.config.repair_turns
        retry = spec.retry
        asked = list(messages)
        for turn in range(turns):
            late = clock.why_not()
            if late is not None:
                if turn == 0:
                    return Proposal(None, operator, parents, error=late, model=spec.name)
                outcome = replace(outcome, error=f"{outcome.error}; no repair turn: {late}")
                break
            try:
                text, got = self._call(
                    idx,
                    messages,
                    # A follow-up turn gets its own seed (a repair turn also more
                    # temperature): a small model asked again at the same settings
                    # tends to repeat its answer.
                    (seed + turn) % 2**31 if self.config.send_seed else None,
                    max_tokens,
                    answer_complete if mode == "detector" else None,
                    temperature=_repair_temperature(spec.temperature, turn)
                    if retry == "repair"
                    else spec.temperature,
                    clock=clock,
                )
            except _EndpointError as exc:
                # The server's part scrubbed on its own: if it held the key, the rest still
                # says which endpoint failed. Escaped after the scrub (an escaped line
                # break would hide a key split across lines): the line is logged too.
                message = shown(
                    self._scrub(
                        f"LLM endpoint error ({spec.name} at {endpoint.base_url}): "
                        + self._scrub(str(exc))
                    ),
                    _MAX_ERROR_CHARS,
                )
                self._record_failure(spec.name, message, exc.fatal)
                if turn == 0:
                    return Proposal(None, operator, parents, error=message, model=spec.name)
                outcome = replace(outcome, error=f"{outcome.error}; the repair turn failed: {message}")
                break
            for k in ("prompt_tokens", "completion_tokens"):
                usage[k] += got[k]
            if got.get("estimated"):
                usage["estimated"] = 1
            if clock.cancelled():
                # The run ended while the model wrote: its answer is not run on train.
                return Proposal(
                    None, operator, parents, error="the run ended before the answer came",
                    model=spec.name, usage=usage,
                )
            raw, outcome = self._outcome(text, parent, program, task, context, parent_scores)
            if outcome.error is not None and got["completion_tokens"] >= max_tokens:
                outcome.error += f" (the answer hit max_tokens = {max_tokens} and may be cut off)"
            if raw is not None:
                raws.append(raw)
            if turn > 0:
                with self._lock:
                    self._stats["repair_turns"] += 1
                    if outcome.error is None:
                        self._stats["repaired"] += 1
            if outcome.error is None or not outcome.repairable or turn == turns - 1:
                break
            if retry == "fresh":
                messages = list(asked)  # the same question again; the seed is another
                continue
            what = " with the one function" if mode == "detector" else ""
            messages += [
                {"role": "assistant", "content": raw or ""},
                {"role": "user", "content": _REPAIR.format(error=outcome.error, what=what)},
            ]
        if outcome.kind in ("diff", "rewrite", "detector"):
            operator = f"llm_{outcome.kind}"
        cost = spec.cost_usd(usage["prompt_tokens"], usage["completion_tokens"])
        error = outcome.error
        self._record_answer(spec.name, usage, cost, error is None)
        if len(raws) > 1:
            operator += f"+{retry}" if error is None else ""
        raw_response = (
            None
            if not raws
            else raws[0]
            if len(raws) == 1
            else "\n\n".join(
                (f"--- {retry} turn {i} ---\n" if i else "") + r for i, r in enumerate(raws)
            )
        )
        return Proposal(
            source=outcome.source if error is None else None,
            operator=operator,
            parent_ids=parents,
            description=self._scrub(outcome.description)[:_MAX_DESCRIPTION_CHARS],
            error=None if error is None else self._scrub(error)[:_MAX_ERROR_CHARS],
            raw_response=raw_response,
            model=spec.name,
            usage=usage,
            cost_usd=cost,
        )

    def _outcome(
        self,
        text: str | None,
        parent: ProgramInfo,
        program: Any,
        task: DetectorTask | None,
        context: ProposalContext,
        parent_scores: np.ndarray | None,
    ) -> tuple[str | None, _Outcome]:
        """The answer as kept (scrubbed) and what it turned into."""
        cap = self.config.max_answer_chars
        if text is not None and len(text) > cap:
            # Refused before any parsing; only its head (scrubbed) is kept to look at. A
            # streamed answer was closed just past the cap: its length is a floor.
            error = (
                f"the answer is at least {len(text):,} characters, over the cap of {cap:,} "
                "([llm] max_answer_chars); refused unparsed"
            )
            return self._scrub(text[:cap]), _Outcome(None, "none", error=error, repairable=False)
        if text is None:
            parsed = parse_answer(parent.source, None)
            return None, _Outcome(None, "none", error=parsed.error)
        # Scrubbed before parsing: a key echoed into code must not reach the lineage.
        raw, withheld = self._scrubber.scan(text)
        if withheld:
            return raw, _Outcome(
                None,
                "none",
                error="the answer held the API key (or a fragment or encoding of it): "
                "withheld and not parsed",
                repairable=False,
            )
        if task is not None and program is not None:
            detector = self._detector_outcome(raw, parent, program, task, context, parent_scores)
            if detector is not None:
                return raw, detector
        parsed: ParsedAnswer = parse_answer(parent.source, raw, max_chars=None)
        error = parsed.error
        if error is None and parsed.source is not None:
            report = check_program(parsed.source)
            if not report.ok:
                error = f"the child fails the sandbox check: {report.message}"
        description = "\n".join(x for x in (parsed.idea, parsed.summary) if x)
        return raw, _Outcome(parsed.source, parsed.kind, description, error)

    def _detector_outcome(
        self,
        raw: str,
        parent: ProgramInfo,
        program: Any,
        task: DetectorTask,
        context: ProposalContext,
        parent_scores: np.ndarray | None,
    ) -> _Outcome | None:
        """The detector contract's reading of an answer; None: the answer is a whole
        program (it defines ``score``) and is read as a rewrite instead."""
        try:
            code = answer_code(strip_reasoning(raw))
        except DetectorError as exc:
            return _Outcome(None, "detector", error=str(exc))
        if defines_score(code):
            return None  # a whole program: read as a rewrite, as any mode accepts one
        try:
            wired = wire_answer(code, program, task, context, parent_scores)
        except DetectorError as exc:
            return _Outcome(None, "detector", error=str(exc))
        return _Outcome(wired.source, "detector", wired.description)

    # ----------------------------------------------------------------- internals

    def _scrub(self, text: str) -> str:
        return self._scrubber.scrub(text)

    def _client(self, idx: int) -> OpenAIClient:
        """The endpoint's client, made on first use (an unused proposer opens none)."""
        with self._lock:
            client = self._clients.get(idx)
            if client is None:
                e = self._endpoints[idx]
                client = OpenAIClient(
                    e.base_url,
                    None if e.key == _NO_KEY else e.key,
                    timeout_s=e.spec.timeout or self.config.timeout,
                    connect_timeout_s=min(10.0, e.spec.timeout or self.config.timeout),
                    retry=RetryPolicy(
                        attempts=self.config.retries + 1,
                        backoff_base_s=self.config.retry_delay,
                        backoff_max_s=max(self.config.retry_delay * 8, 1.0),
                    ),
                )
                self._clients[idx] = client
            return client

    def _call(
        self,
        idx: int,
        messages: list[dict[str, str]],
        seed: int | None,
        max_tokens: int,
        stop_when: Callable[[str], bool] | None = None,
        *,
        temperature: float | None = None,
        clock: _Deadline | None = None,
    ) -> tuple[str | None, dict[str, int]]:
        spec = self._endpoints[idx].spec
        timeout = spec.timeout or self.config.timeout
        # A request gets what is left of the proposal's deadline, if that is less.
        by_deadline = clock is not None and clock.left() < timeout
        if clock is not None:
            timeout = max(min(timeout, clock.left()), 0.001)
        with self._lock:
            self._stats["calls"] += 1
            self._stats["by_model"][spec.name]["calls"] += 1
        body: dict[str, Any] = {
            "model": spec.name,
            "messages": messages,
            "temperature": spec.temperature if temperature is None else temperature,
            "max_tokens": max_tokens,
        }
        if spec.top_p is not None:
            body["top_p"] = spec.top_p
        if spec.reasoning_effort is not None:
            body["reasoning_effort"] = spec.reasoning_effort
        if seed is not None:
            body["seed"] = seed
        progress = None
        if spec.stream and self.on_progress is not None:
            report = self.on_progress

            def progress(p: Progress) -> None:
                when = "" if clock is None else f", {clock.elapsed():.0f} s of {clock.seconds:g}"
                report(f"llm {spec.name}: {p.tokens} tokens, {p.tokens_per_s:.1f} tok/s{when}")

        try:
            reply = self._client(idx).chat(
                body,
                stream=spec.stream,
                timeout_s=timeout,
                rng=random.Random(seed or 0),
                on_progress=progress,
                stop_when=stop_when,
                max_chars=self.config.max_answer_chars,
            )
        except ChatError as exc:
            message, fatal = _describe_chat_error(exc, timeout)
            if by_deadline and exc.timed_out and clock is not None:
                message = f"no answer within the proposal's deadline of {clock.seconds:g} s: {message}"
            raise _EndpointError(message, fatal) from None
        text = reply.text
        if reply.usage:
            usage = dict(reply.usage)
        else:
            # No usage from the server: a streamed answer's chunks are its tokens (one
            # each on llama.cpp); else estimate 4 characters a token, so caps still bite.
            chars = sum(len(m["content"]) for m in messages)
            usage = {
                "prompt_tokens": math.ceil(chars / 4),
                "completion_tokens": reply.chunks
                if reply.chunks is not None
                else math.ceil(len(text or "") / 4),
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
        # Clients and locks do not pickle; they are rebuilt on first use.
        state = self.__dict__.copy()
        state.pop("_lock", None)
        state["_clients"] = {}
        state["on_progress"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        _KEY_FILTER.add(self._keys)
