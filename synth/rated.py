"""Behaviour for chosen label failure rates (``--rates flat`` or a rates file).

Under the paper's rates (:mod:`~monsearch.synth.calibration`) persona
and task effects are fitted to the paper's margins. Here the panel-label
failure share of every (generator, task, outcome) is set directly to its
target: the ground-truth failure probability ``q`` of the cell solves::

    q * (1 - flip_fail) + (1 - q) * flip_pass = target

where ``flip_fail`` and ``flip_pass`` are the judges' exact expected mislabel
rates of the cell's failing and passing mode mixtures, the same figures the
paper calibration matches labels through. So no generator and no task × outcome
differs from its target in expectation: the label is no function of the context.
Everything else is the paper calibration's: solve rates, mode mixtures (each
persona's affinities), surface styles. An unsolved run's outcome, ``step_limit``
or ``no_flag``, is drawn before its failure (at the generator's usual
:data:`~monsearch.synth.scenario.LONG_HAUL` odds) so that each of the
three outcomes can have its own target.

The panel mislabels some runs whatever they do, so a cell's share can only be
set between its passing runs' flip rate and one less its failing runs' flip
rate (about 7 % to 94 % for every cell at once); targets outside are refused,
naming where they were set.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache

from monsearch.synth.calibration import (
    Calibration,
    Cell,
    CellStats,
    get_calibration,
)
from monsearch.synth.rates import OUTCOMES, SOLVED_OUTCOME, Rates, RatesError
from monsearch.synth.scenario import LONG_HAUL, Mode


@dataclass(frozen=True, slots=True)
class RatedCell:
    """Everything needed to draw one run of a persona on a task under chosen rates."""

    generator: str
    task: str
    p_solve: float
    p_fail: tuple[float, float, float]  # ground truth, per OUTCOMES
    mixture: dict[Cell, tuple[tuple[Mode, float], ...]]
    stats: dict[Cell, CellStats]

    def label_fail(self, outcome: str) -> float:
        """P(panel labels a failure | outcome), exact under the judge model."""
        solved = outcome == SOLVED_OUTCOME
        q = self.p_fail[OUTCOMES.index(outcome)]
        return (
            q * (1.0 - self.stats[(solved, True)].flip)
            + (1.0 - q) * self.stats[(solved, False)].flip
        )

    def draw(self, rng: random.Random) -> tuple[Cell, str]:
        """(solved, failure) and the outcome the run must end with."""
        solved = rng.random() < self.p_solve
        if solved:
            outcome = SOLVED_OUTCOME
        else:
            outcome = "step_limit" if rng.random() < LONG_HAUL else "no_flag"
        failure = rng.random() < self.p_fail[OUTCOMES.index(outcome)]
        return (solved, failure), outcome


@dataclass(frozen=True)
class RatedCalibration:
    rates: Rates
    cells: dict[tuple[str, str], RatedCell]

    def cell(self, generator: str, task: str) -> RatedCell:
        return self.cells[(generator, task)]


def reachable(cal: Calibration) -> dict[tuple[str, bool], tuple[float, float]]:
    """Per (task, solved): the label failure shares every generator can be given."""
    out: dict[tuple[str, bool], tuple[float, float]] = {}
    for (_, task), pt in cal.cells.items():
        for solved in (True, False):
            lo = pt.stats[(solved, False)].flip
            hi = 1.0 - pt.stats[(solved, True)].flip
            was = out.get((task, solved), (0.0, 1.0))
            out[(task, solved)] = (max(was[0], lo), min(was[1], hi))
    return out


def _unreachable(rates: Rates, task: str, outcome: str, target: float, cal: Calibration) -> str:
    ranges = reachable(cal)
    lo, hi = ranges[(task, outcome == SOLVED_OUTCOME)]
    why = "the simulated judges mislabel some runs whatever they do, so"
    if rates.kind == "flat":
        flo = max(r[0] for r in ranges.values())
        fhi = min(r[1] for r in ranges.values())
        return (
            f"{rates.origin(task, outcome)}: {target:g} is out of reach: {why} one share for "
            f"every task x outcome must lie between {flo:.3f} and {fhi:.3f}"
        )
    return (
        f"{rates.origin(task, outcome)}: {target:g} is out of reach for {task} {outcome} "
        f"runs: {why} their label failure share must lie between {lo:.3f} and {hi:.3f}"
    )


def check_reachable(rates: Rates) -> None:
    """Refuse (:class:`RatesError`) a target the judges cannot give some generator."""
    cal = get_calibration()
    ranges = reachable(cal)
    for task, triple in rates.targets:
        for outcome, target in zip(OUTCOMES, triple, strict=True):
            lo, hi = ranges[(task, outcome == SOLVED_OUTCOME)]
            if not lo <= target <= hi:
                raise RatesError(_unreachable(rates, task, outcome, target, cal))


def _truth_share(target: float, stats: dict[Cell, CellStats], solved: bool) -> float:
    flip_pass = stats[(solved, False)].flip
    flip_fail = stats[(solved, True)].flip
    q = (target - flip_pass) / (1.0 - flip_fail - flip_pass)
    return min(max(q, 0.0), 1.0)  # only rounding can take it out: check_reachable ran


@lru_cache(maxsize=8)
def rated_calibration(rates: Rates) -> RatedCalibration:
    """Per (generator, task): solve rate, mode mixtures and judging of the paper
    calibration, failure probabilities that give ``rates``' label shares."""
    if rates.calibrated:
        raise ValueError(f"{rates.kind!r} rates come from calibration.get_calibration")
    check_reachable(rates)
    base = get_calibration()
    targets = dict(rates.targets)
    cells = {}
    for (g, t), pt in base.cells.items():
        p_fail = tuple(
            _truth_share(target, pt.stats, outcome == SOLVED_OUTCOME)
            for outcome, target in zip(OUTCOMES, targets[t], strict=True)
        )
        cells[(g, t)] = RatedCell(g, t, pt.p_solve, p_fail, pt.mixture, pt.stats)  # type: ignore[arg-type]
    return RatedCalibration(rates, cells)


Shares = dict[str, dict[str, float]]


def expected_label_shares(rates: Rates) -> tuple[Shares, dict[str, float]]:
    """Label failure share per task and outcome, and per outcome over all tasks, that a
    corpus drawn for ``rates`` has in expectation over the paper's generator mix.

    For ``flat`` and files the per-task figures are the targets themselves (every
    generator has them); for ``paper`` and ``task`` they pool generators whose own
    rates differ, and an unsolved run's outcome is independent of its failure, so
    ``no_flag`` and ``step_limit`` share one figure.
    """
    if rates.calibrated:
        cal = get_calibration(balance=rates.kind)
        w = cal.weights()
        cells = cal.cells

        def label_fail(key: tuple[str, str], outcome: str) -> float:
            return cal.cells[key].label_fail(outcome == SOLVED_OUTCOME)

    else:
        rc = rated_calibration(rates)
        w = get_calibration().weights()
        cells = rc.cells

        def label_fail(key: tuple[str, str], outcome: str) -> float:
            return rc.cells[key].label_fail(outcome)

    def p_outcome(key: tuple[str, str], outcome: str) -> float:
        p = cells[key].p_solve
        if outcome == SOLVED_OUTCOME:
            return p
        return (1 - p) * (LONG_HAUL if outcome == "step_limit" else 1 - LONG_HAUL)

    tasks = sorted({t for _, t in cells})
    num = {(t, o): 0.0 for t in tasks for o in OUTCOMES}
    den = dict.fromkeys(num, 0.0)
    for key in cells:
        g, t = key
        for o in OUTCOMES:
            mass = w[g] * p_outcome(key, o)
            num[(t, o)] += mass * label_fail(key, o)
            den[(t, o)] += mass
    per_task = {t: {o: num[(t, o)] / den[(t, o)] for o in OUTCOMES} for t in tasks}
    overall = {
        o: sum(num[(t, o)] for t in tasks) / sum(den[(t, o)] for t in tasks) for o in OUTCOMES
    }
    return per_task, overall
