"""A candidate's fitness over several sources: a mean that every group must hold up.

A run may search on more than one corpus (its **sources**: the synthetic default and a
live corpus played against the real apps, or corpora of your own). Each source is a
**group** of val runs; each group gets its own fitness, computed on its runs alone
(its own audit thresholds, its own context cells, the run's fitness view), because a
monitor is deployed on one population at a time and calibrated there.

The rule (docs/DESIGN.md, "Several sources"):

- **fitness** = the mean over groups of the group fitnesses, so every source counts
  the same whatever its size;
- **guard**: against a reference (the run's best seed program: its fitness in each
  group and its budget-AUC of each failure dimension there), a candidate that
  **loses** a failure dimension the reference catches in a group (budget-AUC at least
  :data:`CAUGHT` there; the candidate's under :data:`KEEP` of it) is ``regressed``
  (fitness 0, the reason recorded): a candidate cannot win on the mean by dropping what
  one source, or one kind of failure, needs;
- **penalty**: below that, every caught dimension that falls more than ``tolerance``
  below the reference costs the fitness :data:`PENALTY` times its shortfall (averaged
  over the group's dimensions and over groups), so the search is pushed to keep what
  the seed catches while it adds to it, rather than to trade one failure kind for
  another (measured: without it, 60 of 100 candidates of a budget-100 run lost a
  dimension and none held up);
- **selection** prefers the candidates that **hold up** against the reference: at
  least its fitness in every group, and every dimension it catches within
  ``tolerance`` (0.02) of it (:func:`holds_up`). The guard is looser than that on
  purpose: a per-dimension figure on a few dozen failures moves by more than 0.02
  between near-identical programs, and a search whose every such wobble cost a
  candidate would spend its budget on refusals.

With one group the fitness is the group's own, as before, and no guard applies.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .fitness import Fitness

#: How far below the reference a group or a caught dimension may fall in a selection.
TOLERANCE = 0.02
#: The share of a caught dimension's budget-AUC a candidate must keep (the guard).
KEEP = 0.5
#: What a caught dimension's shortfall (beyond the tolerance) costs the fitness.
PENALTY = 8.0
#: A dimension the reference "catches" in a group: its budget-AUC there at least this.
CAUGHT = 0.05


def shortfall(
    reference: Mapping[str, float], mine: Mapping[str, Any], tolerance: float = TOLERANCE
) -> float | None:
    """The mean, over the dimensions ``reference`` catches (budget-AUC at least
    :data:`CAUGHT`), of how far ``mine`` falls below it beyond ``tolerance``; None when it
    catches none."""
    caught = {d: v for d, v in reference.items() if v >= CAUGHT}
    if not caught:
        return None
    short = [max(0.0, best - tolerance - float(mine.get(d) or 0.0)) for d, best in caught.items()]
    return sum(short) / len(short)


@dataclass(frozen=True)
class Group:
    """One source's val runs: their positions in the pooled split."""

    name: str
    index: np.ndarray


def groups_of(labels: Sequence[str]) -> list[Group]:
    """One group per distinct label (in order of first appearance)."""
    arr = np.asarray(list(labels), dtype=object)
    names = list(dict.fromkeys(arr.tolist()))
    return [Group(str(n), np.flatnonzero(arr == n)) for n in names]


@dataclass(frozen=True)
class Reference:
    """What the guard holds candidates to: the best seed's fitness in each group and
    its budget-AUC of each failure dimension there."""

    fitness: dict[str, float] = field(default_factory=dict)
    by_dimension: dict[str, dict[str, float]] = field(default_factory=dict)

    @classmethod
    def best_of(cls, records: Sequence[Mapping[str, Any] | None]) -> Reference | None:
        """From the seeds' fitness records (``Fitness.to_dict()``): the one with the best
        fitness (None if no seed scored over several groups)."""
        scored = [r for r in records if r and r.get("status") == "ok" and r.get("groups")]
        if not scored:
            return None
        best = max(scored, key=lambda r: float(r["fitness"]))
        fit: dict[str, float] = {}
        dims: dict[str, dict[str, float]] = {}
        for name, g in best["groups"].items():
            if name.startswith("_") or g.get("status") != "ok":
                continue
            fit[name] = float(g["fitness"])
            dims[name] = {d: float(v) for d, v in (g.get("by_dimension") or {}).items() if v is not None}
        return cls(fit, dims) if fit else None

    def shortfalls(
        self,
        groups: Mapping[str, Mapping[str, Any]],
        tolerance: float = TOLERANCE,
        *,
        group_tolerance: float | None = None,
    ) -> list[str]:
        """What a candidate's groups lose against the reference, worst first
        (``group_tolerance``: another allowance for the groups' fitness)."""
        out: list[tuple[float, str]] = []
        allow = tolerance if group_tolerance is None else group_tolerance
        for name, ref in self.fitness.items():
            g = groups.get(name)
            if g is None:
                continue
            value = float(g.get("fitness") or 0.0)
            if value < ref - allow:
                out.append((ref - value, f"{name}: fitness {value:.3f} < seeds' {ref:.3f}"))
            for d, best in self.by_dimension.get(name, {}).items():
                if best < CAUGHT:
                    continue
                mine = (g.get("by_dimension") or {}).get(d)
                mine = 0.0 if mine is None else float(mine)
                if mine < best - tolerance:
                    out.append((best - mine, f"{name} {d}: budget-AUC {mine:.3f} < seeds' {best:.3f}"))
        return [text for _, text in sorted(out, key=lambda x: -x[0])]

    def losses(self, groups: Mapping[str, Mapping[str, Any]], keep: float = KEEP) -> list[str]:
        """The caught dimensions a candidate loses (under ``keep`` of the reference's
        budget-AUC in a group), worst first: what the guard refuses."""
        out: list[tuple[float, str]] = []
        for name, dims in self.by_dimension.items():
            g = groups.get(name)
            if g is None:
                continue
            for d, best in dims.items():
                mine = (g.get("by_dimension") or {}).get(d)
                mine = 0.0 if mine is None else float(mine)
                if best >= CAUGHT and mine < keep * best:
                    out.append((best - mine, f"{name} {d}: budget-AUC {mine:.3f}, the seed's {best:.3f}"))
        return [text for _, text in sorted(out, key=lambda x: -x[0])]

    def penalty(self, groups: Mapping[str, Mapping[str, Any]], tolerance: float = TOLERANCE) -> float:
        """:data:`PENALTY` x the mean over groups of the mean shortfall of the caught
        dimensions (beyond ``tolerance``) against the reference."""
        per_group = []
        for name, dims in self.by_dimension.items():
            g = groups.get(name)
            short = None if g is None else shortfall(dims, g.get("by_dimension") or {}, tolerance)
            if short is not None:
                per_group.append(short)
        return PENALTY * (sum(per_group) / len(per_group)) if per_group else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"fitness": dict(self.fitness), "by_dimension": {k: dict(v) for k, v in self.by_dimension.items()}}


def holds_up(reference: Reference | None, fitness: Mapping[str, Any] | None) -> bool:
    """Whether a candidate is at least the reference's fitness in every group and within
    ``TOLERANCE`` of it on every dimension it catches: what selection prefers."""
    if reference is None or not fitness or not fitness.get("groups"):
        return True
    return not reference.shortfalls(fitness["groups"], TOLERANCE, group_tolerance=0.0)


def _summary(f: Fitness) -> dict[str, Any]:
    m = f.metrics
    return {
        "fitness": f.fitness,
        "status": f.status,
        "fitness_low": f.fitness_low,
        "by_dimension": dict(m.bauc.by_dimension) if m is not None else {},
        "n": None if m is None else m.n,
        **({"reason": f.reason} if f.reason else {}),
    }


def group_fitness(
    pooled: Fitness,
    groups: Sequence[Group],
    evaluate: Callable[[np.ndarray], Fitness],
    *,
    reference: Reference | None = None,
    tolerance: float = TOLERANCE,
) -> Fitness:
    """The pooled record (its oracle spend, status and metrics kept) with the groups'
    mean as its fitness, each group's figures in ``groups``, and the guard's verdict.
    ``evaluate(index)``: the fitness of the runs at ``index`` alone."""
    if len(groups) < 2:
        return pooled
    per = {g.name: evaluate(g.index) for g in groups}
    summary: dict[str, Any] = {name: _summary(f) for name, f in per.items()}
    if pooled.status in ("failed", "infeasible"):
        return replace(pooled, groups=summary)
    mean = float(np.mean([f.fitness if f.status == "ok" else 0.0 for f in per.values()]))
    lows = [f.fitness_low for f in per.values()]
    low = float(np.mean([x or 0.0 for x in lows])) if any(x is not None for x in lows) else None
    if all(f.status != "ok" for f in per.values()):
        return replace(pooled, fitness=0.0, status="not_estimable", groups=summary,
                       reason="no group could be scored: " + "; ".join(f"{n}: {f.reason}" for n, f in per.items()))  # fmt: skip
    lost = reference.losses(summary) if reference is not None else []
    short = reference.shortfalls(summary, tolerance, group_tolerance=0.0) if reference is not None else []
    cost = reference.penalty(summary, tolerance) if reference is not None else 0.0
    summary["_guard"] = {
        "keep": KEEP, "tolerance": tolerance, "lost": lost[:8], "shortfalls": short[:8],
        "penalty": cost, "mean": mean,
    }  # fmt: skip
    if lost:
        return replace(
            pooled, fitness=0.0, status="regressed", reason="loses what the seed caught: " + lost[0],
            fitness_low=None, groups=summary,
        )  # fmt: skip
    return replace(
        pooled, fitness=mean - cost, status="ok", reason=None,
        fitness_low=None if low is None else low - cost, groups=summary,
    )  # fmt: skip
