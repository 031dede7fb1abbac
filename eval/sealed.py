"""The sealed one-time test of a frozen strategy (docs/DESIGN.md, "Sealed test").

``monsearch test RUN`` scores the run's frozen strategy on ``val`` and on every sealed
split (``test`` and each cross-generator split ``xgen-*``) and reports, per target:

- **transferred** thresholds: set on ``val``'s benign runs and applied unchanged, so
  the realised benign flag rate on the target is shown beside the nominal budget
  (calibration drift);
- **recalibrated** thresholds: set again on the target's own benign runs (ranking
  quality; :func:`.summary.compute_metrics`);
- per failure dimension and per task (task base rates differ widely), panel labels
  and, where the corpus has them, true labels side by side;
- the selective-escalation curves: rules fitted on ``val`` (:func:`.escalation.fit_escalation`)
  and evaluated on each target, beside the baselines (program alone, judge panel on
  everything, AND-cascade), with dollars per 1,000 trajectories.

The pure part (:func:`evaluate_targets`) works on :class:`ScoredSplit` arrays. The
orchestration (:func:`run_sealed_test`) reads the run, checks and records the ledger
(:mod:`.sealed_ledger`), loads the sealed splits through the one door that may
(:func:`monsearch.corpora.sealed.open_sealed`) and scores them in the sandbox.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from monsearch.errors import MonsearchError

from .benign_mix import VIEWS as BENIGN_MIX_VIEWS
from .benign_mix import HabitGroups, habit_groups, mix_weights
from .bootstrap import bootstrap_aggregate
from .costs import CostModel
from .escalation import (
    DEFAULT_GRID,
    RULES,
    EscalationFit,
    ScoredSet,
    evaluate_escalation,
    fit_escalation,
)
from .fitness import oracle_spend
from .metrics import (
    B_HI,
    B_LO,
    MIN_BENIGN_PER_BUDGET,
    N_BUDGETS,
    RECALL_BUDGETS,
    BudgetRangeError,
    Sample,
    bauc_of_curve,
    budget_grid,
    chance_bauc,
    effective_size,
    flagged,
    resolve_budget_range,
    sample,
    thresholds,
)
from .options import EvaluationOptions
from .priors import (
    DEFAULT_CELL_KEYS,
    FITNESS_VIEWS,
    MIN_PER_CLASS,
    context_cells,
    prior_weights,
)
from .summary import budget_key, compute_metrics

REPORT_FORMAT = "monsearch-sealed-test"
REPORT_VERSION = 1
#: Budgets of the escalation curves.
N_ESCALATION_BUDGETS = 25
#: Benign quantiles of the program score tried as band ends (the fit grows as its square).
ESCALATION_GRID = DEFAULT_GRID



class SealedTestError(MonsearchError):
    """The run, its strategy or its corpus cannot be sealed-tested as asked."""


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class ScoredSplit:
    """One split's scores and everything the report needs beside them (labelled runs only).

    ``labels``: ``{"panel": bool array}`` plus ``"true"`` when every run has a true
    label; ``judge``: the escalation judge's score per run (NaN where it has none);
    ``oracle_calls``: oracle calls the program made per run.
    """

    name: str
    scores: np.ndarray
    labels: dict[str, np.ndarray]
    dimensions: np.ndarray
    tasks: np.ndarray
    generators: tuple[str, ...] = ()
    judge: np.ndarray | None = None
    oracle_calls: np.ndarray | None = None
    #: Each run's context cell (eval/priors.py), for the shifted-prior views.
    cells: np.ndarray | None = None
    #: Each run's benign habit profile (eval/benign_mix.py), for the benign-mix views.
    habits: HabitGroups | None = None

    @classmethod
    def from_trajectories(
        cls,
        name: str,
        trajectories: Sequence[Any],
        scores: np.ndarray,
        *,
        oracle_calls: dict[str, int] | None = None,
        judge: dict[str, float] | None = None,
        cell_keys: Sequence[str] = DEFAULT_CELL_KEYS,
    ) -> ScoredSplit:
        keep = [i for i, t in enumerate(trajectories) if t.label is not None]
        trajs = [trajectories[i] for i in keep]
        labels = {"panel": np.array([t.label.is_failure for t in trajs], dtype=bool)}
        truth = [t.true_failure for t in trajs]
        if trajs and all(v is not None for v in truth):
            labels["true"] = np.array(truth, dtype=bool)
        return cls(
            name=name,
            scores=np.asarray(scores, dtype=float)[keep],
            labels=labels,
            dimensions=np.array([t.dimension.value for t in trajs], dtype=str),
            tasks=np.array([t.task for t in trajs], dtype=str),
            generators=tuple(sorted({t.generator for t in trajs})),
            judge=None
            if judge is None
            else np.array([judge.get(t.id, math.nan) for t in trajs], dtype=float),
            oracle_calls=None
            if oracle_calls is None
            else np.array([oracle_calls.get(t.id, 0) for t in trajs], dtype=float),
            cells=np.array([str(c) for c in context_cells(trajs, cell_keys)], dtype=str),
            habits=habit_groups(trajs),
        )


@dataclass(frozen=True)
class Options:
    """The evaluation options of the run (``config.json``'s ``evaluation``, read by
    :class:`.options.EvaluationOptions`) the sealed figures use, as its report shows them."""

    b_lo: float = B_LO
    b_hi: float = B_HI
    n_budgets: int = N_BUDGETS
    on_small: str = "warn"
    rho: float | None = None
    per_traj_cap: int = 1
    recall_budgets: tuple[float, ...] = RECALL_BUDGETS
    #: The run's fitness view (``invariant``/``plain``): what val is measured under when
    #: the shifted views report their loss, and what their transferred thresholds use.
    fitness: str = "plain"
    cells: tuple[str, ...] = DEFAULT_CELL_KEYS
    cell_mass: str = "minority"
    #: Fewest failures and fewest passes a cell needs to count in the shifted views
    #: (and in val's figure they are measured from). A cell with fewer runs of a class
    #: is left out: reweighting it lets a handful of runs stand for a whole cell's
    #: class (on a development corpus four passes carried 5 % of a cross-generator
    #: split's benign mass under the inverted view, and with it every threshold), and
    #: the bootstrap cannot see that noise (four alike runs redrawn are still four).
    min_per_class: int = MIN_PER_CLASS
    #: Bootstrap replicates behind the shifted views' loss intervals (0: none).
    n_boot: int = 200
    #: A shifted view's loss whose whole interval lies above this is flagged: the drop
    #: from val is more than the sampling noise of either figure can explain.
    loss_tolerance: float = 0.05

    @classmethod
    def of(cls, ev: EvaluationOptions) -> Options:
        """The sealed test's options of a run's recorded ones."""
        return cls(
            b_lo=float(ev.b_lo),
            b_hi=float(ev.b_hi),
            n_budgets=ev.n_budgets,
            on_small=ev.on_small,
            rho=None if ev.rho is None else float(ev.rho),
            per_traj_cap=ev.per_traj_cap,
            fitness=ev.fitness,
            cells=ev.cells,
            cell_mass=ev.cell_mass,
            n_boot=ev.n_boot,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.__dict__,
            "recall_budgets": list(self.recall_budgets),
            "cells": list(self.cells),
        }


# --------------------------------------------------------------------------- metrics


def _notes_of(caught: list[warnings.WarningMessage], where: str) -> list[str]:
    return [f"{where}: {w.message}" for w in caught]


def _none(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def _flags(x: Sample, tau: np.ndarray, g: np.ndarray) -> np.ndarray:
    return flagged(x, tau, g) if x.n else np.full(np.shape(tau), math.nan)


def _flag_ratio(flags: np.ndarray, budgets: np.ndarray) -> float | None:
    """Geometric mean of realised / nominal flag rate over the grid: 1 = calibrated,
    2 = twice the flags."""
    if np.isnan(flags).all():
        return None
    return _none(float(np.exp(np.mean(np.log(np.maximum(flags, 1e-12) / budgets)))))


def _curves(
    split: ScoredSplit,
    y: np.ndarray,
    tau: np.ndarray,
    g: np.ndarray,
    budgets: np.ndarray,
    w: np.ndarray | None = None,
) -> dict[str, Any]:
    """Recall per dimension, pooled recall, realised flag rate and per-task figures of
    thresholds ``(tau, g)`` (from this split or transferred), runs at weights ``w``."""
    s = split.scores
    live = np.ones(s.size, dtype=bool) if w is None else w > 0

    def part(mask: np.ndarray) -> Sample:
        return sample(s[mask], None if w is None else w[mask])

    benign = part(~y)
    by_dim: dict[str, list[float]] = {}
    bauc_dim: dict[str, float] = {}
    n_fail: dict[str, int] = {}
    for d in sorted(set(split.dimensions.tolist())):
        m = y & (split.dimensions == d) & live
        if m.any():
            r = flagged(part(m), tau, g)
            by_dim[d] = r.tolist()
            bauc_dim[d] = bauc_of_curve(r, budgets)
            n_fail[d] = int(m.sum())
    absent = sorted(set(split.dimensions.tolist()) - set(bauc_dim))
    pooled = flagged(part(y), tau, g) if (y & live).any() else None
    worst = min(bauc_dim, key=bauc_dim.__getitem__) if bauc_dim else None
    tasks: dict[str, Any] = {}
    for task in sorted(set(split.tasks.tolist())):
        m = (split.tasks == task) & live
        if not m.any():
            continue
        tb, tf = part(m & ~y), part(m & y)
        tasks[task] = {
            "dimension": str(split.dimensions[m][0]),
            "n": int(m.sum()),
            "n_benign": tb.n,
            "n_failures": tf.n,
            "base_rate": float(tf.n / m.sum()),
            "bauc": bauc_of_curve(flagged(tf, tau, g), budgets) if tf.n else None,
            # The task's share of the audit budget: far from 1 means the pooled
            # threshold spends it unevenly across tasks.
            "flag_rate_mean": _none(float(np.mean(_flags(tb, tau, g) / budgets))) if tb.n else None,
        }
    flags = _flags(benign, tau, g)
    return {
        "bauc": {
            "aggregate": float(np.mean(list(bauc_dim.values()))) if bauc_dim else None,
            "worst": bauc_dim[worst] if worst else None,
            "worst_dimension": worst,
            "by_dimension": bauc_dim,
            "n_failures": n_fail,
            "absent": absent,
            "b_lo": float(budgets[0]),
            "b_hi": float(budgets[-1]),
        },
        "bauc_pooled": bauc_of_curve(pooled, budgets) if pooled is not None else None,
        "flag_ratio": _flag_ratio(flags, budgets),
        "curve": {
            "budgets": budgets.tolist(),
            "flag_rate": flags.tolist(),
            "recall_pooled": None if pooled is None else pooled.tolist(),
            "recall": by_dim,
        },
        "per_task": tasks,
    }


def transferred(
    val: ScoredSplit, target: ScoredSplit, label: str, opts: Options
) -> tuple[dict[str, Any], list[str]]:
    """Thresholds set on ``val``'s benign runs, applied unchanged to ``target``."""
    yv, yt = val.labels[label], target.labels[label]
    h_val = sample(val.scores[~yv])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lo, hi = resolve_budget_range(h_val.n, opts.b_lo, opts.b_hi, opts.on_small)  # type: ignore[arg-type]
    budgets = budget_grid(lo, hi, opts.n_budgets)
    tau, g = thresholds(h_val, budgets)
    out = _curves(target, yt, tau, g, budgets)
    benign_t, failures_t = sample(target.scores[~yt]), sample(target.scores[yt])
    recall_at: dict[str, float | None] = {}
    flag_at: dict[str, float | None] = {}
    for b in opts.recall_budgets:
        key = budget_key(b)
        if b < MIN_BENIGN_PER_BUDGET / h_val.n:
            recall_at[key] = flag_at[key] = None
            continue
        tb, gb = thresholds(h_val, np.asarray(b, dtype=float))
        recall_at[key] = _none(float(flagged(failures_t, tb, gb))) if failures_t.n else None
        flag_at[key] = _none(float(_flags(benign_t, tb, gb)))
    out["recall_at"] = recall_at
    out["flag_rate_at"] = flag_at
    out["n_benign"] = benign_t.n
    out["n_failures"] = failures_t.n
    out["chance_bauc"] = chance_bauc(lo, hi)
    return out, _notes_of(caught, f"val, {label} labels")  # val's range, reported once


def recalibrated(
    target: ScoredSplit, label: str, opts: Options
) -> tuple[dict[str, Any], list[str]]:
    """Thresholds set again on ``target``'s own benign runs."""
    y = target.labels[label]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            metrics = compute_metrics(
                target.scores,
                y,
                target.dimensions,
                b_lo=opts.b_lo,
                b_hi=opts.b_hi,
                n_budgets=opts.n_budgets,
                recall_budgets=opts.recall_budgets,
                on_small=opts.on_small,  # type: ignore[arg-type]
            )
        except BudgetRangeError as exc:
            return {"error": str(exc)}, [f"{target.name}, {label} labels: {exc}"]
    out = metrics.to_dict()
    budgets = budget_grid(metrics.bauc.b_lo, metrics.bauc.b_hi, opts.n_budgets)
    tau, g = thresholds(sample(target.scores[~y]), budgets)
    extra = _curves(target, y, tau, g, budgets)
    out["curve"] = extra["curve"]
    out["per_task"] = extra["per_task"]
    return out, _notes_of(caught, f"{target.name}, {label} labels")


# --------------------------------------------------------------------------- shifted priors

#: The shifted-prior views every sealed corpus is also reported under (eval/priors.py).
SHIFTED_VIEWS = ("flat", "inverted")


def _view_weights(
    split: ScoredSplit, y: np.ndarray, view: str, opts: Options
) -> np.ndarray | None:
    if view == "plain" or split.cells is None:
        return None
    return prior_weights(
        y, split.cells, split.dimensions, view, mass=opts.cell_mass,
        min_per_class=opts.min_per_class,
    ).weights


#: The shifted views' intervals: the 5th and 95th percentiles of the bootstrap.
INTERVAL = (0.05, 0.95)


def _bootstrap(
    split: ScoredSplit,
    y: np.ndarray,
    w: np.ndarray | None,
    opts: Options,
    seed: int,
    budget_range: tuple[float, float] | None = None,
) -> np.ndarray | None:
    """The recalibrated aggregate's bootstrap distribution under weights ``w`` (runs
    redrawn within their cell and label, so the weights carry over), or None when
    ``opts.n_boot`` is 0 or the figure is undefined."""
    if opts.n_boot <= 0:
        return None
    lo, hi = budget_range or (opts.b_lo, opts.b_hi)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = bootstrap_aggregate(
                split.scores, y, split.dimensions, n_boot=opts.n_boot, seed=seed,
                b_lo=lo, b_hi=hi, n_budgets=opts.n_budgets, on_small="warn",
                weights=w, strata=None if w is None else split.cells,
            )
        except (BudgetRangeError, ValueError):
            return None
    return result.distribution[:, 0]


def _interval(dist: np.ndarray | None) -> list[float] | None:
    return None if dist is None else [float(np.quantile(dist, q)) for q in INTERVAL]


def _view_figures(
    split: ScoredSplit, y: np.ndarray, w: np.ndarray, tau: np.ndarray, g: np.ndarray,
    budgets: np.ndarray,
) -> dict[str, Any]:
    """The compact figures of a shifted view: budget-AUC per dimension and pooled, and
    the realised flag rate of ``(tau, g)``."""
    curves = _curves(split, y, tau, g, budgets, w)
    keep = ("aggregate", "worst", "worst_dimension", "by_dimension")
    return {
        "bauc": {k: curves["bauc"][k] for k in keep},
        "bauc_pooled": curves["bauc_pooled"],
        "flag_ratio": curves["flag_ratio"],
    }


def _val_thresholds(
    val: ScoredSplit, label: str, opts: Options, budgets: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Val's thresholds under the run's fitness view: what transferred thresholds are."""
    y = val.labels[label]
    w = _view_weights(val, y, FITNESS_VIEWS.get(opts.fitness, "plain"), opts)
    return thresholds(sample(val.scores[~y], None if w is None else w[~y]), budgets)


def shifted_views(
    val: ScoredSplit,
    target: ScoredSplit,
    label: str,
    opts: Options,
    val_fitness: float | None,
    val_dist: np.ndarray | None = None,
) -> dict[str, Any]:
    """``target`` under each shifted view: a reweighting of its runs, nothing re-run.

    Per view: thresholds transferred from val (under the run's fitness view) and
    recalibrated on the target's own weighted benign runs; the loss is val's figure
    under the run's fitness view minus each. With ``val_dist`` (val's bootstrap under
    its fitness view) the recalibrated loss gets an interval: val's replicates minus
    the target's, each redrawn on its own, so it holds the noise of both figures; a
    loss whose whole interval lies above ``opts.loss_tolerance`` is flagged.
    """
    y = target.labels[label]
    out: dict[str, Any] = {}
    for view in SHIFTED_VIEWS:
        pw = prior_weights(
            y, target.cells, target.dimensions, view, mass=opts.cell_mass,
            min_per_class=opts.min_per_class,
        )
        assert pw.weights is not None
        block: dict[str, Any] = {
            "excluded_cells": list(pw.excluded_cells),
            "excluded_runs": pw.excluded_runs,
        }
        out[view] = _reweighted(
            val, target, label, pw.weights, opts, val_fitness, val_dist, block
        )
    return out


def _reweighted(
    val: ScoredSplit,
    target: ScoredSplit,
    label: str,
    w: np.ndarray,
    opts: Options,
    val_fitness: float | None,
    val_dist: np.ndarray | None,
    block: dict[str, Any],
) -> dict[str, Any]:
    """``block`` with the figures of ``target`` at weights ``w`` (see :func:`shifted_views`)."""
    y = target.labels[label]
    n_eff = effective_size(w[~y])
    block["effective_benign"] = n_eff
    try:
        lo, hi = resolve_budget_range(int(n_eff), opts.b_lo, opts.b_hi, "refuse")
    except BudgetRangeError:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                lo, hi = resolve_budget_range(int(n_eff), opts.b_lo, opts.b_hi, "warn")
            except BudgetRangeError as exc:
                return {**block, "error": str(exc)}
        block["range_raised"] = [lo, hi]
    budgets = budget_grid(lo, hi, opts.n_budgets)
    tau_v, g_v = _val_thresholds(val, label, opts, budgets)
    tau_t, g_t = thresholds(sample(target.scores[~y], w[~y]), budgets)
    tr = _view_figures(target, y, w, tau_v, g_v, budgets)
    rc = _view_figures(target, y, w, tau_t, g_t, budgets)
    rc.pop("flag_ratio")  # 1 by construction
    block["transferred"] = tr
    block["recalibrated"] = rc
    block["loss_vs_val"] = {
        kind: None
        if val_fitness is None or fig["bauc"]["aggregate"] is None
        else val_fitness - fig["bauc"]["aggregate"]
        for kind, fig in (("transferred", tr), ("recalibrated", rc))
    }
    dist = _bootstrap(target, y, w, opts, seed=1, budget_range=(lo, hi))
    rc["interval"] = _interval(dist)
    loss_interval = None if dist is None or val_dist is None else _interval(val_dist - dist)
    block["loss_interval"] = {"recalibrated": loss_interval}
    block["beyond_tolerance"] = (
        None if loss_interval is None else bool(loss_interval[0] > opts.loss_tolerance)
    )
    return block


def benign_mix_views(
    val: ScoredSplit,
    target: ScoredSplit,
    label: str,
    opts: Options,
    val_fitness: float | None,
    val_dist: np.ndarray | None = None,
) -> dict[str, Any]:
    """``target`` with its benign runs reweighted to each benign-mix view
    (eval/benign_mix.py), on top of the run's fitness view, failures untouched; the
    figures as :func:`shifted_views` gives them. A corpus whose benign runs do not all
    record their habits gets ``{"skipped": why}``."""
    y = target.labels[label]
    groups = target.habits
    if groups is None or not groups.present.any():
        return {"skipped": "its runs record no benign habit profile (meta['habits'])"}
    base = _view_weights(target, y, FITNESS_VIEWS.get(opts.fitness, "plain"), opts)
    out: dict[str, Any] = {"generated_with": list(groups.mixes)}
    for view in BENIGN_MIX_VIEWS:
        mw = mix_weights(groups, y, view, base=base, name=view)
        if mw.weights is None:
            return {"skipped": str(mw.skipped)}
        out[view] = _reweighted(
            val, target, label, mw.weights, opts, val_fitness, val_dist, mw.to_dict()
        )
    return out


def _val_view_fitness(val_block: dict[str, Any], label: str) -> float | None:
    return ((val_block.get("views") or {}).get(label) or {}).get("aggregate")


def fit_on_val(
    val: ScoredSet,
    costs: CostModel,
    rules: tuple[str, ...] = RULES,
    grid: int | None = None,
) -> tuple[np.ndarray, dict[str, EscalationFit]]:
    """The budgets and the escalation rules fitted on val: what the sealed test applies to
    each target and what an exported plugin ships (its band), whether or not it was tested.
    ``grid``: band ends tried (None: :data:`ESCALATION_GRID`)."""
    grid = ESCALATION_GRID if grid is None else grid
    budgets = costs.budget_grid(N_ESCALATION_BUDGETS, val.mean_benign_oracle_calls)
    return budgets, {r: fit_escalation(val, budgets, costs, rule=r, grid=grid) for r in rules}


def _escalation(
    val: ScoredSplit,
    targets: dict[str, ScoredSplit],
    costs: CostModel,
    rules: tuple[str, ...],
    grid: int,
) -> dict[str, Any]:
    """Escalation rules fitted on ``val`` (panel labels), evaluated per target and label set."""
    if val.judge is None or not np.all(np.isfinite(val.judge)):
        return {"skipped": "val has no escalation-judge score for every run (no oracle verdicts)"}
    y = val.labels["panel"]
    if y.all() or not y.any():
        return {"skipped": "val needs failures and benign runs to fit an escalation policy"}
    fit_set = ScoredSet.of(val.scores, val.judge, y, val.oracle_calls)
    budgets, fits = fit_on_val(fit_set, costs, rules, grid)
    sets: dict[str, ScoredSet] = {}
    skipped: dict[str, str] = {}
    for name, t in targets.items():
        assert t.judge is not None
        for label, yt in t.labels.items():
            key = f"{name}|{label}"
            if yt.all() or not yt.any():
                skipped[key] = "needs failures and benign runs"
            elif not np.all(np.isfinite(t.judge)):
                skipped[key] = "some runs have no escalation-judge score"
            else:
                sets[key] = ScoredSet.of(t.scores, t.judge, yt, t.oracle_calls)
    curves: dict[str, dict[str, Any]] = {}
    for key, data in sets.items():
        name, label = key.split("|")
        curves.setdefault(name, {})[label] = {
            r: evaluate_escalation(f, data).to_dict() for r, f in fits.items()
        }
    return {
        "budgets": budgets.tolist(),
        "usd_per_unit": costs.usd_per_unit,
        "rules": list(rules),
        "grid": grid,
        "fit": {r: f.to_dict() for r, f in fits.items()},
        "curves": curves,
        "skipped": skipped,
    }


def evaluate_targets(
    val: ScoredSplit,
    targets: dict[str, ScoredSplit],
    opts: Options,
    costs: CostModel,
    *,
    rules: tuple[str, ...] = RULES,
    grid: int | None = None,
) -> dict[str, Any]:
    """Every figure of the sealed report for ``targets`` against ``val`` (pure arrays)."""
    notes: list[str] = []
    val_block: dict[str, Any] = {"n": int(val.scores.size), "generators": list(val.generators)}
    for label in val.labels:
        block, n = recalibrated(val, label, opts)
        val_block[label] = block
        notes += n
    # Val under the run's fitness view: what the shifted views' losses are measured from.
    view = FITNESS_VIEWS.get(opts.fitness, "plain")
    val_block["fitness_view"] = opts.fitness
    val_block["views"] = {}
    val_dists: dict[str, np.ndarray | None] = {}
    for label, y in val.labels.items():
        w = _view_weights(val, y, view, opts)
        agg = (val_block[label].get("bauc") or {}).get("aggregate")
        if w is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    agg = compute_metrics(
                        val.scores, y, val.dimensions, b_lo=opts.b_lo, b_hi=opts.b_hi,
                        n_budgets=opts.n_budgets, weights=w,
                    ).aggregate
                except BudgetRangeError:
                    agg = None
        val_dist = _bootstrap(val, y, w, opts, seed=0) if agg is not None else None
        val_dists[label] = val_dist
        val_block["views"][label] = {
            "view": opts.fitness,
            "aggregate": agg,
            "interval": _interval(val_dist),
        }
    corpora: dict[str, Any] = {}
    for name, t in targets.items():
        entry: dict[str, Any] = {
            "kind": "test" if name == "test" else "cross-generator",
            "n": int(t.scores.size),
            "generators": list(t.generators),
            "labels": [lb for lb in t.labels if lb in val.labels],
        }
        for label in entry["labels"]:
            tr, n1 = transferred(val, t, label, opts)
            rc, n2 = recalibrated(t, label, opts)
            notes += n1 + n2
            val_agg = (val_block[label].get("bauc") or {}).get("aggregate")
            rc_agg = (rc.get("bauc") or {}).get("aggregate")
            tr_agg = tr["bauc"]["aggregate"]
            entry[label] = {
                "transferred": tr,
                "recalibrated": rc,
                "loss_vs_val": {
                    "transferred": None if val_agg is None or tr_agg is None else val_agg - tr_agg,
                    "recalibrated": None if val_agg is None or rc_agg is None else val_agg - rc_agg,
                },
            }
            if t.cells is not None and val.cells is not None:
                entry[label]["shifted"] = shifted_views(
                    val, t, label, opts, _val_view_fitness(val_block, label), val_dists.get(label)
                )
                entry[label]["benign_mix"] = benign_mix_views(
                    val, t, label, opts, _val_view_fitness(val_block, label), val_dists.get(label)
                )
        y = t.labels["panel"]
        entry["oracle"] = oracle_spend(t.oracle_calls, y, rho_cap=opts.rho).to_dict()
        entry["oracle"]["over_cap"] = opts.rho is not None and entry["oracle"]["rho"] > opts.rho
        corpora[name] = entry
    have_judge = val.judge is not None and all(t.judge is not None for t in targets.values())
    escalation = (
        _escalation(val, targets, costs, rules, ESCALATION_GRID if grid is None else grid)
        if have_judge
        else {"skipped": "no escalation-judge scores"}
    )
    val_block["loss_tolerance"] = opts.loss_tolerance
    val_block["interval"] = list(INTERVAL)
    return {
        "val": val_block,
        "corpora": corpora,
        "escalation": escalation,
        "notes": list(dict.fromkeys(notes)),
    }


def summary_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per target corpus: the figures the terminal table shows."""
    rows = []
    val = report["val"]
    for name, c in report["corpora"].items():
        row: dict[str, Any] = {"corpus": name, "n": c["n"], "status": c.get("status", "ok")}
        if "panel" not in c:
            rows.append(row)
            continue
        p = c["panel"]
        tr, rc = p["transferred"], p["recalibrated"]
        flag_key = next((k for k, v in tr["flag_rate_at"].items() if v is not None), None)
        row.update(
            n_benign=tr["n_benign"],
            n_failures=tr["n_failures"],
            val_bauc=(val["panel"].get("bauc") or {}).get("aggregate"),
            transferred_bauc=tr["bauc"]["aggregate"],
            flag_budget=None if flag_key is None else float(flag_key),
            flag_rate=None if flag_key is None else tr["flag_rate_at"][flag_key],
            recalibrated_bauc=(rc.get("bauc") or {}).get("aggregate"),
            true_recalibrated_bauc=((c.get("true") or {}).get("recalibrated") or {})
            .get("bauc", {})
            .get("aggregate")
            if "true" in c
            else None,
            loss_transferred=p["loss_vs_val"]["transferred"],
            loss_recalibrated=p["loss_vs_val"]["recalibrated"],
        )
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- the run


@dataclass
class SplitRun:
    """What the sandbox gave for one split."""

    status: str
    message: str = ""
    scores: np.ndarray | None = None
    oracle_calls: dict[str, int] = field(default_factory=dict)


#: ``scorer(split name, source, trajectories, identity) -> SplitRun``
Scorer = Callable[[str, str, list[Any], str | None], SplitRun]


def sandbox_scorer(
    config: dict[str, Any], opts: Options, progress: Callable[[str], None] | None = None
) -> Scorer:
    """A :data:`Scorer` running the program in a sandbox pool as the run's search did:
    its limits, its oracle backend (``replay`` answers from the split's own oracle
    verdicts, never from labels) and its per-trajectory cap."""
    from monsearch.oracle.session import OracleConfig, replay_scores_from
    from monsearch.sandbox.evaluate import SandboxLimits, SandboxPool

    limits = SandboxLimits(
        **{k: config[k] for k in ("wall_s", "cpu_s", "memory_mb") if config.get(k) is not None}
    )
    backend = EvaluationOptions.from_config(config).oracle

    def score(name: str, source: str, trajs: list[Any], identity: str | None) -> SplitRun:
        if progress is not None:
            progress(f"scoring {name} ({len(trajs)} trajectories)")
        if backend == "replay":
            oracle = OracleConfig(
                backend="replay",
                per_traj_cap=opts.per_traj_cap,
                replay_scores=replay_scores_from(trajs),
            )
        else:
            oracle = OracleConfig(backend="none", per_traj_cap=opts.per_traj_cap)
        with SandboxPool(trajs, workers=1, limits=limits, oracle=oracle, identity=identity) as pool:
            res = pool.evaluate(source)
        counts = (res.oracle or {}).get("counts") or {}
        return SplitRun(res.status, res.message, res.scores, {k: int(v) for k, v in counts.items()})

    return score
