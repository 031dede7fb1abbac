"""Findings in bounded work: which prefixes ``findings()`` scores (plugin/_rises.py).

Scoring every prefix was quadratic in the steps (8,000 cheap steps took over a
minute): every prefix is still scored while that is cheap, and a longer run is
searched best first under a fixed budget, finding the steps with the largest rises
exactly.
"""

from __future__ import annotations

import random

import pytest

from monsearch.export.plugin import _rises
from monsearch.export.plugin._rises import BUDGET, CALL_COST, rises


class Counted:
    """A score function over prefixes, counting the work of the calls made to it."""

    def __init__(self, deltas: list[float], weights: list[int]) -> None:
        self.cumulative = [0.0]
        for d in deltas:
            self.cumulative.append(self.cumulative[-1] + d)
        self.weights = weights
        self.calls: list[int] = []

    def __call__(self, k: int) -> float:
        self.calls.append(k)
        return self.cumulative[k]

    def work(self) -> int:
        return sum(CALL_COST + sum(self.weights[:k]) for k in self.calls)


def _top(deltas: list[float], top: int) -> list[tuple[int, float]]:
    ranked = sorted(((k, d) for k, d in enumerate(deltas) if d > 0), key=lambda x: (-x[1], x[0]))
    return ranked[:top]


def test_short_runs_score_every_prefix_in_order():
    deltas = [0.0, 1.5, -0.5, 0.25, 0.0, 2.0]
    f = Counted(deltas, [1] * len(deltas))
    found = rises(f, f.weights, f.cumulative[-1], top=3)
    assert f.calls == list(range(len(deltas) + 1)) and found.every_prefix
    assert found.steps == {1: 1.5, 3: 0.25, 5: 2.0} and found.stretches == []


def _run(n: int) -> tuple[list[float], list[int]]:
    rnd = random.Random(n)
    # Non-negative rises (a sum of detectors over what was seen so far): mostly zero, a
    # few small ones, three large ones anywhere.
    deltas = [rnd.choice([0.0] * 20 + [0.01, 0.02]) for _ in range(n)]
    for k, d in zip(rnd.sample(range(n), 3), (5.0, 3.0, 4.0), strict=True):
        deltas[k] = d
    weights = [rnd.choice([1, 1, 2, 5]) for _ in range(n)]
    return deltas, weights


@pytest.mark.parametrize("n", [2_000, 8_000])
def test_long_runs_cost_at_most_the_budget_and_find_the_top_steps(n):
    deltas, weights = _run(n)
    f = Counted(deltas, weights)
    found = rises(f, weights, f.cumulative[-1], top=3)
    assert not found.every_prefix
    assert f.work() <= BUDGET and len(f.calls) <= BUDGET // CALL_COST
    top = sorted(found.steps.items(), key=lambda x: (-x[1], x[0]))[:3]
    expected = _top(deltas, 3)
    assert [k for k, _ in top] == [k for k, _ in expected]
    assert [d for _, d in top] == pytest.approx([d for _, d in expected])
    assert found.scored == len(f.calls)


def test_a_run_too_long_to_resolve_reports_where_the_score_rose():
    """70,000 steps: halving down to one step costs more than the budget; the
    stretches that hold the large rises are reported instead."""
    deltas, weights = _run(70_000)
    f = Counted(deltas, weights)
    found = rises(f, weights, f.cumulative[-1], top=3)
    assert f.work() <= BUDGET
    for k, _ in _top(deltas, 3):
        assert k in found.steps or any(a <= k <= b for a, b, _ in found.stretches)


def test_work_does_not_grow_with_the_run():
    """The same search over 4x the steps does no more work (the budget bounds it)."""
    works = []
    for n in (10_000, 40_000):
        deltas = [0.01 if k % 7 == 0 else 0.0 for k in range(n)]
        f = Counted(deltas, [1] * n)
        rises(f, f.weights, f.cumulative[-1], top=3)
        works.append(f.work())
    assert max(works) <= BUDGET


def test_what_the_budget_leaves_unresolved_is_reported():
    n = 5_000
    deltas = [0.1] * n
    f = Counted(deltas, [1] * n)
    found = rises(f, f.weights, f.cumulative[-1], top=50, budget=20_000)
    assert f.work() <= 20_000
    assert found.stretches and all(a < b for a, b, _ in found.stretches)
    resolved = sum(1 for _ in found.steps) + sum(b - a + 1 for a, b, _ in found.stretches)
    assert resolved <= n
    assert found.stretches == sorted(found.stretches, key=lambda s: (-s[2], s[0]))


def test_budget_is_the_documented_one():
    # Every prefix of a 300-step run (far longer than real ones) is still scored.
    assert sum(CALL_COST + 3 * k for k in range(301)) <= _rises.BUDGET


@pytest.mark.parametrize("n, weight", [(10, 1), (4000, 20)])
def test_a_stop_keeps_what_was_scored_and_says_not_every_prefix(n, weight):
    """A program that ran out of its limits mid-way (``score_at`` answers None): the
    rises found in the prefixes scored before stand, nothing after is asked for."""
    deltas = [0.0] * n
    deltas[1] = 2.0
    deltas[n - 2] = 1.0
    counted = Counted(deltas, [weight] * n)
    allowed = 3

    def score_at(k: int) -> float | None:
        if len(counted.calls) >= allowed:
            return None
        return counted(k)

    found = rises(score_at, [weight] * n, counted.cumulative[-1], top=3)
    assert not found.every_prefix
    assert found.scored == allowed and len(counted.calls) == allowed
    if n == 10:  # in order: prefixes 0, 1, 2 give step 1's rise exactly
        assert found.steps == {1: 2.0} and found.stretches == []
    else:  # best first: what is unresolved is reported as stretches
        assert found.stretches and all(r > 0 for _, _, r in found.stretches)
