"""Scoring candidates for the search: val fitness in the sandbox, train scores for proposers.

:class:`SearchEvaluator` owns two sandbox pools: one over ``val`` (fitness, the
only number selection sees) and one over a fixed, stratified subset of ``train``
(what the offline proposer's residual mining, optuna and the LLM feedback read).
Nothing here reads ``test`` or cross-generator splits.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from monsearch.eval.fitness import Fitness, evaluate_fitness

from .config import EvaluationConfig


@dataclass
class Evaluation:
    """One candidate on val: the fitness record, its scores (None if it did not
    score), the sandbox's artefacts and how long it took."""

    fitness: Fitness
    scores: np.ndarray | None
    sandbox_status: str
    artifacts: dict[str, Any]
    wall_s: float


def labelled(trajectories: Sequence[Any]) -> list[Any]:
    """The trajectories that carry a panel label (fitness needs one)."""
    return [t for t in trajectories if t.label is not None]


def stratified_subset(trajectories: Sequence[Any], n: int, seed: int) -> list[Any]:
    """A fixed subset of ``n`` trajectories, proportional per (task, outcome, label) — the
    invariant fitness's cells, so the subset keeps their failure shares — in input order.

    Deterministic in (ids, labels, n, seed): a hash of the id with the seed orders
    each stratum, so no random state is consumed.
    """
    import hashlib

    if n <= 0 or n >= len(trajectories):
        return list(trajectories)
    strata: dict[tuple[str, str, bool], list[int]] = {}
    for i, t in enumerate(trajectories):
        strata.setdefault((t.task, str(t.outcome), bool(t.label.is_failure)), []).append(i)
    # Largest-remainder apportionment: exactly n runs, each stratum its proportional share.
    keys = sorted(strata)
    exact = [len(strata[k]) * n / len(trajectories) for k in keys]
    quota = [int(x) for x in exact]
    spare = n - sum(quota)
    for j in sorted(range(len(keys)), key=lambda j: (-(exact[j] - quota[j]), j))[:spare]:
        quota[j] += 1
    keep: list[int] = []
    for key, k in zip(keys, quota, strict=True):
        idx = strata[key]
        ranked = sorted(
            idx,
            key=lambda i: hashlib.sha256(f"{seed}:{trajectories[i].id}".encode()).digest(),
        )
        keep.extend(ranked[:k])
    return [trajectories[i] for i in sorted(keep)]


@dataclass(frozen=True)
class _Truth:
    """What fitness reads of a split's trajectories, computed once per split: a
    trajectory's label aggregates its panel on every access, and fitness is computed
    for every candidate and every tuning trial."""

    ids: tuple[str, ...]
    y: np.ndarray
    dims: np.ndarray
    truth: list[Any]
    has_truth: bool
    all_dimensions: list[str]
    #: Each run's context cell (eval/priors.py): what the invariant fitness weighs by.
    cells: np.ndarray
    #: The sources the runs come from (eval/sources.py): one group each; empty or one
    #: group means one source.
    groups: tuple[Any, ...] = ()
    #: Per source whose runs record habit profiles: the benign-mix views' weights
    #: (eval/benign_mix.py), ``(group name, its runs' positions, {view: MixWeights})``.
    views: tuple[tuple[str, np.ndarray, dict[str, Any]], ...] = ()


#: The benign-mix views a run on several sources is also held to at selection.
MIX_VIEWS = ("quiet", "noisy")
#: Fewest effective benign runs a view needs to be held to (its budget range starts at
#: 5 / that, half of 10 %): a live val of a few hundred runs has views far below it.
MIN_VIEW_BENIGN = 100.0


def _mix_views(
    trajs: Sequence[Any], y: np.ndarray, dims: np.ndarray, cells: np.ndarray, groups: Sequence[Any]
) -> tuple[tuple[str, np.ndarray, dict[str, Any]], ...]:
    """Each source's benign-mix view weights, on top of its invariant weights."""
    from monsearch.eval.benign_mix import group_weights, habit_groups, view_target
    from monsearch.eval.priors import prior_weights

    out = []
    for g in groups:
        sub = [trajs[i] for i in g.index]
        habits = habit_groups(sub)
        if not np.any(habits.present):
            continue
        base = prior_weights(y[g.index], cells[g.index], dims[g.index], "flat").weights
        targets = {v: view_target(v) for v in MIX_VIEWS}
        out.append((g.name, g.index, group_weights(habits, y[g.index], base=base, targets=targets)))
    return tuple(out)


def _truth_of(
    trajs: Sequence[Any],
    cell_keys: Sequence[str] = ("task", "outcome"),
    group_of: Mapping[str, str] | None = None,
) -> _Truth:
    from monsearch.eval.priors import context_cells
    from monsearch.eval.sources import groups_of

    dims = np.asarray([t.dimension.value for t in trajs])
    y = np.asarray([t.label.is_failure for t in trajs], dtype=bool)
    truth = [t.true_failure for t in trajs]
    cells = context_cells(trajs, cell_keys)
    for shared in (y, dims, cells):
        shared.setflags(write=False)  # shared by every fitness computation
    groups = tuple(groups_of([group_of.get(t.id, "") for t in trajs])) if group_of else ()
    return _Truth(
        ids=tuple(t.id for t in trajs),
        y=y,
        dims=dims,
        truth=truth,
        has_truth=all(v is not None for v in truth),
        all_dimensions=sorted({str(d) for d in dims}),
        cells=cells,
        groups=groups,
        views=_mix_views(trajs, y, dims, cells, groups) if len(groups) > 1 else (),
    )


def _fitness_of(
    known: _Truth,
    scores: np.ndarray,
    oracle: Mapping[str, Any],
    cfg: EvaluationConfig,
    split: str,
    n_boot: int = 0,
    seed: int = 0,
    with_truth: bool = True,
    reference: Any = None,
) -> Fitness:
    y, dims, truth = known.y, known.dims, known.truth
    counts = oracle.get("counts") or {}
    calls = np.asarray([counts.get(i, 0) for i in known.ids], dtype=float)
    cost = (oracle.get("cost") or {}).get("usd")
    with warnings.catch_warnings():
        # A raised budget range is recorded in the metrics; no need to print it per candidate.
        warnings.simplefilter("ignore")
        pooled = evaluate_fitness(
            scores,
            y,
            dims,
            split=split,
            oracle_calls=calls,
            rho=cfg.rho,
            fresh_calls=oracle.get("fresh"),
            cost_usd=cost,
            true_failure=truth if with_truth and known.has_truth else None,
            b_lo=cfg.b_lo,
            b_hi=cfg.b_hi,
            n_budgets=cfg.n_budgets,
            on_small=cfg.on_small,  # type: ignore[arg-type]
            all_dimensions=known.all_dimensions,
            n_boot=n_boot,
            seed=seed,
            cells=known.cells,
            view=cfg.fitness,
            mass=cfg.cell_mass,
        )
        if len(known.groups) < 2:
            return pooled
        from monsearch.eval.sources import group_fitness

        has_truth = with_truth and known.has_truth

        def one_group(index: np.ndarray) -> Fitness:
            # The spend was judged on the pooled split; each group only scores.
            return evaluate_fitness(
                scores[index], y[index], dims[index], split=split,
                true_failure=[truth[i] for i in index] if has_truth else None,
                b_lo=cfg.b_lo, b_hi=cfg.b_hi, n_budgets=cfg.n_budgets,
                on_small=cfg.on_small,  # type: ignore[arg-type]
                all_dimensions=known.all_dimensions, n_boot=n_boot, seed=seed,
                cells=known.cells[index], view=cfg.fitness, mass=cfg.cell_mass,
            )  # fmt: skip

        fit = group_fitness(pooled, known.groups, one_group, reference=reference)
        if known.views and fit.groups is not None and fit.status in ("ok", "regressed"):
            fit = replace(fit, groups={**fit.groups, **_view_figures(known, scores, cfg)})
        return fit


def _view_figures(known: _Truth, scores: np.ndarray, cfg: EvaluationConfig) -> dict[str, Any]:
    """Each source's budget-AUC under the benign-mix views (selection reads them)."""
    from monsearch.eval.benign_mix import group_figures

    out: dict[str, Any] = {}
    for name, index, weights in known.views:
        figures = group_figures(
            scores[index], known.y[index], known.dims[index], weights,
            b_lo=cfg.b_lo, b_hi=cfg.b_hi, n_budgets=cfg.n_budgets,
            on_small=cfg.on_small,  # type: ignore[arg-type]
        )  # fmt: skip
        for view, f in figures.items():
            value = f.get("aggregate") if isinstance(f, dict) else None
            benign = f.get("effective_benign") if isinstance(f, dict) else None
            # Too few benign runs under the view's weights: its thresholds would sit on a
            # handful of runs (and the budget range shrink to its top), no figure to hold.
            estimable = value is not None and (benign or 0.0) >= MIN_VIEW_BENIGN
            out[f"{name}@{view}"] = {
                "fitness": float(value) if estimable else 0.0,
                "status": "ok" if estimable else "not_estimable",
                "view": view,
                "effective_benign": benign,
            }
    return out


def _artifacts(result: Any) -> dict[str, Any]:
    """What the lineage keeps of a sandbox result (bounded: errors are capped there)."""
    d = result.to_dict()
    oracle = d.pop("oracle", {}) or {}
    d["oracle"] = {k: oracle.get(k) for k in ("backend", "fresh", "judge_errors", "judge_error")}
    d["oracle"]["calls"] = int(sum((oracle.get("counts") or {}).values()))
    d["oracle"]["refused"] = int(sum((oracle.get("refused") or {}).values()))
    for key in ("wall_s", "cpu_s", "usage"):
        d.pop(key, None)  # timings are circumstances, kept apart from the lineage's content
    return d


class SearchEvaluator:
    """Val and train pools for one run (context manager)."""

    def __init__(
        self,
        train: Sequence[Any],
        val: Sequence[Any],
        cfg: EvaluationConfig,
        *,
        train_subset: int,
        seed: int,
        proposer_subset: int | None = None,
        workers: int,
        limits: Any,
        identity: Callable[[str], str | None] | None = None,
        progress: Callable[[str, int, int], None] | None = None,
        val_pool_factory: Callable[..., Any] | None = None,
        group_of: Mapping[str, str] | None = None,
    ) -> None:
        from monsearch.eval.metrics import BudgetRangeWarning
        from monsearch.sandbox.evaluate import SandboxPool

        # A raised budget range is recorded in each fitness's metrics; printed, it would
        # repeat per candidate (and catch_warnings, per call, is not thread-safe).
        warnings.filterwarnings("ignore", category=BudgetRangeWarning)
        self.cfg = cfg
        self.val = labelled(val)
        pool = labelled(train)
        #: What proposers read (mining, missed failures, feedback): ``proposer_subset``
        #: runs (None: the tuner's subset; 0: all).
        self.train = stratified_subset(
            pool, train_subset if proposer_subset is None else proposer_subset, seed
        )
        #: What the tuner scores constants on: a smaller subset, for speed.
        self.tune_train = stratified_subset(pool, train_subset, seed)
        #: Trajectory id -> the source it came from (eval/sources.py), for a run on
        #: several sources; None for one.
        self.group_of = dict(group_of) if group_of else None
        #: What the guard holds candidates to (the best seed; see set_reference), on val,
        #: on the tuner's train subset and on the train runs outside it.
        self.reference: Any = None
        self.train_reference: Any = None
        self.held_out_reference: Any = None
        self._val_truth = _truth_of(self.val, cfg.cells, self.group_of)
        self._tune_truth = _truth_of(self.tune_train, cfg.cells, self.group_of)
        # The proposers' runs the tuner never saw: where a tuning is confirmed.
        tuned_ids = {t.id for t in self.tune_train}
        self._held_out = np.asarray(
            [i for i, t in enumerate(self.train) if t.id not in tuned_ids], dtype=np.int64
        )
        self._held_out_truth = _truth_of(
            [self.train[i] for i in self._held_out], cfg.cells, self.group_of
        )
        # The val pool is the one place candidates are scored for fitness: a backend
        # (e.g. Dask) may replace it, with the same evaluate_many / close interface.
        #: Whether evaluate_val may be called from several threads at once (the local
        #: sandbox pool hands each call a free worker; another backend may not).
        self.concurrent_val = val_pool_factory is None
        # Local pools share one limit of ``workers`` candidates running at once: the
        # search uses both pools at the same time, and more programs than cores would
        # only slow each one down against its per-trajectory wall-clock budget.
        slots = threading.BoundedSemaphore(max(1, workers))
        make_val, shared = (
            (SandboxPool, {"slots": slots}) if val_pool_factory is None else (val_pool_factory, {})
        )
        self._val_pool = make_val(
            self.val,
            workers=workers,
            limits=limits,
            oracle=self._oracle(self.val),
            identity=identity("val") if identity else None,
            progress=progress,
            **shared,
        )

        def train_pool(trajs: list[Any], subset: int | None) -> Any:
            return SandboxPool(
                trajs,
                workers=workers,
                limits=limits,
                # Train scores never consult the judge: its answers are val-only spend.
                oracle=self._oracle(trajs, none=True),
                identity=f"{identity('train')} subset {subset} seed {seed}" if identity else None,
                progress=progress,
                slots=slots,
            )

        self._train_pool = self._tune_pool = None
        try:
            self._train_pool = train_pool(self.train, proposer_subset)
            same = [t.id for t in self.tune_train] == [t.id for t in self.train]
            self._tune_pool = (
                self._train_pool if same else train_pool(self.tune_train, train_subset)
            )
        except BaseException:
            self.close()
            raise
        self._train_cache: OrderedDict[str, tuple[np.ndarray | None, str | None]] = OrderedDict()
        self._train_cache_lock = threading.Lock()

    def _oracle(self, trajs: Sequence[Any], none: bool = False) -> Any:
        from monsearch.oracle.session import OracleConfig, replay_scores_from

        cap = self.cfg.per_traj_cap
        if none or self.cfg.oracle == "none":
            return OracleConfig(backend="none", per_traj_cap=cap)
        return OracleConfig(
            backend="replay", per_traj_cap=cap, replay_scores=replay_scores_from(trajs)
        )

    def close(self) -> None:
        self._val_pool.close()
        if self._train_pool is not None:
            self._train_pool.close()
        if self._tune_pool is not None and self._tune_pool is not self._train_pool:
            self._tune_pool.close()

    def __enter__(self) -> SearchEvaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- val

    def evaluate_val(self, sources: Sequence[str]) -> list[Evaluation]:
        """Evaluate candidates on val concurrently; results in input order."""
        if not sources:
            return []
        t0 = time.perf_counter()
        results = self._val_pool.evaluate_many(list(sources))
        out = []
        for result in results:
            if result.ok and result.scores is not None:
                scores = np.asarray(result.scores, dtype=np.float64)
                fitness = _fitness_of(
                    self._val_truth, scores, result.oracle or {}, self.cfg, "val",
                    reference=self.reference,
                )  # fmt: skip
            else:
                scores = None
                fitness = Fitness.failed(result.status, result.message, split="val")
            out.append(Evaluation(fitness, scores, result.status, _artifacts(result), result.wall_s))
        elapsed = time.perf_counter() - t0
        for e in out:
            e.wall_s = e.wall_s or elapsed / len(out)
        return out

    @property
    def groups(self) -> list[str]:
        """The val groups (sources) this run is scored on; empty for one source."""
        return [g.name for g in self._val_truth.groups]

    def set_reference(
        self, seed_fitness: Sequence[Mapping[str, Any] | None], sources: Sequence[str | None] = ()
    ) -> None:
        """Hold later candidates to the best seed per group and dimension (eval/sources.py's
        guard and penalty), from the seeds' fitness records; with the seeds' ``sources``,
        the tuner's train objective is held to the same seed's figures on train."""
        from monsearch.eval.sources import Reference

        if len(self._val_truth.groups) < 2:
            return
        self.reference = Reference.best_of(list(seed_fitness))
        scored = [
            (float(f["fitness"]), i) for i, f in enumerate(seed_fitness)
            if f and f.get("status") == "ok" and i < len(sources) and sources[i]
        ]  # fmt: skip
        if self.reference is None or not scored:
            return
        best = sources[max(scored)[1]]
        tune = self.score_on_train_many(best, [None])[0]
        if tune is not None:
            fit = _fitness_of(self._tune_truth, tune, {}, self.cfg, "train", with_truth=False)
            self.train_reference = Reference.best_of([fit.to_dict()])
        full = self.score_on_train(best)
        if full is not None and self._held_out.size:
            fit = _fitness_of(
                self._held_out_truth, full[self._held_out], {}, self.cfg, "train", with_truth=False
            )
            self.held_out_reference = Reference.best_of([fit.to_dict()])

    def val_fitness_with_bootstrap(self, scores: np.ndarray, seed: int) -> Fitness:
        """The val fitness of stored scores with the bootstrap's lower bound (selection)."""
        # Oracle calls do not change the bootstrap; the feasibility verdict is kept by the caller.
        return _fitness_of(self._val_truth, scores, {}, self.cfg, "val", n_boot=self.cfg.n_boot, seed=seed)

    # -- train

    def score_on_train(self, source: str, params: Mapping[str, float] | None = None) -> np.ndarray | None:
        """Scores on the proposers' train runs (None if the program does not run). Cached
        by source."""
        return self.train_run(source, params)[0]

    def train_run(
        self, source: str, params: Mapping[str, float] | None = None
    ) -> tuple[np.ndarray | None, str | None]:
        """Scores on the proposers' train runs, or None and the sandbox's reason (its
        error with the line, as a repair turn shows it to a model). Cached by source."""
        key = source if params is None else source + repr(sorted(params.items()))
        # The loop and an LLM proposal in its own thread (search/llm_lane.py) share it.
        with self._train_cache_lock:
            if key in self._train_cache:
                self._train_cache.move_to_end(key)
                return self._train_cache[key]
        result = self._train_pool.evaluate(source, params=params)
        if result.ok:
            entry = (np.asarray(result.scores, dtype=np.float64), None)
        else:
            entry = (None, f"{result.status}: {result.message}" if result.message else result.status)
        with self._train_cache_lock:
            self._train_cache[key] = entry
            if len(self._train_cache) > 256:
                self._train_cache.popitem(last=False)
        return entry

    def score_on_train_many(
        self, source: str, params: Sequence[Mapping[str, float] | None]
    ) -> list[np.ndarray | None]:
        """Scores on the tuner's train subset for each PARAMS override, concurrently over
        the workers."""
        results = self._tune_pool.evaluate_many([source] * len(params), params=list(params))
        return [np.asarray(r.scores, dtype=np.float64) if r.ok else None for r in results]

    def train_fitness(self, scores: np.ndarray) -> float:
        """Budget-AUC aggregate on the tuner's train subset (what optuna maximises)."""
        return self._train_fitness(self._tune_truth, scores, self.train_reference)

    def _train_fitness(self, truth: _Truth, scores: np.ndarray, reference: Any = None) -> float:
        # Metrics on the true labels are reported beside a fitness, never part of it.
        fit = _fitness_of(truth, scores, {}, self.cfg, "train", with_truth=False, reference=reference)
        return fit.fitness if fit.metrics is not None and fit.metrics.aggregate is not None else 0.0

    @property
    def can_confirm(self) -> bool:
        """Whether some train runs are outside the tuner's subset (see :meth:`confirm_tuning`)."""
        return self._held_out.size > 0 and bool(self._held_out_truth.y.any())

    def confirm_tuning(
        self, source: str, params: Sequence[Mapping[str, float] | None]
    ) -> list[float]:
        """Budget-AUC of each PARAMS override on the train runs outside the tuner's
        subset: the tuner's best trials are checked there, so constants fitted to the
        subset's few benign runs at the top do not pass as an improvement."""
        results = self._train_pool.evaluate_many([source] * len(params), params=list(params))
        return [
            self._train_fitness(
                self._held_out_truth,
                np.asarray(r.scores, dtype=np.float64)[self._held_out],
                self.held_out_reference,
            )
            if r.ok
            else 0.0
            for r in results
        ]
