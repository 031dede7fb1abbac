"""The evolution loop: propose, tune, evaluate on val, record, select.

monsearch owns the loop (shared/research/openevolve-0.4.0.md §14.5): openevolve's
own controller cannot kill a stuck candidate, ends silently when a worker dies and
is not reproducible. openevolve supplies the program database (MAP-Elites,
islands, migration: :mod:`.database`) and, for the LLM proposer, the model
ensemble and diff handling.

Determinism: candidates are proposed in batches of ``search.batch`` from one
database state; every random draw comes from a generator seeded by (run seed,
sequence number, purpose); results enter the database and the lineage in sequence
order, whatever order the sandbox finishes them in. Resume replays: the loop runs
again from the start, and every sequence number already in the lineage takes its
stored record instead of being proposed and evaluated again, so a resumed run
continues exactly where an uninterrupted one would be.

The LLM proposer beside an offline one runs asynchronously (:mod:`.llm_lane`): the
loop never waits for the model, and an answer becomes the next candidate after it
arrives. Such a run depends on when answers arrive (it still resumes by replay);
the offline proposer alone is reproducible bit for bit. With the LLM alone there is
nothing else to propose, and each candidate waits for the model's answer.
"""

from __future__ import annotations

import difflib
import json
import random
import signal
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from monsearch.errors import MonsearchError
from monsearch.strategies.convention import BAND_PARAMS

from .config import EvolveConfig
from .database import ProgramsDatabase, derived_seed
from .evaluator import SearchEvaluator
from .lineage import PROPOSAL_ERROR, CandidateRecord, LineageStore, source_hash
from .proposal import ProgramInfo, Proposal, ProposalContext, Proposer, TrainData
from .runs import Run, SelectedStrategy

#: Status of a candidate whose program was already evaluated (the proposer kept
#: producing known programs); it costs one evaluation of the budget, like on any search.
DUPLICATE = "duplicate"


class SearchError(MonsearchError):
    """The search cannot start or cannot go on."""


@dataclass
class Progress:
    """What the progress display shows after each recorded candidate."""

    done: int
    budget: int
    best: float
    best_id: str | None
    evals_per_s: float
    usd: float
    tokens: int
    last: CandidateRecord | None = None


@dataclass
class SearchOutcome:
    run: Run
    status: str  # finished | interrupted | stopped (a spend cap) | endpoint_failed
    reason: str
    evaluated: int
    replayed: int
    selected: SelectedStrategy | None
    best_id: str | None
    best_fitness: float
    spend: dict[str, Any] = field(default_factory=dict)


class StopFlag:
    """Set by the first Ctrl-C: the loop records the batch in flight, then stops."""

    def __init__(self) -> None:
        self.reason: str | None = None

    def set(self, reason: str) -> None:
        self.reason = self.reason or reason

    def __bool__(self) -> bool:
        return self.reason is not None


def _diff(parent: str | None, child: str | None) -> str:
    if parent is None or child is None:
        return ""
    lines = difflib.unified_diff(
        parent.splitlines(keepends=True),
        child.splitlines(keepends=True),
        fromfile="parent",
        tofile="child",
        n=2,
    )
    return "".join(lines)


def _info(record: CandidateRecord) -> ProgramInfo:
    return ProgramInfo(
        id=record.id,
        source=record.source or "",
        fitness=record.fitness,
        metrics=record.fitness_json or {},
        operator=record.operator,
        generation=record.generation,
    )


def _oracle_rho(record: CandidateRecord) -> float:
    oracle = (record.fitness_json or {}).get("oracle") or {}
    return float(oracle.get("rho") or 0.0)


def make_proposers(cfg: EvolveConfig) -> dict[str, Proposer]:
    """The proposers the config names, built once per run."""
    out: dict[str, Proposer] = {}
    for spec in cfg.proposers:
        if spec.name == "offline":
            from .offline import OfflineProposer

            # Mining follows the fitness's view: under the invariant fitness only atoms
            # that separate failures within their task x outcome cells are mined.
            view = "flat" if cfg.evaluation.fitness == "invariant" else "plain"
            out["offline"] = OfflineProposer(
                mining_options={
                    "view": view,
                    "cell_keys": tuple(cfg.evaluation.cells),
                    "cell_mass": cfg.evaluation.cell_mass,
                }
            )
        elif spec.name == "perturb":
            from .offline import PerturbProposer

            out["perturb"] = PerturbProposer()
        elif spec.name == "llm":
            from .llm_proposer import LLMProposer

            out["llm"] = LLMProposer.from_dict(
                cfg.llm,
                per_traj_cap=cfg.evaluation.per_traj_cap,
                rho=cfg.evaluation.rho,
                oracle_available=cfg.evaluation.oracle != "none",
            )
    return out


def seed_sources(names: tuple[str, ...] | list[str]) -> list[tuple[str, str]]:
    """Seed programs by name (``monsearch.strategies.SEEDS``) or by path to a ``.py`` file."""
    from pathlib import Path

    from monsearch.strategies import SEEDS

    out = []
    for name in names:
        if name in SEEDS:
            out.append((name, SEEDS[name]))
            continue
        path = Path(name)
        if not path.is_file():
            known = ", ".join(sorted(SEEDS))
            raise SearchError(f"seed {name!r}: not a built-in seed ({known}) nor a program file")
        try:
            out.append((path.name, path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as exc:
            raise SearchError(f"seed {name!r}: unreadable ({exc})") from None
    return out


def _choose(cfg: EvolveConfig, rng: random.Random) -> str:
    names = [p.name for p in cfg.proposers]
    weights = [p.weight for p in cfg.proposers]
    return rng.choices(names, weights=weights, k=1)[0] if len(names) > 1 else names[0]


@dataclass
class _Pending:
    seq: int
    island: int
    parent: CandidateRecord | None
    proposal: Proposal
    proposer: str
    timings: dict[str, float]
    tune: dict[str, Any] | None = None
    duplicate_of: str | None = None
    #: Whether optuna tunes it before it is scored (every k-th proposed candidate).
    tune_due: bool = False
    #: Its tuning and val scoring, running while the next candidates are proposed.
    work: Future[Any] | None = None
    #: When its tuning ended (perf_counter), for the loop's time accounting.
    tuned_at: float | None = None
    #: Lineage artefacts on how it came to be (an LLM answer placed on arrival, or a
    #: draw for the LLM made by another proposer while the model was busy).
    extra: dict[str, Any] = field(default_factory=dict)


class Search:
    """One run of the loop over an open evaluator and lineage store."""

    def __init__(
        self,
        cfg: EvolveConfig,
        run: Run,
        evaluator: SearchEvaluator,
        train: TrainData,
        store: LineageStore,
        *,
        proposers: dict[str, Proposer] | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        on_llm_progress: Callable[[str], None] | None = None,
        on_stage: Callable[[str], None] | None = None,
        stop: StopFlag | None = None,
    ) -> None:
        self.cfg = cfg
        self.run = run
        self.evaluator = evaluator
        self.train = train
        self.store = store
        self.proposers = proposers if proposers is not None else make_proposers(cfg)
        for proposer in self.proposers.values():
            prepare = getattr(proposer, "prepare", None)
            if prepare is not None:
                prepare(train)  # e.g. mining train once, before the first proposal
            if on_llm_progress is not None and hasattr(proposer, "on_progress"):
                proposer.on_progress = on_llm_progress  # a streamed answer's tokens/s
        self.on_progress = on_progress
        self.on_llm_progress = on_llm_progress
        self.on_stage = on_stage
        #: The last candidate proposed (when an LLM answer arrived, for its record).
        self._proposed = -1
        #: Proposers that stand in for the LLM while it is busy (weights > 0).
        self.fallbacks = [
            p for p in cfg.proposers if p.name != "llm" and p.weight > 0 and p.name in self.proposers
        ]
        self.lane = self._make_lane()
        self.stop = stop if stop is not None else StopFlag()  # a StopFlag is falsy until set
        self.records: dict[str, CandidateRecord] = {}
        self.by_hash: dict[str, str] = {}
        self.db = ProgramsDatabase(cfg.search, cfg.seed)
        self.stored = {r.seq: r for r in store.records()}
        self.replayed = 0
        self.evaluated = 0
        self._t0 = time.perf_counter()
        #: Where the loop's wall time went (seconds): proposing, tuning on train,
        #: scoring on val; the rest of the loop is the framework's own overhead.
        #: With background work these are the loop thread's own times: its waits
        #: count as tuning while a tuning of the batch is still running.
        self.clock = {"propose_s": 0.0, "tune_s": 0.0, "eval_s": 0.0}
        # A candidate's tuning and val scoring run in the background while the loop
        # proposes the rest of its batch (proposals only read the database state the
        # batch started from, so the lineage is unchanged); the sandbox pools spread
        # the work over their workers. Only for pools safe to call from several
        # threads (the local sandbox); otherwise the batch is scored in one call.
        self._background: ThreadPoolExecutor | None = None
        if getattr(evaluator, "concurrent_val", False):
            self._background = ThreadPoolExecutor(
                max_workers=max(1, cfg.search.batch), thread_name_prefix="candidate"
            )

    def _make_lane(self) -> Any:
        """The asynchronous LLM lane of a mixed run (None: no LLM, or the LLM alone)."""
        llm = self.proposers.get("llm")
        if llm is None or not any(p.name == "llm" and p.weight > 0 for p in self.cfg.proposers):
            return None
        config = getattr(llm, "config", None)
        deadline = (
            max(m.deadline_for(config) for m in config.models) if config is not None else 300.0
        )
        slots = getattr(config, "slots", 1)
        if not self.fallbacks:
            self._note(
                "llm_mode",
                {"mode": "waits", "deadline_s": deadline},
                f"LLM proposals only: each candidate waits for the model's answer "
                f"(deadline {deadline:g} s a proposal)",
            )
            return None
        from .llm_lane import LLMLane

        serial = (
            "one request at a time, on purpose: a llama.cpp server answers one at a time "
            "(--llm-slots N for a server with parallel slots)"
            if slots == 1
            else f"{slots} requests at a time (--llm-slots)"
        )
        self._note(
            "llm_mode",
            {"mode": "async", "slots": slots, "deadline_s": deadline},
            f"LLM proposals run beside the evaluation, {serial}; the "
            f"{'/'.join(p.name for p in self.fallbacks)} proposer keeps the workers busy "
            f"meanwhile; deadline {deadline:g} s a proposal",
        )
        return LLMLane(
            llm,
            slots=slots,
            deadline_s=deadline,
            proposed=lambda: self._proposed,
            report=self.on_llm_progress,
        )

    def _note(self, key: str, value: dict[str, Any], text: str) -> None:
        """Say ``text`` on the console and keep ``value`` in the lineage's metadata."""
        self.store.set_meta(key, json.dumps(value, sort_keys=True))
        if self.on_stage is not None:
            self.on_stage(text)

    def _end_lane(self) -> None:
        if self.lane is None:
            return
        ended = self.lane.close()
        left = ended["in_flight"] + ended["arrived_unplaced"]
        text = (
            f"LLM proposals: {ended['asked']} asked, {ended['placed']} placed"
            + (f", {left} abandoned at the end of the run" if left else "")
        )
        self._note("llm_lane", ended, text)
        if self.on_llm_progress is not None:
            self.on_llm_progress("")

    # -- the loop

    def run_loop(self) -> tuple[str, str]:
        """Run until the budget is spent (or a stop); returns (status, reason)."""
        try:
            return self._loop()
        finally:
            self._end_lane()

    def _loop(self) -> tuple[str, str]:
        cfg = self.cfg
        seeds = seed_sources(cfg.seeds)
        seq = 0
        # Seeds first, one batch: they are the database's first programs.
        pending, replay = [], []
        for name, source in seeds[: cfg.budget]:
            if seq in self.stored:
                replay.append(seq)
                seq += 1
                continue
            pending.append(
                _Pending(
                    seq,
                    seq % cfg.search.islands,
                    None,
                    Proposal(source, f"seed:{name}", (), f"seed strategy {name!r}"),
                    "seed",
                    {},
                )
            )
            self._start(pending[-1])
            seq += 1
        self._finish(pending, replay)
        # Over several sources, later candidates are held to the seeds (eval/sources.py).
        seed_ids = [f"c{i:05d}" for i in range(min(len(seeds), cfg.budget))]
        set_reference = getattr(self.evaluator, "set_reference", None)
        if set_reference is not None:
            kept = [self.records[i] for i in seed_ids if i in self.records]
            set_reference([r.fitness_json for r in kept], [r.source for r in kept])
        while seq < cfg.budget:
            if self.stop:
                return "interrupted", self.stop.reason or "stopped"
            over = self._over_spend()
            if over:
                return "stopped", over
            if not self.records:
                raise SearchError("no seed strategy was recorded: nothing to evolve from")
            batch = range(seq, min(seq + cfg.search.batch, cfg.budget))
            pending = []
            for s in batch:
                if s not in self.stored:
                    pending.append(self._propose(s))
                    self._start(pending[-1])
            replay = [s for s in batch if s in self.stored]
            self._finish(pending, replay)
            seq = batch.stop
            dead = self._dead_proposer()
            if dead:
                return "endpoint_failed", dead
        return "finished", f"budget of {cfg.budget} evaluations spent"

    def _over_spend(self) -> str | None:
        totals = self.store.ledger_totals()
        llm = totals.get("llm", {})
        if self.cfg.max_usd is not None and totals["usd"] >= self.cfg.max_usd:
            return f"spend cap reached: ${totals['usd']:.4f} of --max-usd {self.cfg.max_usd:g}"
        tokens = llm.get("prompt_tokens", 0) + llm.get("completion_tokens", 0)
        if self.cfg.max_tokens is not None and tokens >= self.cfg.max_tokens:
            return f"token cap reached: {tokens} of --max-tokens {self.cfg.max_tokens}"
        return None

    def _dead_proposer(self) -> str | None:
        """Why the run must stop because its LLM endpoint keeps failing (None: it need not)."""
        llm = self.proposers.get("llm")
        if llm is None or not getattr(llm, "endpoint_dead", False):
            return None
        return (
            f"the LLM endpoint failed {getattr(llm, 'consecutive_failures', '?')} times in a "
            f"row (last: {getattr(llm, 'last_error', None)}); every candidate so far is "
            "recorded — fix the endpoint and continue with --resume"
        )

    def _context(self, seq: int) -> ProposalContext:
        return ProposalContext(
            train=self.train,
            score_on_train=self.evaluator.score_on_train,
            seed=self.cfg.seed,
            seq=seq,
            train_run=self.evaluator.train_run,
            audit_budget=self.cfg.evaluation.b_hi,
        )

    def _propose(self, seq: int) -> _Pending:
        cfg = self.cfg
        if self.lane is not None:
            job = self.lane.take()
            if job is not None:
                self._proposed = seq
                return self._placed(seq, job)
        self._proposed = seq
        island = seq % cfg.search.islands
        sampled = self.db.sample(seq, island, cfg.search.num_inspirations)
        parent = self.records[sampled.parent_id]
        inspirations = [_info(self.records[i]) for i in sampled.inspiration_ids if i in self.records]
        rng = random.Random(derived_seed(cfg.seed, seq, "propose"))
        name = _choose(cfg, rng)
        proposer = self.proposers[name]
        extra: dict[str, Any] = {}
        if getattr(proposer, "parent_choice", "sampled") == "best":
            # (the sample above is still drawn: the database's random stream stays the same)
            best = self.db.best_id()
            if best is not None and best in self.records:
                parent = self.records[best]
        if self.lane is not None and name == "llm":
            # The model is asked (if a slot is free) and this candidate does not wait
            # for it: a proposer of the run's others makes it now.
            if self.lane.can_ask():
                self.lane.ask(
                    seq,
                    parent,
                    _info(parent),
                    inspirations,
                    random.Random(derived_seed(cfg.seed, seq, "llm")),
                    self._context(seq),
                )
                extra["drawn"] = "llm: asked the model; made meanwhile by another proposer"
            else:
                extra["drawn"] = "llm: the model was busy; made by another proposer"
            fallback = self.fallbacks
            name = (
                rng.choices([p.name for p in fallback], weights=[p.weight for p in fallback])[0]
                if len(fallback) > 1
                else fallback[0].name
            )
            proposer = self.proposers[name]
            parent = self.records[sampled.parent_id]
        t0 = time.perf_counter()
        proposal = Proposal(None, "none", (parent.id,), error="no attempt")
        duplicate_of = None
        for _ in range(max(1, cfg.search.dedup_attempts)):
            try:
                proposal = proposer.propose(_info(parent), inspirations, rng, self._context(seq))
            except Exception as exc:  # a proposer bug costs one candidate, never the run
                proposal = Proposal(
                    None, "error", (parent.id,), error=f"{type(exc).__name__}: {exc}"
                )
            if proposal.source is None:
                break
            duplicate_of = self.by_hash.get(source_hash(proposal.source))
            if duplicate_of is None:
                break
        timings = {"propose_s": time.perf_counter() - t0}
        self.clock["propose_s"] += timings["propose_s"]
        pending = _Pending(seq, island, parent, proposal, name, timings, None, duplicate_of)
        pending.extra = extra
        pending.tune_due = self._tune_due(seq, pending)
        return pending

    def _tune_due(self, seq: int, pending: _Pending) -> bool:
        search = self.cfg.search
        return (
            pending.proposal.source is not None
            and pending.duplicate_of is None
            and search.optuna_trials > 0
            and search.optuna_every > 0
            and seq % search.optuna_every == 0
        )

    def _placed(self, seq: int, job: Any) -> _Pending:
        """Candidate ``seq`` is the LLM answer that arrived first (see :mod:`.llm_lane`)."""
        proposal = job.proposal
        duplicate_of = None
        if proposal.source is not None:
            duplicate_of = self.by_hash.get(source_hash(proposal.source))
        # The model's time, not the loop's: the loop did not wait for it.
        timings = {"propose_s": job.seconds}
        pending = _Pending(
            seq, seq % self.cfg.search.islands, job.parent, proposal, "llm", timings, None,
            duplicate_of,
        )  # fmt: skip
        pending.extra = {
            "llm_async": {
                "asked_at": job.asked_at,
                "arrived_after": job.arrived_after,
                **({"abandoned": True} if job.abandoned else {}),
            }
        }
        pending.tune_due = self._tune_due(seq, pending)
        return pending

    def _start(self, pending: _Pending) -> None:
        """Tune (if due) and score ``pending`` in the background, or tune it now."""
        if self._background is not None:
            if pending.proposal.source is not None and pending.duplicate_of is None:
                pending.work = self._background.submit(self._tune_and_score, pending)
        elif pending.tune_due:
            self._tune(pending)

    def _tune_and_score(self, pending: _Pending) -> Any:
        """Background job: the candidate's tuning, then its val evaluation."""
        if pending.tune_due:
            self._tune(pending)
            pending.tuned_at = time.perf_counter()
        source = pending.proposal.source
        assert source is not None
        return self.evaluator.evaluate_val([source])[0]

    def _tune(self, pending: _Pending) -> None:
        from .tuning import tune_params

        source = pending.proposal.source
        assert source is not None
        t0 = time.perf_counter()
        result = tune_params(
            source,
            lambda params: self.evaluator.score_on_train_many(source, params),
            self.evaluator.train_fitness,
            trials=self.cfg.search.optuna_trials,
            seed=derived_seed(self.cfg.seed, pending.seq, "optuna"),
            batch=self.cfg.search.optuna_batch,
            confirm=(
                (lambda params: self.evaluator.confirm_tuning(source, params))
                if self.evaluator.can_confirm
                else None
            ),
            fixed=BAND_PARAMS,
        )
        pending.timings["tune_s"] = time.perf_counter() - t0
        if self._background is None:
            self.clock["tune_s"] += pending.timings["tune_s"]
        if result is None:
            return
        pending.tune = {
            "trials": result.trials,
            "train_before": result.before,
            "train_after": result.after,
            "changed": list(result.changed),
        }
        if result.changed and source_hash(result.source) not in self.by_hash:
            pending.proposal.source = result.source
            pending.proposal.description += f" (+ optuna: {len(result.changed)} constants tuned on train)"

    def _finish(self, pending: list[_Pending], replay: list[int] = ()) -> None:  # type: ignore[assignment]
        """Evaluate what needs it, then record everything in sequence order."""
        to_eval = [
            p for p in pending if p.proposal.source is not None and p.duplicate_of is None
        ]
        t0 = time.perf_counter()
        if self._background is not None:
            results = self._wait(to_eval)
        else:
            results = self.evaluator.evaluate_val([p.proposal.source for p in to_eval])  # type: ignore[misc]
        elapsed = time.perf_counter() - t0
        tuned_at = max((p.tuned_at for p in to_eval if p.tuned_at is not None), default=t0)
        tuning = min(elapsed, max(0.0, tuned_at - t0))
        self.clock["tune_s"] += tuning
        self.clock["eval_s"] += elapsed - tuning
        eval_s = elapsed / max(1, len(to_eval))
        by_seq = {p.seq: r for p, r in zip(to_eval, results, strict=True)}
        items: list[tuple[int, Any]] = [(p.seq, p) for p in pending] + [(s, None) for s in replay]
        for seq, p in sorted(items, key=lambda x: x[0]):
            if p is None:
                record = self.stored[seq]
                self.replayed += 1
            else:
                record, scores, ledger = self._record(p, by_seq.get(seq), eval_s)
                self.store.add(record, scores, ledger)
                self.evaluated += 1
            self._admit(record)

    def _wait(self, to_eval: list[_Pending]) -> list[Any]:
        """The background jobs' results, in the order of ``to_eval``."""
        futures = [p.work for p in to_eval]
        try:
            return [f.result() for f in futures]  # type: ignore[union-attr]
        except BaseException:
            # A failed job or a second Ctrl-C: start nothing more of this batch (the
            # jobs already running end against the pools, which close next).
            for f in futures:
                if f is not None:
                    f.cancel()
            raise

    def _record(
        self, p: _Pending, result: Any, eval_s: float
    ) -> tuple[CandidateRecord, np.ndarray | None, list[dict[str, Any]]]:
        proposal = p.proposal
        parent_ids = proposal.parent_ids or ((p.parent.id,) if p.parent else ())
        artifacts: dict[str, Any] = dict(p.extra)
        if proposal.error:
            artifacts["proposal_error"] = proposal.error
        if proposal.raw_response is not None:
            artifacts["raw_response"] = proposal.raw_response[:20000]
        if proposal.model:
            artifacts["model"] = proposal.model
        if p.tune:
            artifacts["optuna"] = p.tune
        scores = None
        fitness_json = None
        sandbox_status = None
        if proposal.source is None:
            status, fitness = PROPOSAL_ERROR, 0.0
        elif p.duplicate_of is not None:
            status, fitness = DUPLICATE, 0.0
            artifacts["duplicate_of"] = p.duplicate_of
        else:
            status = result.fitness.status
            fitness = float(result.fitness.fitness)
            fitness_json = result.fitness.to_dict()
            sandbox_status = result.sandbox_status
            artifacts["sandbox"] = result.artifacts
            scores = result.scores
            p.timings["eval_s"] = result.wall_s or eval_s
        # When it was recorded, in seconds of this process's loop (a circumstance, not
        # content): what a comparison at equal wall-clock time reads.
        p.timings["at_s"] = time.perf_counter() - self._t0
        ledger = []
        if proposal.usage or proposal.cost_usd:
            ledger.append(
                {
                    "kind": "llm",
                    "model": proposal.model,
                    "prompt_tokens": proposal.usage.get("prompt_tokens", 0),
                    "completion_tokens": proposal.usage.get("completion_tokens", 0),
                    "calls": 1,
                    "usd": proposal.cost_usd,
                }
            )
        if fitness_json is not None:
            oracle = fitness_json.get("oracle") or {}
            if oracle.get("calls"):
                ledger.append(
                    {
                        "kind": "oracle",
                        "calls": oracle.get("fresh_calls") or 0,
                        "usd": oracle.get("cost_usd") or 0.0,
                    }
                )
        gen = 0 if p.parent is None else p.parent.generation + 1
        if len(parent_ids) > 1:
            gen = 1 + max(self.records[i].generation for i in parent_ids if i in self.records)
        record = CandidateRecord(
            seq=p.seq,
            id=f"c{p.seq:05d}",
            parent_ids=tuple(parent_ids),
            generation=gen,
            island=p.island,
            proposer=p.proposer,
            operator=proposal.operator,
            description=proposal.description,
            source=proposal.source,
            source_hash=None if proposal.source is None else source_hash(proposal.source),
            diff=_diff(p.parent.source if p.parent else None, proposal.source),
            status=status,
            sandbox_status=sandbox_status,
            fitness=fitness,
            fitness_json=fitness_json,
            artifacts=artifacts,
            spend={"llm_usd": proposal.cost_usd, **dict(proposal.usage)},
            timings=p.timings,
        )
        return record, scores, ledger

    def _admit(self, record: CandidateRecord) -> None:
        self.records[record.id] = record
        if record.source is not None and record.status not in (PROPOSAL_ERROR, DUPLICATE):
            self.by_hash.setdefault(record.source_hash or "", record.id)
            self.db.add(
                record.id,
                record.source,
                record.fitness,
                _oracle_rho(record),
                seq=record.seq,
                parent_id=record.parent_ids[0] if record.parent_ids else None,
                generation=record.generation,
                island=record.island or 0,
            )
        if self.on_progress is not None:
            self.on_progress(self.progress(record))
        if self.lane is not None and self.on_llm_progress is not None:
            self.on_llm_progress(self.lane.line())

    def progress(self, last: CandidateRecord | None = None) -> Progress:
        best = max(
            (r for r in self.records.values() if r.ok), key=lambda r: r.fitness, default=None
        )
        totals = self.store.ledger_totals()
        llm = totals.get("llm", {})
        elapsed = time.perf_counter() - self._t0
        return Progress(
            done=len(self.records),
            budget=self.cfg.budget,
            best=best.fitness if best else 0.0,
            best_id=best.id if best else None,
            evals_per_s=self.evaluated / elapsed if elapsed > 0 else 0.0,
            usd=totals["usd"],
            tokens=llm.get("prompt_tokens", 0) + llm.get("completion_tokens", 0),
            last=last,
        )

    # -- selection

    def select(self) -> SelectedStrategy | None:
        """The frozen strategy: best 5th bootstrap percentile among the top candidates."""
        ok = sorted(
            (r for r in self.records.values() if r.ok and r.source),
            key=lambda r: (-r.fitness, r.seq),
        )
        # Over several sources, candidates at least the best seed's fitness in every
        # group come first (eval/sources.py): the frozen strategy holds up everywhere.
        from monsearch.eval.sources import holds_up

        reference = getattr(self.evaluator, "reference", None)
        holding = [r for r in ok if holds_up(reference, r.fitness_json)]
        ok = (holding or ok)[: max(1, self.cfg.evaluation.select_top)]
        if not ok:
            return None
        ranked = []
        for record in ok:
            scores = self.store.val_scores(record.seq)
            if scores is None:
                continue
            boot = self.evaluator.val_fitness_with_bootstrap(
                scores, derived_seed(self.cfg.seed, 0, "bootstrap") % 2**32
            )
            low = boot.fitness_low if boot.fitness_low is not None else 0.0
            ranked.append((low, record.fitness, -record.seq, record, boot))
        if not ranked:
            return None
        low, _, _, record, boot = max(ranked, key=lambda x: x[:3])
        fitness_json = dict(record.fitness_json or {})
        fitness_json["fitness_low"] = low
        config = self.run.config()
        return SelectedStrategy(
            run_id=self.run.id,
            id=record.id,
            source=record.source or "",
            strategy_hash=record.source_hash or source_hash(record.source or ""),
            fitness=record.fitness,
            fitness_low=low,
            fitness_json=fitness_json,
            corpus=config.get("corpus", {}),
            evaluation=config.get("evaluation", {}),
            selection={
                "rule": "highest 5th percentile of a paired, stratified bootstrap of the val "
                "aggregate budget-AUC among the top candidates by point fitness"
                + (
                    " (over several sources: among those at least the best seed's "
                    "fitness in every group, where there are any)"
                    if reference is not None
                    else ""
                ),
                "n_boot": self.cfg.evaluation.n_boot,
                "considered": [
                    {"id": r.id, "fitness": f, "fitness_low": lo} for lo, f, _, r, _ in ranked
                ],
            },
        )

    def close(self) -> None:
        if self.lane is not None:
            self.lane.close()
        if self._background is not None:
            self._background.shutdown(wait=False, cancel_futures=True)
        self.db.close()


def install_stop_handler(stop: StopFlag) -> Callable[[], None]:
    """First Ctrl-C: stop after the batch in flight is recorded. Second: stop now."""
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum: int, frame: Any) -> None:
        if stop:
            signal.signal(signal.SIGINT, previous)
            raise KeyboardInterrupt
        stop.set("Ctrl-C: the candidates in flight were recorded")

    signal.signal(signal.SIGINT, handler)
    return lambda: signal.signal(signal.SIGINT, previous)
