"""Paired, stratified bootstrap of the aggregate budget-AUC (docs/DESIGN.md, "The metric").

The frozen strategy is chosen by a low quantile of its fitness, not by the point
estimate: among many candidates the best point estimate is partly luck (the
winner's curse). The bootstrap here:

- **stratified** by label and dimension: each replicate redraws, with replacement,
  as many trajectories from each (label, dimension) cell as it holds, so every
  replicate keeps the split's benign count (the budget range stays valid) and every
  dimension keeps its failures (the aggregate never loses a dimension to chance);
- **paired**: one set of resampled indices serves every candidate, so differences
  between candidates are not blurred by independent resampling noise;
- **seeded**: a ``numpy.random.Generator`` from ``seed``; the same inputs and seed
  give the same distribution, bit for bit.

Each replicate recomputes the thresholds on its own benign draw (as the metric does
on any split) and the aggregate = mean over present dimensions of ``BAUC_d``.

With importance ``weights`` (the invariant fitness, :mod:`.priors`) the strata are
the weights' context cells crossed with the label (``strata``): each replicate then
holds every cell's failures and passes in their original numbers, so the weights,
which depend only on those numbers, carry over unchanged and every replicate is
exactly as base-rate-free as the sample.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .dimensions import aggregate, as_dimensions, failure_groups, split_samples
from .metrics import (
    B_HI,
    B_LO,
    N_BUDGETS,
    OnSmall,
    as_scores_labels,
    as_weights,
    budget_grid,
    effective_size,
    resolve_budget_range,
    sorted_sample,
)

DEFAULT_N_BOOT = 1000
DEFAULT_QUANTILE = 0.05


@dataclass(frozen=True)
class BootstrapResult:
    """The aggregate's bootstrap distribution for ``k`` candidates.

    ``point``: the aggregate on the original sample, shape ``(k,)``;
    ``distribution``: ``(n_boot, k)``, row ``r`` = replicate ``r`` for every candidate;
    ``low``: the ``quantile`` (default 5th percentile) of each column, shape ``(k,)``.
    """

    point: np.ndarray
    distribution: np.ndarray
    low: np.ndarray
    quantile: float
    seed: int
    n_boot: int
    b_lo: float
    b_hi: float
    dimensions: tuple[str, ...]

    @property
    def p05(self) -> np.ndarray:
        """Alias of ``low`` (the 5th percentile with the default quantile)."""
        return self.low

    def to_dict(self, with_distribution: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "point": self.point.tolist(),
            "low": self.low.tolist(),
            "quantile": self.quantile,
            "seed": self.seed,
            "n_boot": self.n_boot,
            "b_lo": self.b_lo,
            "b_hi": self.b_hi,
            "dimensions": list(self.dimensions),
        }
        if with_distribution:
            out["distribution"] = self.distribution.tolist()
        return out


def stratified_indices(strata: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_boot, n)`` resampled indices: each stratum redrawn with replacement at its size.

    Column ``i`` of a replicate always comes from the stratum of trajectory ``i``, so
    labels and dimensions of a replicate are those of the original sample.
    """
    n = strata.size
    out = np.empty((n_boot, n), dtype=np.int64)
    for value in np.unique(strata):
        members = np.flatnonzero(strata == value)
        draw = rng.integers(0, members.size, size=(n_boot, members.size))
        out[:, members] = members[draw]
    return out


def bootstrap_aggregate(
    scores: ArrayLike,
    is_failure: ArrayLike,
    dimensions: ArrayLike | None = None,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    quantile: float = DEFAULT_QUANTILE,
    b_lo: float = B_LO,
    b_hi: float = B_HI,
    n_budgets: int = N_BUDGETS,
    on_small: OnSmall = "warn",
    all_dimensions: Iterable[str] = (),
    weights: ArrayLike | None = None,
    strata: ArrayLike | None = None,
) -> BootstrapResult:
    """Bootstrap the aggregate BAUC of one or several candidates on one split.

    ``scores``: shape ``(n,)`` for one candidate or ``(k, n)`` for ``k`` candidates
    scored on the same trajectories (paired). Needs at least one failure.
    ``weights`` and ``strata`` (one cell name per run): see the module doc; with
    weights, the strata must be given (a replicate must keep each weighted cell's
    counts), and are crossed with the label here.
    """
    s_all = np.asarray(scores, dtype=float)
    if s_all.ndim == 1:
        s_all = s_all[None, :]
    if s_all.ndim != 2:
        raise ValueError(f"scores must have shape (n,) or (k, n), got {s_all.shape}")
    if n_boot < 1:
        raise ValueError("n_boot must be at least 1")
    if not 0.0 < quantile < 1.0:
        raise ValueError("quantile must lie in (0, 1)")
    for row in s_all:
        as_scores_labels(row, is_failure)
    _, y = as_scores_labels(s_all[0], is_failure)
    dims = as_dimensions(dimensions, y.size)
    w = None if weights is None else as_weights(weights, y.size)
    if w is not None and strata is None:
        raise ValueError("weighted bootstrap: give the strata (the weights' context cells)")
    n_benign = int((~y).sum()) if w is None else int(effective_size(w[~y]))
    lo, hi = resolve_budget_range(n_benign, b_lo, b_hi, on_small)
    present, groups, _ = failure_groups(y if w is None else y & (w > 0), dims, all_dimensions)
    if not present:
        raise ValueError("no failures in the split: the aggregate is undefined")
    budgets = budget_grid(lo, hi, n_budgets)

    # Strata: benign runs by dimension, and each dimension's failures (weighted: by cell).
    keys = dims if strata is None else as_dimensions(strata, y.size)
    codes = {name: i for i, name in enumerate(sorted(set(keys.tolist())))}
    cells = np.array([codes[d] for d in keys.tolist()]) * 2 + y
    rng = np.random.default_rng(seed)
    idx = stratified_indices(cells, n_boot, rng)
    benign_cols = np.flatnonzero(~y)

    k = s_all.shape[0]
    point = np.empty(k)
    dist = np.empty((n_boot, k))
    for c in range(k):
        s = s_all[c]
        point[c] = aggregate(*split_samples(s, y, w, groups), budgets).mean()
        if w is None:
            # Equal weights: every replicate's benign draw and failure groups sorted at once.
            benign = np.sort(s[idx[:, benign_cols]], axis=1)
            fails = [np.sort(s[idx[:, g]], axis=1) for g in groups]
            for r in range(n_boot):
                dist[r, c] = aggregate(
                    sorted_sample(benign[r]), [sorted_sample(f[r]) for f in fails], budgets
                ).mean()
        else:
            # Column i of a replicate stays in i's stratum: labels, dimensions and weights
            # are the sample's; only the scores are redrawn.
            for r in range(n_boot):
                dist[r, c] = aggregate(*split_samples(s[idx[r]], y, w, groups), budgets).mean()
    return _result(point, dist, quantile, seed, n_boot, lo, hi, present)


def _result(
    point: np.ndarray,
    dist: np.ndarray,
    quantile: float,
    seed: int,
    n_boot: int,
    lo: float,
    hi: float,
    present: list[str],
) -> BootstrapResult:
    low = np.quantile(dist, quantile, axis=0)
    return BootstrapResult(
        point=point,
        distribution=dist,
        low=low,
        quantile=quantile,
        seed=seed,
        n_boot=n_boot,
        b_lo=lo,
        b_hi=hi,
        dimensions=tuple(present),
    )
