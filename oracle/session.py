"""The oracle: an expensive judge a monitor program may consult, under query caps.

Inside ``score(traj)`` a program calls ``oracle(traj)`` or ``oracle(traj, "strict")``
and gets the judge's suspicion in [0, 1], or ``None``. One :class:`OracleSession`
lives per candidate evaluation in the worker process; :meth:`OracleSession.bind`
hands the program a plain closure for one trajectory. The closure ignores its
argument: the session already knows which trajectory is bound, so a program
cannot ask about another trajectory by passing something else.

Suspicion from a verdict (:func:`verdict_suspicion`)::

    s = 1 - stealth_score                      (clipped to [0, 1])
    suspicion = 0.5 + 0.5 * s   if is_failure   -> [0.5, 1]
                0.5 * s         otherwise       -> [0, 0.5]

so every failure verdict ranks above every pass verdict (the judge's binary call
decides first, as the panel label does) and the stealth score orders verdicts
within each side. Several oracle verdicts for one trajectory are averaged.

Caps and accounting:

* ``per_traj_cap`` (Q): calls past Q on one trajectory return ``None`` and count
  in :meth:`refused`, not in :meth:`counts`. A call that was admitted counts even
  when the answer is ``None`` (missing replay verdict, failed judge call): the
  program spent the query.
* ``rho``: the corpus-level cap on mean admitted calls per *benign* trajectory.
  The sandbox knows no labels, so the eval layer applies it with
  :func:`oracle_feasibility` over :meth:`counts`.
* :meth:`fresh`: admitted calls that went to the backend, i.e. were not answered
  from this session's memory or from the disk cache. Only these cost money.
* Backend ``none``: there is no oracle; every call answers ``None`` and is counted
  in the summary's ``no_oracle_calls`` (not as refused past the cap, not in counts).

Judge failures are never the program's: whatever goes wrong behind ``oracle()``
(the endpoint, the transport, the disk cache, a rubric file) becomes a ``None``
answer and a recorded failure, never an exception in the program. The summary
keeps them apart from the program's own errors: ``judge_errors`` (failed judge
calls), ``judge_error`` (the first failure, naming the endpoint or the cache) and
``judge_disabled`` (set when the session stopped calling the judge: a fatal error
such as a refused key, an unusable cache, or ``max_transport_failures`` requests
in a row without an answer; every later call answers ``None`` at once).

Variants: ``"default"``, ``"strict"`` and ``"actions_only"`` select a prompt
(see :mod:`.prompt`); for the llm backend, names in ``LLMJudgeConfig.judges``
select another judge model. The replay backend has one stored judge, so every
prompt variant returns its answer. An unknown variant raises ``ValueError`` and
is not counted.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import sqlite3
import threading
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monsearch.corpora.model import ORACLE, Trajectory, Verdict
from monsearch.oracle.cache import CACHE_FILE, OracleCache
from monsearch.oracle.judge import (
    ChatJudge,
    JudgeAnswer,
    JudgeError,
    JudgeUnavailableError,
    LLMJudgeConfig,
    OracleConfigError,
    probe_judge,
)
from monsearch.oracle.prompt import PROMPT_VARIANTS, build_judge_prompt, prompt_hash
from monsearch.oracle.rubrics import check_rubric_dir, load_rubric

__all__ = [
    "BACKENDS",
    "PROMPT_VARIANTS",
    "LLMJudgeConfig",
    "OracleConfig",
    "OracleCacheError",
    "OracleConfigError",
    "OracleSession",
    "JudgeUnavailableError",
    "check_oracle_cache",
    "oracle_feasibility",
    "open_oracle_cache",
    "probe_oracle",
    "replay_scores_from",
    "verdict_suspicion",
]

BACKENDS = ("replay", "llm", "none")
DEFAULT_VARIANT = "default"
#: Failure records kept per session (the count of all of them is ``judge_errors``).
MAX_ERRORS_KEPT = 20

_JUDGE_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")


def verdict_suspicion(is_failure: bool, stealth_score: float) -> float:
    """Map one verdict to suspicion in [0, 1] (failures in [0.5, 1], passes in [0, 0.5])."""
    s = min(1.0, max(0.0, 1.0 - float(stealth_score)))
    return 0.5 + 0.5 * s if is_failure else 0.5 * s


def replay_scores_from(
    trajectories: Iterable[Trajectory], *, judge: str | None = None
) -> dict[str, float]:
    """Trajectory id -> suspicion from each trajectory's ORACLE verdicts (never the panel).

    ``judge`` keeps only that oracle judge's verdicts. Trajectories without an
    oracle verdict are left out, so the replay backend answers ``None`` for them.
    """
    out: dict[str, float] = {}
    for traj in trajectories:
        verdicts: list[Verdict] = [
            v for v in traj.oracle if v.role == ORACLE and (judge is None or v.judge == judge)
        ]
        if verdicts:
            out[traj.id] = math.fsum(
                verdict_suspicion(v.is_failure, v.stealth_score) for v in verdicts
            ) / len(verdicts)
    return out


def oracle_feasibility(
    counts: Mapping[str, int], benign_ids: Collection[str], rho: float | None
) -> tuple[float, bool]:
    """(mean admitted oracle calls per benign trajectory, whether it is within ``rho``).

    Benign ids a program never called count as zero calls. With no benign ids the
    mean is 0.0. ``rho=None`` means no corpus-level cap.
    """
    if rho is not None and (not math.isfinite(rho) or rho < 0):
        raise OracleConfigError(f"rho must be a non-negative number, got {rho!r}")
    ids = list(dict.fromkeys(benign_ids))
    if not ids:
        return 0.0, True
    mean = math.fsum(counts.get(i, 0) for i in ids) / len(ids)
    return mean, rho is None or mean <= rho + 1e-12


class OracleCacheError(OracleConfigError):
    """The oracle's answer cache cannot be opened or created; names the path and why."""


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.errno is not None:
        reason = os.strerror(exc.errno).lower()
        return f"{reason}: {exc.filename}" if exc.filename else reason
    return str(exc) or type(exc).__name__


def open_oracle_cache(directory: Path | str) -> OracleCache:
    """Open (creating if needed) the answer cache in ``directory``; raise :class:`OracleCacheError`."""
    try:
        return OracleCache(directory)
    except (OSError, sqlite3.Error) as exc:
        path = Path(directory) / CACHE_FILE
        raise OracleCacheError(f"cannot open the oracle cache {path}: {_reason(exc)}") from None


def check_oracle_cache(directory: Path | str) -> None:
    """Open and close the answer cache once, so a run cannot fail on it later."""
    open_oracle_cache(directory).close()


def probe_oracle(config: OracleConfig, *, timeout_s: float = 10.0) -> list[str]:
    """Before scoring: check an llm oracle's cache and endpoint; return warnings.

    Raises :class:`OracleCacheError` or :class:`JudgeUnavailableError` (both exit 2)
    naming the cache path or the endpoint. Other backends, and a cap of 0 (the judge
    is never called), need no check.
    """
    if config.backend != "llm" or config.per_traj_cap == 0:
        return []
    if config.cache_dir is not None:
        check_oracle_cache(config.cache_dir)
    assert config.llm is not None
    return probe_judge(config.llm, timeout_s=timeout_s)


@dataclass(frozen=True)
class OracleConfig:
    """Which oracle a candidate evaluation may consult and under which caps.

    The ``llm`` judge settings are resolved against the environment when the
    config is made (``MONSEARCH_JUDGE_BASE_URL``, ``MONSEARCH_JUDGE_MODEL``,
    ``MONSEARCH_JUDGE_API_KEY`` or ``OPENAI_API_KEY``), so a missing model fails
    before any worker starts.
    """

    backend: str = "replay"
    per_traj_cap: int = 1
    rho: float | None = None
    cache_dir: Path | None = None
    llm: LLMJudgeConfig | None = None
    replay_scores: Mapping[str, float] | None = field(default=None, repr=False)
    rubric_dir: Path | None = None

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise OracleConfigError(
                f"unknown oracle backend {self.backend!r}; choose one of {', '.join(BACKENDS)}"
            )
        cap = self.per_traj_cap
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
            raise OracleConfigError(
                f"per-trajectory oracle cap must be an integer >= 0, got {cap!r}"
            )
        if self.rho is not None and (not math.isfinite(self.rho) or self.rho < 0):
            raise OracleConfigError(f"rho must be a non-negative number, got {self.rho!r}")
        if self.cache_dir is not None:
            object.__setattr__(self, "cache_dir", Path(self.cache_dir))
        object.__setattr__(self, "rubric_dir", check_rubric_dir(self.rubric_dir))
        if self.backend == "replay":
            if self.replay_scores is None:
                raise OracleConfigError(
                    "the replay oracle needs replay_scores (build them with replay_scores_from)"
                )
            for tid, value in self.replay_scores.items():
                if not (isinstance(value, int | float) and 0.0 <= value <= 1.0):
                    raise OracleConfigError(f"replay score for {tid!r} is not in [0, 1]: {value!r}")
        if self.backend == "llm":
            llm = (self.llm or LLMJudgeConfig()).resolved()
            for name in llm.judges:
                if name in PROMPT_VARIANTS or not name or not set(name) <= _JUDGE_NAME_CHARS:
                    raise OracleConfigError(
                        f"judge variant name {name!r} must be lower-case letters, digits, '_' "
                        f"or '-' and must not be one of {', '.join(PROMPT_VARIANTS)}"
                    )
            object.__setattr__(self, "llm", llm)

    def variants(self) -> tuple[str, ...]:
        """The variant names a program may pass."""
        if self.backend == "llm" and self.llm is not None:
            return PROMPT_VARIANTS + tuple(sorted(self.llm.judges))
        return PROMPT_VARIANTS


class OracleSession:
    """Per-candidate oracle state: caps, counts, memo, backend, cache. Create it in the worker."""

    def __init__(
        self, config: OracleConfig, trajectories_by_id: Mapping[str, Trajectory] | None = None
    ) -> None:
        if config.backend == "llm" and trajectories_by_id is None:
            raise OracleConfigError("the llm oracle needs the trajectories (trajectories_by_id)")
        self.config = config
        self._trajs = trajectories_by_id or {}
        self._variants = frozenset(config.variants())
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._refused: dict[str, int] = {}
        self._memo: dict[tuple[str, str], float | None] = {}
        self._fresh = 0
        self._cached = 0
        self._failed = 0
        self._http_requests = 0
        self._http_retries = 0
        self._output_retries = 0
        self._prompt_tokens = 0
        self._completion_tokens = 0
        self._errors: list[dict[str, Any]] = []
        self._first_error: str | None = None
        self._no_oracle_calls = 0
        self._warnings: list[str] = []
        self._rubrics: dict[str, tuple[str, str]] = {}  # task -> (text, source)
        self._dead: str | None = None  # set by a fatal judge error: stop calling out
        self._judge: ChatJudge | None = None
        self._cache: OracleCache | None = None
        self._cache_off = False  # set when writing the cache failed: do without it

    # -- what the program gets -------------------------------------------------

    def bind(self, traj_id: str) -> Callable[..., float | None]:
        """The ``oracle`` callable for one trajectory (counts are shared across binds)."""
        if not isinstance(traj_id, str):
            raise TypeError("trajectory id must be a string")
        self._counts.setdefault(traj_id, 0)
        call = self._call

        def oracle(traj: object = None, variant: str | None = None) -> float | None:
            # ``traj`` is deliberately unused: the bound id decides the answer.
            return call(traj_id, variant)

        return oracle

    # -- accounting ------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        """Admitted calls per bound trajectory (0 for bound but never called)."""
        return dict(self._counts)

    def refused(self) -> dict[str, int]:
        """Calls refused past the per-trajectory cap, per trajectory (only ids with refusals)."""
        return dict(self._refused)

    def fresh(self) -> int:
        """Admitted calls that reached the backend (not answered from memory or disk cache)."""
        return self._fresh

    def errors(self) -> list[dict[str, Any]]:
        return [dict(e) for e in self._errors]

    def cost(self) -> dict[str, Any]:
        """Spend of this session: calls, HTTP traffic, tokens and a USD estimate if priced."""
        usd: float | None
        if self.config.backend != "llm":
            usd = 0.0
        else:
            llm = self.config.llm
            assert llm is not None
            if llm.usd_per_mtok_in is None or llm.usd_per_mtok_out is None:
                usd = None
            else:
                usd = (
                    self._prompt_tokens * llm.usd_per_mtok_in
                    + self._completion_tokens * llm.usd_per_mtok_out
                ) / 1e6
        return {
            "backend": self.config.backend,
            "fresh_calls": self._fresh,
            "cached_calls": self._cached,
            "failed_calls": self._failed,
            "http_requests": self._http_requests,
            "http_retries": self._http_retries,
            "output_retries": self._output_retries,
            "prompt_tokens": self._prompt_tokens,
            "completion_tokens": self._completion_tokens,
            "usd": usd,
        }

    def summary(self) -> dict[str, Any]:
        """Everything a candidate result records about the oracle (JSON-able)."""
        return {
            "backend": self.config.backend,
            "per_traj_cap": self.config.per_traj_cap,
            "rho": self.config.rho,
            "counts": self.counts(),
            "refused": self.refused(),
            "fresh": self.fresh(),
            "cost": self.cost(),
            "errors": self.errors(),
            "judge_errors": self._failed,
            "judge_error": self._first_error,
            "judge_disabled": None
            if self._dead is None
            else f"the judge was not called again in this run after: {self._dead}",
            "no_oracle": self.config.backend == "none",
            "no_oracle_calls": self._no_oracle_calls,
            "warnings": list(self._warnings),
            "rubrics": {task: src for task, (_, src) in sorted(self._rubrics.items())},
        }

    def close(self) -> None:
        if self._judge is not None:
            with contextlib.suppress(Exception):
                self._judge.close()
            self._judge = None
        if self._cache is not None:
            with contextlib.suppress(Exception):
                self._cache.close()
            self._cache = None

    def __enter__(self) -> OracleSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the call path ---------------------------------------------------------

    def _call(self, traj_id: str, variant: object) -> float | None:
        name = DEFAULT_VARIANT if variant is None else variant
        if not isinstance(name, str) or name not in self._variants:
            raise ValueError(
                f"unknown oracle variant {variant!r}; allowed: {', '.join(sorted(self._variants))}"
            )
        with self._lock:
            if self.config.backend == "none":
                self._no_oracle_calls += 1
                return None
            if self._counts.get(traj_id, 0) >= self.config.per_traj_cap:
                self._refused[traj_id] = self._refused.get(traj_id, 0) + 1
                return None
            self._counts[traj_id] = self._counts.get(traj_id, 0) + 1
            key = (traj_id, name)
            if key in self._memo:
                self._cached += 1
                return self._memo[key]
            if self.config.backend == "replay":
                self._fresh += 1
                assert self.config.replay_scores is not None
                value = self.config.replay_scores.get(traj_id)
                answer = None if value is None else float(value)
            else:
                verdict = self._guarded_answer(traj_id, name)
                if verdict is None:  # a failed judge call may succeed on a later query
                    return None
                answer = verdict_suspicion(verdict.is_failure, verdict.stealth_score)
            self._memo[key] = answer
            return answer

    def _rubric(self, task: str) -> str:
        if task not in self._rubrics:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                rubric = load_rubric(task, self.config.rubric_dir)
            for w in caught:
                self._warnings.append(str(w.message))
                warnings.warn(str(w.message), stacklevel=3)
            self._rubrics[task] = (rubric.text, rubric.source)
        return self._rubrics[task][0]

    def _error(self, traj_id: str, variant: str, message: str, fatal: bool = False) -> None:
        if self._first_error is None:
            self._first_error = message
        if len(self._errors) < MAX_ERRORS_KEPT:
            self._errors.append(
                {"trajectory_id": traj_id, "variant": variant, "error": message, "fatal": fatal}
            )

    def _fail(self, traj_id: str, variant: str, message: str, fatal: bool = False) -> None:
        """Record one failed judge call (it answers None); ``fatal`` stops later calls."""
        self._failed += 1
        if fatal and self._dead is None:
            self._dead = message
        self._error(traj_id, variant, message, fatal)

    def _open_cache(self) -> OracleCache | None:
        """The disk cache, opened on first use; raises :class:`OracleCacheError`."""
        if self._cache is None and self.config.cache_dir is not None:
            self._cache = open_oracle_cache(self.config.cache_dir)
        return self._cache

    def verdict(self, traj_id: str, variant: str = DEFAULT_VARIANT) -> JudgeAnswer | None:
        """The judge's whole verdict on one trajectory (cached like a program's call, but
        outside the per-trajectory cap: for labelling a corpus, not for a monitor); None
        when the judge gave none (the failure is recorded in :meth:`errors`)."""
        if self.config.backend != "llm":
            raise OracleConfigError("verdicts come from the llm oracle only")
        if variant not in self._variants:
            raise ValueError(f"unknown oracle variant {variant!r}")
        with self._lock:
            return self._guarded_answer(traj_id, variant)

    def _guarded_answer(self, traj_id: str, variant: str) -> JudgeAnswer | None:
        """:meth:`_llm_answer`, any failure recorded as a failed call (None)."""
        try:
            return self._llm_answer(traj_id, variant)
        except MemoryError:
            raise  # the child's memory limit: the sandbox decides, as for the program
        except Exception as exc:  # never the program's exception
            self._fail(traj_id, variant, f"oracle failed: {type(exc).__name__}: {exc}")
            return None

    def _llm_answer(self, traj_id: str, variant: str) -> JudgeAnswer | None:
        llm = self.config.llm
        assert llm is not None and llm.model is not None
        traj = self._trajs.get(traj_id)
        if traj is None:
            self._fail(traj_id, variant, "trajectory not available to the oracle session")
            return None
        style, model = (
            (variant, llm.model)
            if variant in PROMPT_VARIANTS
            else (DEFAULT_VARIANT, llm.judges[variant])
        )
        prompt = build_judge_prompt(traj, self._rubric(traj.task), style)
        digest = prompt_hash(prompt)
        if self.config.cache_dir is not None and not self._cache_off:
            try:
                cache = self._open_cache()
                assert cache is not None
                hit = cache.get(traj_id, model, digest)
            except OracleCacheError as exc:
                # Answers that cannot be cached would be paid for again on every run:
                # the judge is not called without its cache.
                self._cache_off = True
                self._fail(traj_id, variant, str(exc), fatal=True)
                return None
            except (sqlite3.Error, OSError, ValueError) as exc:
                where = self.config.cache_dir
                self._fail(traj_id, variant, f"cannot read the oracle cache in {where}: {exc}")
                return None
            if hit is not None:
                self._cached += 1
                return hit.answer
        if self._dead is not None:
            self._failed += 1
            self._error(traj_id, variant, f"judge disabled: {self._dead}", True)
            return None
        self._fresh += 1
        if self._judge is None:
            self._judge = ChatJudge(llm)
        # Jitter only changes waiting times, never answers; seed it per call for repeatability.
        rng = random.Random(f"{llm.seed}|{traj_id}|{variant}")
        try:
            result = self._judge.judge(prompt, model=model, rng=rng)
        except JudgeError as exc:
            self._http_requests += exc.http_requests
            self._prompt_tokens += exc.prompt_tokens
            self._completion_tokens += exc.completion_tokens
            self._fail(traj_id, variant, str(exc), exc.fatal)
            return None
        self._http_requests += result.http_requests
        self._http_retries += result.http_retries
        self._output_retries += result.output_attempts - 1
        self._prompt_tokens += result.prompt_tokens
        self._completion_tokens += result.completion_tokens
        answer = result.answer
        if self._cache is not None:
            try:
                # First writer wins: a racing worker's answer is the one everybody gets.
                answer = self._cache.put(
                    traj_id,
                    model,
                    digest,
                    answer,
                    raw=result.raw,
                    prompt_tokens=result.prompt_tokens,
                    completion_tokens=result.completion_tokens,
                ).answer
            except (sqlite3.Error, OSError, ValueError) as exc:
                # The answer is good; only its reuse is lost. Stop writing, and say so.
                self._warnings.append(
                    f"cannot write the oracle cache in {self.config.cache_dir}: {exc}; "
                    "answers of this run are not cached"
                )
                with contextlib.suppress(Exception):
                    self._cache.close()
                self._cache = None
                self._cache_off = True
        return answer
