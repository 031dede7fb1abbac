"""Budget-AUC per failure dimension and the aggregate fitness (docs/DESIGN.md, "The metric").

Thresholds are set **once on the pooled benign set**: in deployment one threshold
serves all benign traffic, so per-dimension thresholds would be optimistic. Each
dimension's failures are then scored against those thresholds, giving ``BAUC_d``.

- aggregate = mean of ``BAUC_d`` over the dimensions that have failures in the split
  (a macro average: a rare dimension weighs as much as a common one);
- worst = the smallest ``BAUC_d``, reported beside it as a guardrail;
- a dimension with no failures in the split is **absent**: listed, never scored 0
  (there is nothing to catch, so 0 would be a lie and would drag the mean down).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .metrics import (
    B_HI,
    B_LO,
    N_BUDGETS,
    OnSmall,
    Sample,
    as_scores_labels,
    as_weights,
    bauc,
    budget_grid,
    effective_size,
    resolve_budget_range,
    sample,
)

#: The dimension name used when no dimensions are given.
ALL = "all"


@dataclass(frozen=True)
class DimensionBAUC:
    """Per-dimension BAUC on one split. ``aggregate`` and ``worst`` are None when no
    dimension has failures; ``b_lo``/``b_hi`` are the range actually used."""

    aggregate: float | None
    worst: float | None
    worst_dimension: str | None
    by_dimension: dict[str, float] = field(default_factory=dict)
    n_failures: dict[str, int] = field(default_factory=dict)
    absent: tuple[str, ...] = ()
    b_lo: float = B_LO
    b_hi: float = B_HI

    def to_dict(self) -> dict[str, Any]:
        return {
            "aggregate": self.aggregate,
            "worst": self.worst,
            "worst_dimension": self.worst_dimension,
            "by_dimension": dict(self.by_dimension),
            "n_failures": dict(self.n_failures),
            "absent": list(self.absent),
            "b_lo": self.b_lo,
            "b_hi": self.b_hi,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DimensionBAUC:
        return cls(
            aggregate=d["aggregate"],
            worst=d["worst"],
            worst_dimension=d["worst_dimension"],
            by_dimension=dict(d["by_dimension"]),
            n_failures=dict(d["n_failures"]),
            absent=tuple(d["absent"]),
            b_lo=d["b_lo"],
            b_hi=d["b_hi"],
        )


def as_dimensions(dimensions: ArrayLike | None, n: int) -> np.ndarray:
    """Dimension names as a string array of length ``n`` (all :data:`ALL` when None)."""
    if dimensions is None:
        return np.full(n, ALL)
    d = np.asarray([str(x) for x in np.asarray(dimensions, dtype=object).ravel()])
    if d.shape != (n,):
        raise ValueError(f"dimensions must have one entry per trajectory ({n}), got {d.shape}")
    return d


def failure_groups(
    y: np.ndarray, dims: np.ndarray, all_dimensions: Iterable[str] = ()
) -> tuple[list[str], list[np.ndarray], tuple[str, ...]]:
    """``(present dimension names, index arrays of their failures, absent names)``, sorted."""
    names = sorted(set(dims.tolist()) | {str(x) for x in all_dimensions})
    present, groups, absent = [], [], []
    for name in names:
        idx = np.flatnonzero(y & (dims == name))
        if idx.size:
            present.append(name)
            groups.append(idx)
        else:
            absent.append(name)
    return present, groups, tuple(absent)


def aggregate(benign: Sample, groups: list[Sample], budgets: np.ndarray) -> np.ndarray:
    """``BAUC_d`` of each failure group against one benign set (no checks)."""
    return np.array([bauc(benign, g, budgets) for g in groups])


def split_samples(
    s: np.ndarray, y: np.ndarray, w: np.ndarray | None, groups: list[np.ndarray]
) -> tuple[Sample, list[Sample]]:
    """The benign :class:`Sample` and one per failure group (index arrays), at the runs'
    weights (None: equal)."""
    benign = sample(s[~y], None if w is None else w[~y])
    return benign, [sample(s[g], None if w is None else w[g]) for g in groups]


def bauc_by_dimension(
    scores: ArrayLike,
    is_failure: ArrayLike,
    dimensions: ArrayLike | None = None,
    *,
    b_lo: float = B_LO,
    b_hi: float = B_HI,
    n_budgets: int = N_BUDGETS,
    on_small: OnSmall = "warn",
    all_dimensions: Iterable[str] = (),
    weights: ArrayLike | None = None,
) -> DimensionBAUC:
    """BAUC per dimension, the aggregate (mean over present dimensions) and the worst.

    ``dimensions``: one name per trajectory (benign runs carry their task's
    dimension too; only failures are grouped by it). ``all_dimensions``: names to
    report as absent even if no trajectory carries them. The budget range is checked
    against the pooled benign set (:func:`.metrics.resolve_budget_range`; with
    ``weights``, against its effective size). ``weights``: per-run importance weights
    (:mod:`.priors`); a run of weight 0 counts nowhere.
    """
    s, y = as_scores_labels(scores, is_failure)
    dims = as_dimensions(dimensions, s.size)
    w = None if weights is None else as_weights(weights, s.size)
    n_benign = int((~y).sum()) if w is None else int(effective_size(w[~y]))
    lo, hi = resolve_budget_range(n_benign, b_lo, b_hi, on_small)
    present, groups, absent = failure_groups(y if w is None else y & (w > 0), dims, all_dimensions)
    n_fail = {name: int(g.size) for name, g in zip(present, groups, strict=True)}
    if not present:
        return DimensionBAUC(None, None, None, {}, n_fail, absent, lo, hi)
    values = aggregate(*split_samples(s, y, w, groups), budget_grid(lo, hi, n_budgets))
    by_dim = {name: float(v) for name, v in zip(present, values, strict=True)}
    worst = int(np.argmin(values))
    return DimensionBAUC(
        aggregate=float(values.mean()),
        worst=float(values[worst]),
        worst_dimension=present[worst],
        by_dimension=by_dim,
        n_failures=n_fail,
        absent=absent,
        b_lo=lo,
        b_hi=hi,
    )
