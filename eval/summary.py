"""Every detection metric of one score array on one split, as one record.

:func:`compute_metrics` gives the aggregate budget-AUC over dimensions (the fitness),
the worst dimension, the pooled BAUC, recall at the headline budgets (1 / 2 / 5 /
10 %) with each threshold and its realised benign flag rate, AUROC and the McClish
partial AUC. Budgets the benign set is too small for (below ``5 / |H|``) are listed
as not estimable instead of being given a noisy number.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .dimensions import DimensionBAUC, bauc_by_dimension
from .metrics import (
    B_HI,
    B_LO,
    MIN_BENIGN_PER_BUDGET,
    N_BUDGETS,
    RECALL_BUDGETS,
    OnSmall,
    as_scores_labels,
    as_weights,
    auroc,
    bauc,
    budget_grid,
    chance_bauc,
    effective_size,
    flagged,
    partial_auroc,
    sample,
    share_above_equal,
)
from .metrics import thresholds as np_thresholds


def budget_key(b: float) -> str:
    """The key a budget is reported under: ``0.01 -> "0.01"``."""
    return f"{b:g}"


def _finite_or_none(x: float) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


@dataclass(frozen=True)
class Metrics:
    """All metrics of one score array on one split (see the module doc).

    ``bauc`` holds the aggregate, worst and per-dimension BAUC and the budget range
    used (``bauc.b_lo``, ``bauc.b_hi``; ``range_raised`` when the guard raised it
    from the requested one). ``recall_at`` maps a budget key to its recall (None when
    not estimable); ``thresholds`` maps it to ``{"tau", "g", "flag_rate",
    "flag_rate_strict"}``: the threshold, the tie probability, the expected benign
    flag rate (the budget itself on this split) and the rate flagging only scores
    strictly above ``tau``. Undefined values (one class empty) are None.
    """

    n: int
    n_benign: int
    n_failures: int
    bauc: DimensionBAUC
    bauc_pooled: float | None
    chance_bauc: float
    b_lo_requested: float
    b_hi_requested: float
    recall_at: dict[str, float | None] = field(default_factory=dict)
    thresholds: dict[str, dict[str, float]] = field(default_factory=dict)
    not_estimable: tuple[str, ...] = ()
    auroc: float | None = None
    pauc: float | None = None
    pauc_max_fpr: float = B_HI

    @property
    def aggregate(self) -> float | None:
        """The fitness: mean BAUC over the dimensions with failures."""
        return self.bauc.aggregate

    @property
    def range_raised(self) -> bool:
        return (self.bauc.b_lo, self.bauc.b_hi) != (self.b_lo_requested, self.b_hi_requested)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "n_benign": self.n_benign,
            "n_failures": self.n_failures,
            "bauc": self.bauc.to_dict(),
            "bauc_pooled": self.bauc_pooled,
            "chance_bauc": self.chance_bauc,
            "b_lo_requested": self.b_lo_requested,
            "b_hi_requested": self.b_hi_requested,
            "range_raised": self.range_raised,
            "recall_at": dict(self.recall_at),
            "thresholds": {k: dict(v) for k, v in self.thresholds.items()},
            "not_estimable": list(self.not_estimable),
            "auroc": self.auroc,
            "pauc": self.pauc,
            "pauc_max_fpr": self.pauc_max_fpr,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Metrics:
        return cls(
            n=d["n"],
            n_benign=d["n_benign"],
            n_failures=d["n_failures"],
            bauc=DimensionBAUC.from_dict(d["bauc"]),
            bauc_pooled=d["bauc_pooled"],
            chance_bauc=d["chance_bauc"],
            b_lo_requested=d["b_lo_requested"],
            b_hi_requested=d["b_hi_requested"],
            recall_at=dict(d["recall_at"]),
            thresholds={k: dict(v) for k, v in d["thresholds"].items()},
            not_estimable=tuple(d["not_estimable"]),
            auroc=d["auroc"],
            pauc=d["pauc"],
            pauc_max_fpr=d["pauc_max_fpr"],
        )


def compute_metrics(
    scores: ArrayLike,
    is_failure: ArrayLike,
    dimensions: ArrayLike | None = None,
    *,
    b_lo: float = B_LO,
    b_hi: float = B_HI,
    n_budgets: int = N_BUDGETS,
    recall_budgets: Sequence[float] = RECALL_BUDGETS,
    pauc_max_fpr: float | None = None,
    on_small: OnSmall = "warn",
    all_dimensions: Iterable[str] = (),
    weights: ArrayLike | None = None,
) -> Metrics:
    """Every metric of ``scores`` against ``is_failure`` (see :class:`Metrics`).

    ``dimensions``: one failure dimension per trajectory (None: one pooled
    dimension). ``pauc_max_fpr`` defaults to ``b_hi``, so the partial AUC covers the
    budgets BAUC does. ``on_small``: what the guard does when ``b_lo < 5 / |H|``
    (``"warn"``: raise the range with a warning; ``"refuse"``: raise
    :class:`.metrics.BudgetRangeError`). An empty benign set is always refused.
    ``weights``: per-run importance weights (:mod:`.priors`): every metric becomes
    its weighted counterpart, ``|H|`` of the guards the benign set's effective size,
    and ``n``, ``n_benign``, ``n_failures`` count the runs of non-zero weight.
    """
    s, y = as_scores_labels(scores, is_failure)
    w = None if weights is None else as_weights(weights, s.size)
    per_dim = bauc_by_dimension(
        s,
        y,
        dimensions,
        b_lo=b_lo,
        b_hi=b_hi,
        n_budgets=n_budgets,
        on_small=on_small,
        all_dimensions=all_dimensions,
        weights=w,
    )
    live = np.ones(s.size, dtype=bool) if w is None else w > 0
    n_h, n_a = int((~y & live).sum()), int((y & live).sum())
    n_eff = n_h if w is None else effective_size(w[~y])
    benign = sample(s[~y], None if w is None else w[~y])
    failures = sample(s[y], None if w is None else w[y])
    pooled = None
    if n_a:
        pooled = bauc(benign, failures, budget_grid(per_dim.b_lo, per_dim.b_hi, n_budgets))
    recall_at: dict[str, float | None] = {}
    thresholds: dict[str, dict[str, float]] = {}
    not_estimable = []
    for b in recall_budgets:
        key = budget_key(b)
        if n_eff <= 0 or b < MIN_BENIGN_PER_BUDGET / n_eff:
            recall_at[key] = None
            not_estimable.append(key)
            continue
        tau, g = np_thresholds(benign, np.asarray([b], dtype=float))
        above_h, eq_h = share_above_equal(benign, tau)
        thresholds[key] = {
            "tau": float(tau[0]),
            "g": float(g[0]),
            "flag_rate": float(above_h[0] + g[0] * eq_h[0]),
            "flag_rate_strict": float(above_h[0]),
        }
        recall_at[key] = float(flagged(failures, tau, g)[0]) if n_a else None
    max_fpr = b_hi if pauc_max_fpr is None else pauc_max_fpr
    return Metrics(
        n=int(live.sum()),
        n_benign=n_h,
        n_failures=n_a,
        bauc=per_dim,
        bauc_pooled=pooled,
        chance_bauc=chance_bauc(per_dim.b_lo, per_dim.b_hi),
        b_lo_requested=b_lo,
        b_hi_requested=b_hi,
        recall_at=recall_at,
        thresholds=thresholds,
        not_estimable=tuple(not_estimable),
        auroc=_finite_or_none(auroc(s, y, w)),
        pauc=_finite_or_none(partial_auroc(s, y, max_fpr, w)),
        pauc_max_fpr=max_fpr,
    )
