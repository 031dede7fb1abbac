"""Benign-mix views: a corpus's benign runs reweighted to another mix of habit profiles.

A synthetic run records its benign habit profile in ``meta["habits"]`` (recon, retry
and infra levels, :mod:`monsearch.corpora.benign_mix`). How often benign runs look
around, run into a rate limit or try a listener locally is a constant of the corpus
a search can exploit, exactly as the base rates are (:mod:`.priors`): a detector of
429s only costs false alarms where benign runs hit the limit often. A **benign-mix
view** reweights the benign runs so that their profiles follow another mix; failures
keep their weights. Nothing is re-run.

The weights post-stratify: within each stratum (the run's generator, whose own mix
may differ) the benign runs of each profile get the target's share of that
stratum's benign mass, so the reweighted benign set follows the target mix
*exactly*, generator by generator, and each generator keeps its benign mass. On top
of a base weighting (the run's fitness view, e.g. the invariant cell weights) the
same holds with the base weights as the mass. A profile the target needs and a
stratum lacks cannot be stood for: its share goes to the stratum's other profiles,
and the view names it as unmatched.

Views (:data:`VIEWS`): ``quiet`` and ``noisy`` (most runs at the quiet, or noisy,
level of every axis), ``flat`` (every profile alike). :func:`axis_groups` gives one
group per level of each axis (only that level's benign runs), for a worst-group
fitness; :func:`group_figures` scores any of them.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from monsearch.corpora.benign_mix import (
    AXES,
    LEVELS,
    META_KEY,
    PRESETS,
    level_share,
    levels_of,
    profile_name,
)

from .metrics import B_HI, B_LO, N_BUDGETS, BudgetRangeError, OnSmall, effective_size
from .summary import compute_metrics

#: The benign-mix views every sealed corpus is reported under.
VIEWS = ("quiet", "noisy", "flat")
#: A target: share of the noisy level per axis; an axis left out keeps the corpus's mix.
Target = Mapping[str, float]


@dataclass(frozen=True)
class HabitGroups:
    """Each run's habit levels, profile and stratum (its generator), as arrays.

    A run without a valid ``meta["habits"]`` has ``""`` for its levels and profile.
    """

    levels: dict[str, np.ndarray]
    profiles: np.ndarray
    strata: np.ndarray
    mixes: tuple[str, ...] = ()

    @property
    def present(self) -> np.ndarray:
        return self.profiles != ""

    def __len__(self) -> int:
        return int(self.profiles.size)

    def take(self, index: Sequence[int] | np.ndarray) -> HabitGroups:
        """The groups of the runs at ``index`` (in that order)."""
        idx = np.asarray(index, dtype=int)
        return HabitGroups(
            {a: v[idx] for a, v in self.levels.items()},
            self.profiles[idx],
            self.strata[idx],
            self.mixes,
        )


def habit_groups(trajectories: Iterable[Any]) -> HabitGroups:
    """The habit levels and profile of each trajectory (``""`` where it records none),
    and its stratum (generator)."""
    trajs = list(trajectories)
    levels: dict[str, list[str]] = {a: [] for a in AXES}
    profiles, strata, mixes = [], [], []
    for t in trajs:
        meta = getattr(t, "meta", None) or {}
        got = levels_of(meta)
        for a in AXES:
            levels[a].append("" if got is None else got[a])
        profiles.append("" if got is None else profile_name(got))
        strata.append(str(getattr(t, "generator", "")))
        mix = (meta.get(META_KEY) or {}).get("mix") if got is not None else None
        if isinstance(mix, str):
            mixes.append(mix)
    return HabitGroups(
        {a: np.asarray(v, dtype=object).astype(str) for a, v in levels.items()},
        np.asarray(profiles, dtype=object).astype(str),
        np.asarray(strata, dtype=object).astype(str),
        tuple(dict.fromkeys(mixes)),
    )


def view_target(view: str) -> dict[str, float]:
    """A view's target: the share of the noisy level per axis of the preset ``view``."""
    shares = PRESETS.get(view)
    if shares is None:
        known = ", ".join(v for v, s in PRESETS.items() if s is not None)
        raise ValueError(f"no benign-mix view {view!r} (known: {known})")
    return dict(shares)


def axis_groups() -> dict[str, dict[str, float]]:
    """One target per level of each axis: only that level's benign runs (``"patient"``:
    ``{"retry": 0.0}``); the other axes keep the corpus's mix."""
    return {level: {axis: 1.0 if noisy else 0.0} for level, (axis, noisy) in LEVELS.items()}


@dataclass(frozen=True)
class MixWeights:
    """The weights of one benign-mix view (or group) of one labelled split."""

    name: str
    target: dict[str, float]
    #: Per-run weights (failures at their base weight); None when ``skipped``.
    weights: np.ndarray | None
    effective_benign: float = 0.0
    #: ``generator|profile`` groups the target gives a share and the split has no
    #: benign run of (their share went to the generator's other profiles).
    unmatched: tuple[str, ...] = ()
    skipped: str | None = None
    #: The target's share of each profile over the axes it sets, and the realised one
    #: (benign runs at these weights, all generators pooled).
    profile_shares: dict[str, float] = field(default_factory=dict)
    realised_shares: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": dict(self.target),
            "effective_benign": self.effective_benign,
            "unmatched": list(self.unmatched),
            "skipped": self.skipped,
            "profile_shares": dict(self.profile_shares),
            "realised_shares": dict(self.realised_shares),
        }


def _check_target(target: Target) -> dict[str, float]:
    out = {}
    for axis, share in target.items():
        if axis not in AXES:
            raise ValueError(f"unknown habit axis {axis!r} (axes: {', '.join(AXES)})")
        s = float(share)
        if not (math.isfinite(s) and 0.0 <= s <= 1.0):
            raise ValueError(f"target share of {axis} must be in [0, 1], got {share!r}")
        out[axis] = s
    if not out:
        raise ValueError("a benign-mix target sets at least one axis")
    return out


def mix_weights(
    groups: HabitGroups,
    is_failure: ArrayLike,
    target: Target | str,
    *,
    base: ArrayLike | None = None,
    name: str | None = None,
) -> MixWeights:
    """Weights that give the benign runs of ``groups`` the mix ``target`` (a view name
    or per-axis noisy shares), generator by generator (see the module doc).

    ``base``: weights to build on (e.g. the fitness view's; None: one per run); a run
    of base weight 0 stays at 0. Skipped (weights None) when a benign run records no
    habits or no benign run has a positive base weight.
    """
    label = name or (target if isinstance(target, str) else "target")
    tgt = _check_target(view_target(target) if isinstance(target, str) else target)
    y = np.asarray(is_failure).astype(bool)
    if y.shape != groups.profiles.shape:
        raise ValueError("is_failure and the habit groups must be of one length")
    b = np.ones(y.size) if base is None else np.asarray(base, dtype=float).copy()
    benign = ~y & (b > 0)
    missing = int((benign & ~groups.present).sum())
    if missing:
        return MixWeights(
            label, tgt, None, skipped=f"{missing} benign runs record no habits (meta['habits'])"
        )
    if not benign.any():
        return MixWeights(label, tgt, None, skipped="no benign run to reweight")
    axes = [a for a in AXES if a in tgt]
    keys = np.asarray(["/".join(row) for row in zip(*(groups.levels[a] for a in axes), strict=True)])
    combos = [""]
    for a in axes:
        combos = [f"{c}/{lv}" if c else lv for c in combos for lv in AXES[a]]
    shares = {c: math.prod(level_share(tgt, lv) for lv in c.split("/")) for c in combos}
    w = b.copy()
    unmatched: list[str] = []
    for stratum in sorted(set(groups.strata[benign].tolist())):
        in_s = benign & (groups.strata == stratum)
        mass = float(b[in_s].sum())
        have = {c: float(b[in_s & (keys == c)].sum()) for c in combos}
        live = {c: s for c, s in shares.items() if s > 0 and have[c] > 0}
        unmatched += [f"{stratum}|{c}" for c, s in shares.items() if s > 0 and have[c] <= 0]
        total = sum(live.values())
        for c in combos:
            m = in_s & (keys == c)
            if c in live:
                w[m] = b[m] * mass * (live[c] / total) / have[c]
            else:
                w[m] = 0.0
    realised: dict[str, float] = {}
    mass_all = float(w[benign].sum())
    for c in combos:
        realised[c] = float(w[benign & (keys == c)].sum()) / mass_all if mass_all > 0 else 0.0
    return MixWeights(
        label,
        tgt,
        w,
        effective_benign=effective_size(w[~y]),
        unmatched=tuple(unmatched),
        profile_shares=shares,
        realised_shares=realised,
    )


def view_weights(
    groups: HabitGroups,
    is_failure: ArrayLike,
    *,
    base: ArrayLike | None = None,
    views: Sequence[str] = VIEWS,
) -> dict[str, MixWeights]:
    """:func:`mix_weights` of each view in ``views``."""
    return {v: mix_weights(groups, is_failure, v, base=base, name=v) for v in views}


def group_weights(
    groups: HabitGroups,
    is_failure: ArrayLike,
    *,
    base: ArrayLike | None = None,
    targets: Mapping[str, Target] | None = None,
) -> dict[str, MixWeights]:
    """:func:`mix_weights` of each named target (default: the views and one group per
    axis level, :func:`axis_groups`): what a worst-group fitness reads."""
    chosen: dict[str, Target] = (
        {**{v: view_target(v) for v in VIEWS}, **axis_groups()} if targets is None else dict(targets)
    )
    return {
        n: mix_weights(groups, is_failure, t, base=base, name=n) for n, t in chosen.items()
    }


def group_figures(
    scores: ArrayLike,
    is_failure: ArrayLike,
    dimensions: ArrayLike,
    weights: Mapping[str, MixWeights],
    *,
    b_lo: float = B_LO,
    b_hi: float = B_HI,
    n_budgets: int = N_BUDGETS,
    on_small: OnSmall = "warn",
) -> dict[str, dict[str, Any]]:
    """Budget-AUC of ``scores`` under each group's weights: ``{name: {"aggregate",
    "worst", "worst_dimension", "by_dimension", "effective_benign", "b_lo", "b_hi",
    "notes"}}`` (``"skipped"`` instead for a group without weights; ``"error"`` for a
    benign set too small for any range). The weights do not depend on the scores:
    compute them once per split (:func:`group_weights`) and score every candidate."""
    out: dict[str, dict[str, Any]] = {}
    for name, mw in weights.items():
        if mw.weights is None:
            out[name] = {"skipped": mw.skipped}
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                m = compute_metrics(
                    scores, is_failure, dimensions, b_lo=b_lo, b_hi=b_hi,
                    n_budgets=n_budgets, on_small=on_small, weights=mw.weights,
                )  # fmt: skip
            except BudgetRangeError as exc:
                out[name] = {"error": str(exc), "effective_benign": mw.effective_benign}
                continue
        out[name] = {
            "aggregate": m.aggregate,
            "worst": m.bauc.worst,
            "worst_dimension": m.bauc.worst_dimension,
            "by_dimension": dict(m.bauc.by_dimension),
            "effective_benign": mw.effective_benign,
            "b_lo": m.bauc.b_lo,
            "b_hi": m.bauc.b_hi,
            "notes": [str(w.message) for w in caught],
        }
    return out
