"""Behaviour calibration: from the paper's rates to per-(persona, task) mode probabilities.

A run of persona ``p`` on task ``t`` is drawn in three steps: solved or not,
then whether it is (in ground truth) an OPSEC failure, then a mode of the
scenario in that (solved, failure) cell. Persona and task effects are additive
on the logit scale::

    P(solved)            = sigmoid(a_p + b_t)
    P(failure | solved)  = sigmoid(c_p + d_t)
    P(failure | unsolved) = sigmoid(u + UNSOLVED_PERSONA_WEIGHT * (c_p - mean c) + e_t)

The paper's rates are about *labels*, the noisy majority of the judge panel,
so the targets are matched through the judges' exact expected flip rates
(:func:`monsearch.synth.judges.mode_judging`) for each cell's mode
mixture. The offsets come from a short deterministic fixed-point iteration
(alternating bisections, like iterative proportional fitting): persona offsets
hold every persona's margins, paper tasks' offsets hold the task rates the
paper reports, and the other tasks keep our priors' relative difficulty.
Nothing depends on the seed; the result is computed once per process.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from monsearch.synth.judges import PANEL_JUDGES, mode_judging
from monsearch.synth.personas import (
    OVERALL_TARGET,
    PERSONAS,
    TASK_DIFFICULTY,
    UNSOLVED_FAIL_TARGET,
    Persona,
    TaskDifficulty,
)
from monsearch.synth.scenario import REGISTRY, Mode

#: Share of a cell's probability on its hard modes (when it has both kinds).
HARD_SHARE = {(True, False): 0.40, (True, True): 0.35, (False, False): 0.30, (False, True): 0.30}
#: Personas prefer some modes over others: weights scaled by 1 +/- this (hashlib-derived).
AFFINITY_SPREAD = 0.6
#: How much a persona's recklessness on solves carries over to its unsolved runs.
UNSOLVED_PERSONA_WEIGHT = 0.5

Cell = tuple[bool, bool]  # (solved, failure)
CELLS: tuple[Cell, ...] = ((True, False), (True, True), (False, False), (False, True))


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def _bisect(f: Callable[[float], float], lo: float = -12.0, hi: float = 12.0) -> float:
    """Root of an increasing ``f`` on [lo, hi]; the nearer end when there is none."""
    if f(lo) >= 0:
        return lo
    if f(hi) <= 0:
        return hi
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if f(mid) < 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _affinity(generator: str, task: str, mode: str) -> float:
    digest = hashlib.sha256(f"affinity\x1f{generator}\x1f{task}\x1f{mode}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    return 1.0 + AFFINITY_SPREAD * (2.0 * u - 1.0)


def mode_mixture(generator: str, task: str) -> dict[Cell, tuple[tuple[Mode, float], ...]]:
    """Per cell, the modes of ``task`` with their probabilities for this persona."""
    out: dict[Cell, tuple[tuple[Mode, float], ...]] = {}
    modes = REGISTRY[task].modes
    for cell in CELLS:
        members = [m for m in modes if (m.solved, m.failure) == cell]
        if not members:
            out[cell] = ()
            continue
        hard = [m for m in members if m.hard]
        easy = [m for m in members if not m.hard]
        share = HARD_SHARE[cell] if hard and easy else (1.0 if hard else 0.0)
        weights = []
        for m in members:
            base = share / len(hard) if m.hard else (1.0 - share) / len(easy)
            weights.append(base * _affinity(generator, task, m.name))
        total = sum(weights)
        out[cell] = tuple((m, w / total) for m, w in zip(members, weights, strict=True))
    return out


@dataclass(frozen=True, slots=True)
class CellStats:
    """Expected judging of one (persona, task, cell) under its mode mixture."""

    present: bool
    flip: float  # P(label != ground truth)
    unanimous: float
    fail_votes: float
    panel_score: float
    oracle_agrees: float

    @classmethod
    def of(cls, task: str, mixture: tuple[tuple[Mode, float], ...]) -> CellStats:
        if not mixture:
            return cls(False, 0.0, 1.0, 0.0, 0.0, 1.0)
        acc = [0.0] * 5
        for mode, w in mixture:
            j = mode_judging(task, mode)
            for i, v in enumerate(
                (j.label_flip, j.unanimous, j.fail_votes, j.panel_score, j.oracle_agrees_majority)
            ):
                acc[i] += w * v
        return cls(True, *acc)


@dataclass(frozen=True, slots=True)
class PersonaTask:
    """Everything needed to draw one run of a persona on a task."""

    generator: str
    task: str
    p_solve: float
    p_fail_solved: float  # ground truth, given solved
    p_fail_unsolved: float  # ground truth, given unsolved
    mixture: dict[Cell, tuple[tuple[Mode, float], ...]]
    stats: dict[Cell, CellStats]

    def cell_prob(self, cell: Cell) -> float:
        solved, failure = cell
        ps = self.p_solve if solved else 1.0 - self.p_solve
        pf = self.p_fail_solved if solved else self.p_fail_unsolved
        return ps * (pf if failure else 1.0 - pf)

    def label_fail(self, solved: bool) -> float:
        """P(panel labels a failure | solved or not)."""
        pf = self.p_fail_solved if solved else self.p_fail_unsolved
        return (
            pf * (1.0 - self.stats[(solved, True)].flip)
            + (1.0 - pf) * self.stats[(solved, False)].flip
        )


def _fail_prob(logit: float, stats: dict[Cell, CellStats], solved: bool) -> float:
    """Ground-truth failure probability, forced to 0/1 when a cell has no modes."""
    if not stats[(solved, True)].present:
        return 0.0
    if not stats[(solved, False)].present:
        return 1.0
    return _sigmoid(logit)


def _label_fail(pf: float, stats: dict[Cell, CellStats], solved: bool) -> float:
    return pf * (1.0 - stats[(solved, True)].flip) + (1.0 - pf) * stats[(solved, False)].flip


@dataclass(frozen=True)
class Calibration:
    """Fitted offsets and the resulting per-(persona, task) draws."""

    personas: tuple[Persona, ...]
    tasks: tuple[str, ...]
    solve_offset: dict[str, float]  # a_p
    fail_offset: dict[str, float]  # c_p
    task_solve_offset: dict[str, float]  # b_t
    task_fail_offset: dict[str, float]  # d_t
    unsolved_offset: float  # u
    cells: dict[tuple[str, str], PersonaTask]

    def cell(self, generator: str, task: str) -> PersonaTask:
        return self.cells[(generator, task)]

    # ---- expected statistics (exact under the model; what the corpus converges to) ----

    def expected_persona(self, generator: str) -> dict[str, float]:
        cs = [self.cells[(generator, t)] for t in self.tasks]
        k = len(cs)
        solve = sum(c.p_solve for c in cs) / k
        reckless = sum(c.p_solve * c.label_fail(True) for c in cs) / k
        score = sum(
            c.cell_prob(cell) * c.stats[cell].panel_score for c in cs for cell in CELLS if cell[0]
        )
        return {
            "solve_pct": 100 * solve,
            "safe_pct": 100 * (solve - reckless),
            "reckless_pct": 100 * reckless,
            "stealth_at_solve": score / (k * solve),
        }

    def weights(self) -> dict[str, float]:
        total = sum(p.n for p in self.personas)
        return {p.generator: p.n / total for p in self.personas}

    def expected_task(self, task: str) -> dict[str, float]:
        w = self.weights()
        solve = sum(w[g] * self.cells[(g, task)].p_solve for g in w)
        reckless = sum(
            w[g] * self.cells[(g, task)].p_solve * self.cells[(g, task)].label_fail(True) for g in w
        )
        return {
            "solve_pct": 100 * solve,
            "safe_pct": 100 * (solve - reckless),
            "reckless_pct": 100 * reckless,
        }

    def expected_overall(self, generators: Sequence[str] | None = None) -> dict[str, float]:
        """Rates and panel agreement for a persona mix proportional to the paper's N."""
        w = self.weights()
        if generators is not None:
            sub = {g: w[g] for g in generators}
            s = sum(sub.values())
            w = {g: v / s for g, v in sub.items()}
        k = len(self.tasks)
        acc = dict.fromkeys(
            ("solve", "reckless", "score", "unan", "fvotes", "oracle", "labfail"), 0.0
        )
        for g, wg in w.items():
            for t in self.tasks:
                c = self.cells[(g, t)]
                for cell in CELLS:
                    p = wg * c.cell_prob(cell) / k
                    st = c.stats[cell]
                    if p == 0.0:
                        continue
                    acc["unan"] += p * st.unanimous
                    acc["fvotes"] += p * st.fail_votes
                    acc["oracle"] += p * st.oracle_agrees
                    lab = (1.0 - st.flip) if cell[1] else st.flip
                    acc["labfail"] += p * lab
                    if cell[0]:
                        acc["solve"] += p
                        acc["score"] += p * st.panel_score
                        acc["reckless"] += p * lab
        m = len(PANEL_JUDGES)
        pbar = acc["unan"] + (1.0 - acc["unan"]) / 3.0  # a 2-1 split agrees on 1 pair of 3
        pf = acc["fvotes"] / m
        pe = pf * pf + (1 - pf) * (1 - pf)
        return {
            "solve_pct": 100 * acc["solve"],
            "safe_pct": 100 * (acc["solve"] - acc["reckless"]),
            "reckless_pct": 100 * acc["reckless"],
            "stealth_at_solve": acc["score"] / acc["solve"],
            "unanimous_pct": 100 * acc["unan"],
            "fleiss_kappa": (pbar - pe) / (1 - pe),
            "fail_vote_rate": pf,
            "label_fail_pct": 100 * acc["labfail"],
            "oracle_agreement_pct": 100 * acc["oracle"],
        }


BALANCES = ("paper", "task")


def _difficulty(balance: str) -> dict[str, TaskDifficulty]:
    """Per-task targets: the paper's and our priors (``"paper"``), or every task held at
    the overall failure shares (``"task"``: the label says nothing about the task).

    ``"task"`` keeps each task's solve rate (the paper's where it gives one) and the
    personas' margins; it gives up the paper's per-task failure rates (callback-listener's
    0 % safe, adtech-admin's 6.6 % safe), so "which task" is no prior for the label.
    """
    if balance == "paper":
        return TASK_DIFFICULTY
    if balance != "task":
        raise ValueError(f"unknown balance {balance!r} (known: {', '.join(BALANCES)})")
    solved_fail = OVERALL_TARGET["reckless_pct"] / OVERALL_TARGET["solve_pct"]
    return {
        t: TaskDifficulty(
            d.solve,
            solved_fail,
            UNSOLVED_FAIL_TARGET,
            ("fail_given_solve", *(("solve",) if "solve" in d.paper else ())),
        )
        for t, d in TASK_DIFFICULTY.items()
    }


def _fit(
    personas: tuple[Persona, ...], iterations: int = 60, balance: str = "paper"
) -> Calibration:
    TASK_DIFFICULTY = _difficulty(balance)  # noqa: N806 - the module table, or the balanced one
    tasks = tuple(sorted(REGISTRY))
    missing = sorted(set(tasks) ^ set(TASK_DIFFICULTY))
    if missing:
        raise RuntimeError(f"task difficulty and scenario registry disagree on {missing}")
    total_n = sum(p.n for p in personas)
    w = {p.generator: p.n / total_n for p in personas}
    gens = [p.generator for p in personas]
    stats = {
        (g, t): {cell: CellStats.of(t, mix) for cell, mix in mix_all.items()}
        for g in gens
        for t in tasks
        for mix_all in (mode_mixture(g, t),)
    }

    # Solve offsets: persona margins and the paper's per-task solve rates.
    b = {t: _logit(TASK_DIFFICULTY[t].solve) for t in tasks}
    a = dict.fromkeys(gens, 0.0)
    for _ in range(iterations):
        before = (*a.values(), *b.values())
        for p in personas:
            target = p.solved / p.n
            a[p.generator] = _bisect(
                lambda x, p=p, target=target: (
                    sum(_sigmoid(x + b[t]) for t in tasks) / len(tasks) - target
                )
            )
        for t in tasks:
            if "solve" in TASK_DIFFICULTY[t].paper:
                target = TASK_DIFFICULTY[t].solve
                b[t] = _bisect(
                    lambda x, t=t, target=target: (
                        sum(w[g] * _sigmoid(a[g] + x) for g in gens) - target
                    )
                )
        if max(abs(x - y) for x, y in zip(before, (*a.values(), *b.values()), strict=True)) < 1e-9:
            break
    ps = {(g, t): _sigmoid(a[g] + b[t]) for g in gens for t in tasks}

    # Failure-given-solve offsets, matched at the label level through the judges.
    d = {t: _logit(TASK_DIFFICULTY[t].fail_given_solve) for t in tasks}
    c = dict.fromkeys(gens, 0.0)

    def lab(g: str, t: str, x: float) -> float:
        st = stats[(g, t)]
        return _label_fail(_fail_prob(x, st, True), st, True)

    for _ in range(iterations):
        before = (*c.values(), *d.values())
        for p in personas:
            g = p.generator
            target = p.reckless_share_of_solves
            den = sum(ps[(g, t)] for t in tasks)
            c[g] = _bisect(
                lambda x, g=g, target=target, den=den: (
                    sum(ps[(g, t)] * lab(g, t, x + d[t]) for t in tasks) / den - target
                )
            )
        for t in tasks:
            if "fail_given_solve" in TASK_DIFFICULTY[t].paper:
                target = TASK_DIFFICULTY[t].fail_given_solve
                den = sum(w[g] * ps[(g, t)] for g in gens)
                d[t] = _bisect(
                    lambda x, t=t, target=target, den=den: (
                        sum(w[g] * ps[(g, t)] * lab(g, t, c[g] + x) for g in gens) / den - target
                    )
                )
        if max(abs(x - y) for x, y in zip(before, (*c.values(), *d.values()), strict=True)) < 1e-9:
            break

    # Unsolved runs: one global offset for the overall label-failure share.
    c_mean = sum(w[g] * c[g] for g in gens)
    e = {t: _logit(TASK_DIFFICULTY[t].fail_given_unsolved) for t in tasks}

    def unsolved_logit(u: float, g: str, t: str) -> float:
        return u + UNSOLVED_PERSONA_WEIGHT * (c[g] - c_mean) + e[t]

    den_u = sum(w[g] * (1 - ps[(g, t)]) for g in gens for t in tasks)
    u = _bisect(
        lambda x: (
            sum(
                w[g]
                * (1 - ps[(g, t)])
                * _label_fail(
                    _fail_prob(unsolved_logit(x, g, t), stats[(g, t)], False), stats[(g, t)], False
                )
                for g in gens
                for t in tasks
            )
            / den_u
            - UNSOLVED_FAIL_TARGET
        )
    )

    cells = {}
    for g in gens:
        for t in tasks:
            st = stats[(g, t)]
            cells[(g, t)] = PersonaTask(
                generator=g,
                task=t,
                p_solve=ps[(g, t)],
                p_fail_solved=_fail_prob(c[g] + d[t], st, True),
                p_fail_unsolved=_fail_prob(unsolved_logit(u, g, t), st, False),
                mixture=mode_mixture(g, t),
                stats=st,
            )
    return Calibration(personas, tasks, a, c, b, d, u, cells)


@lru_cache(maxsize=4)
def get_calibration(
    personas: tuple[Persona, ...] = PERSONAS, balance: str = "paper"
) -> Calibration:
    """The calibration for a persona set (computed once per process, deterministic).

    ``balance="task"``: every task at the same failure shares (see :func:`_difficulty`).
    """
    return _fit(personas, balance=balance)
