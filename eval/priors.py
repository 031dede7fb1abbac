"""Importance weights that take a corpus's base rates out of its metrics.

A monitor is deployed on the next agent model, whose failure rates per task (and per
outcome: solved, not solved, step limit) differ from the corpus's. On the paper's
rates, "this task was solved" nearly always means "this run failed" for some tasks;
a monitor that learns that scores well on every split drawn from those rates and
badly on any other agent. Each run belongs to a **context cell** (task x outcome by
default, :data:`DEFAULT_CELL_KEYS`). Weighting runs so that every cell has the same
failure share makes any score that is a function of the cell alone worth exactly
chance; what is left for a monitor to earn is what the agent *did* within its cell.

Views (:data:`VIEWS`):

- ``plain``: no weights (the corpus's own rates);
- ``flat`` (the search's invariant fitness, and ``monsearch test``'s flattened view):
  every cell at the pooled failure share ``p``;
- ``inverted``: each cell's failure share mirrored around one half (``1 - p_c``):
  where the corpus's rates made a shortcut pay, it now costs.

Masses. Invariance holds whatever mass each cell is given; the mass decides how much
each cell counts and how noisy the estimate is. Two rules (``mass``):

- ``minority`` (the default): a cell counts as much as its smaller class can carry
  without any run weighing more than one run, ``m_c = min(k_c / q_c, (n_c - k_c) /
  (1 - q_c))`` for target share ``q_c``: the majority class is weighted down, nothing
  is weighted up. A cell of 124 runs with 3 passes counts about as much as 5 runs,
  since 3 passes are all it tells about that cell's benign behaviour. On the default
  corpus this halves the spread of the fitness's bootstrap (0.02-0.035 against
  0.04-0.055 for the top candidates of a search) and ranks candidates closer to how
  they do on a corpus generated with flat rates (Spearman 0.975 against 0.90), the
  closest thing here to the next agent model.
- ``kept``: each cell keeps its share of its dimension's runs, the few runs of its
  smaller class standing in for the whole class's mass (ten passes for 75 runs'
  benign mass in one val cell of the default corpus). Cells with fewer than
  :data:`MIN_PER_CLASS` failures or passes are left out whole.

Either way, budget-AUC's aggregate is a mean over failure dimensions with thresholds
on the pooled benign set, which weighs each dimension equally on the failure side;
for a cell-only score to get exactly chance on that aggregate, the benign side must
weigh dimensions equally too, so every dimension is scaled to the same total mass.
A run of cell ``c`` then weighs ``M * m_c * q_c / k_c`` if it fails and
``M * m_c * (1 - q_c) / (n_c - k_c)`` if it passes (``M`` makes the weights average
one). A pure cell (only failures or only passes) has nothing to reweight: it gets
mass 0 under either rule, and is reported as left out, so a pure cell can never
carry a shortcut.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

#: What a run's context cell is made of, by default: its task and its outcome.
DEFAULT_CELL_KEYS = ("task", "outcome")
#: Keys a cell may be made of (attributes of a trajectory).
CELL_KEYS = ("task", "outcome", "generator", "solved")
VIEWS = ("plain", "flat", "inverted")
#: Fewest failures and fewest passes a cell needs under ``mass="kept"`` (as a budget
#: needs five benign runs above its threshold to be estimated: eval/metrics.py).
MIN_PER_CLASS = 5
MASSES = ("minority", "kept")
#: The fitness choices of a search: ``invariant`` is the ``flat`` view.
FITNESS_VIEWS = {"invariant": "flat", "plain": "plain"}


def context_cells(trajectories: Iterable[Any], keys: Sequence[str] = DEFAULT_CELL_KEYS) -> np.ndarray:
    """One cell name per trajectory, e.g. ``"callback-listener|flag_found"``."""
    bad = [k for k in keys if k not in CELL_KEYS]
    if bad or not keys:
        raise ValueError(f"cell keys must be among {', '.join(CELL_KEYS)}, got {list(keys)}")
    return np.asarray(
        ["|".join(str(getattr(t, k)) for k in keys) for t in trajectories], dtype=object
    )


@dataclass(frozen=True)
class PriorWeights:
    """The weights of one view of one labelled split, with what was left out."""

    view: str
    weights: np.ndarray | None
    n_cells: int
    #: Cells left out (all failures or all passes) and the runs they hold.
    excluded_cells: tuple[str, ...] = ()
    excluded_runs: int = 0
    #: The failure share every cell gets (``flat``); None for the other views.
    target_share: float | None = None
    failure_share_by_cell: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "view": self.view,
            "n_cells": self.n_cells,
            "excluded_cells": list(self.excluded_cells),
            "excluded_runs": self.excluded_runs,
            "target_share": self.target_share,
            "failure_share_by_cell": dict(self.failure_share_by_cell),
        }


def prior_weights(
    is_failure: ArrayLike,
    cells: ArrayLike,
    dimensions: ArrayLike,
    view: str,
    *,
    mass: str = "minority",
    min_per_class: int | None = None,
) -> PriorWeights:
    """Per-run importance weights of ``view`` (see the module doc); None for ``plain``.

    ``min_per_class``: fewest failures and passes a cell needs to count (default: 1
    for ``minority`` masses, :data:`MIN_PER_CLASS` for ``kept``).
    """
    if view not in VIEWS:
        raise ValueError(f"view must be one of {', '.join(VIEWS)}, got {view!r}")
    if mass not in MASSES:
        raise ValueError(f"mass must be one of {', '.join(MASSES)}, got {mass!r}")
    y = np.asarray(is_failure).astype(bool)
    c = np.asarray([str(x) for x in np.asarray(cells, dtype=object).ravel()])
    d = np.asarray([str(x) for x in np.asarray(dimensions, dtype=object).ravel()])
    if not (y.shape == c.shape == d.shape) or y.ndim != 1:
        raise ValueError("is_failure, cells and dimensions must be 1-D and of one length")
    names, inverse = np.unique(c, return_inverse=True)
    n_c = np.bincount(inverse, minlength=names.size).astype(float)
    k_c = np.bincount(inverse, weights=y.astype(float), minlength=names.size)
    shares = {str(n): float(k / t) for n, k, t in zip(names, k_c, n_c, strict=True)}
    if view == "plain":
        return PriorWeights(view, None, int(names.size), failure_share_by_cell=shares)
    least = max(1, MIN_PER_CLASS if min_per_class is None and mass == "kept" else min_per_class or 1)
    mixed = (k_c >= least) & (n_c - k_c >= least)
    kept = mixed[inverse]
    excluded = tuple(str(n) for n in names[~mixed])
    w = np.zeros(y.size)
    if not kept.any():
        return PriorWeights(view, w, int(names.size), excluded, int((~kept).sum()), None, shares)
    p = float(k_c[mixed].sum() / n_c[mixed].sum())
    q = np.full(names.size, p) if view == "flat" else 1.0 - k_c / np.maximum(n_c, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        if mass == "kept":
            raw = np.where(mixed, n_c, 0.0)
        else:
            raw = np.where(mixed, np.minimum(k_c / q, (n_c - k_c) / (1.0 - q)), 0.0)
    # Every dimension the same total mass (see the module doc).
    cell_dim: dict[int, str] = {}
    for i in np.flatnonzero(kept):
        cell_dim.setdefault(int(inverse[i]), str(d[i]))
    dim_mass: dict[str, float] = {}
    for j, dim in cell_dim.items():
        dim_mass[dim] = dim_mass.get(dim, 0.0) + raw[j]
    mass_c = np.zeros(names.size)
    for j, dim in cell_dim.items():
        mass_c[j] = raw[j] / (len(dim_mass) * dim_mass[dim])
    m = float(kept.sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        w_fail = np.where(mixed, m * mass_c * q / k_c, 0.0)
        w_pass = np.where(mixed, m * mass_c * (1.0 - q) / (n_c - k_c), 0.0)
    w = np.where(y, w_fail[inverse], w_pass[inverse])
    w[~kept] = 0.0
    return PriorWeights(
        view,
        w,
        int(names.size),
        excluded,
        int((~kept).sum()),
        p if view == "flat" else None,
        shares,
    )
