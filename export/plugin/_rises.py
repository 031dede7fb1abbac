"""Which steps raised a trajectory's score, in work bounded whatever its length.

A step's contribution is the score of the prefix that ends with it minus the score of
the prefix before (the program is a black box: only its scores say what a step did).
Scoring every prefix costs the program's work on each, which grows with the prefix:
quadratic in the steps, and agents write the steps (8,000 cheap ones took over a
minute). So every prefix is scored while that costs at most :data:`BUDGET`, which no
real run comes near; a longer run is searched best first instead, under the same
budget: the stretch of steps whose prefixes' scores rose most is halved (its middle
prefix scored) until it is one step, whose rise is then exactly that step's
contribution. The search stops when the budget is spent, or once ``top`` steps are
found that none of the stretches left could beat. What it did not resolve is
reported: the stretches still rising, and how many prefixes were scored.

The caller may stop the work early (the program ran out of its time or memory):
``score_at`` then returns ``None``, and what was scored so far stands.

The search sees rises only: a stretch whose score did not rise overall is not
searched, so a step that raised the score and a later one that lowered it by as much
are missed there (scoring every prefix finds both).

Standard library only: the plugin ships this file as it is.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

#: Work the prefixes of one trajectory may cost, in :func:`weights` units summed over
#: the prefixes scored (a unit is about a microsecond of a simple program's time).
BUDGET = 500_000
#: What scoring any prefix costs besides its steps (a program call, the view's top).
CALL_COST = 100
#: Characters of a step's text that weigh as much as one of its view objects.
TEXT_WEIGHT = 4096


def weights(view: Any) -> list[int]:
    """What each step adds to the work of scoring a prefix that holds it: one, one per
    request, secret, listener and file written in its view, one per
    :data:`TEXT_WEIGHT` characters of its command, thought and output."""
    out = []
    for st in view["steps"]:
        objects = (
            len(st["requests"]) + len(st["secrets"]) + len(st["listeners"])
            + len(st["files_written"])
        )  # fmt: skip
        chars = len(st["command"]) + len(st["think"]) + len(st["observation"])
        out.append(1 + objects + chars // TEXT_WEIGHT)
    return out


@dataclass
class Rises:
    """The steps that raised the score (``{step position: rise}``, each exact), the
    stretches of steps whose rise was not resolved into steps (``(first, last, rise)``,
    positions inclusive, largest rise first), how many prefixes were scored, and
    whether that was all of them (then ``steps`` holds every step that raised it)."""

    steps: dict[int, float]
    stretches: list[tuple[int, int, float]] = field(default_factory=list)
    scored: int = 0
    every_prefix: bool = True


def rises(
    score_at: Callable[[int], float | None],
    step_weights: Sequence[int],
    whole: float,
    top: int,
    budget: int = BUDGET,
) -> Rises:
    """The rises of the prefixes' scores: ``score_at(k)`` scores the first ``k`` steps;
    ``whole`` is the score of all of them (already known), and ``None`` from it stops the
    work. Every prefix is scored, in order, when that costs at most ``budget``;
    otherwise the best-first search of the module docstring."""
    n = len(step_weights)
    cost = [CALL_COST]
    for w in step_weights:
        cost.append(cost[-1] + w)
    if sum(cost) <= budget:
        scores: list[float] = []
        for k in range(n + 1):
            s = score_at(k)
            if s is None:
                break
            scores.append(s)
        steps = {k - 1: scores[k] - scores[k - 1] for k in range(1, len(scores))}
        rising = {k: d for k, d in steps.items() if d > 0}
        return Rises(rising, [], len(scores), every_prefix=len(scores) == n + 1)
    first = score_at(0)
    if first is None:
        return Rises({}, [], 0, every_prefix=False)
    known = {0: first, n: whole}
    spent = cost[0]
    scored = 1
    found: dict[int, float] = {}
    best: list[float] = []  # the ``top`` largest rises found (a min-heap)
    left: list[tuple[int, int, float]] = []
    # Stretches (a, b]: the steps a..b-1, largest rise first (then the earliest).
    heap: list[tuple[float, int, int]] = []

    def push(a: int, b: int) -> None:
        rise = known[b] - known[a]
        if rise > 0:
            heapq.heappush(heap, (-rise, a, b))

    push(0, n)
    while heap and top > 0:
        rise = -heap[0][0]
        if len(best) >= top and best[0] >= rise:
            break  # no stretch left can hold a step that beats the top ones found
        _, a, b = heapq.heappop(heap)
        if b - a == 1:
            found[a] = rise
            heapq.heappush(best, rise)
            if len(best) > top:
                heapq.heappop(best)
            continue
        mid = (a + b) // 2
        if spent + cost[mid] > budget:
            left.append((a, b - 1, rise))
            continue
        at = score_at(mid)
        if at is None:
            left.append((a, b - 1, rise))
            break
        known[mid] = at
        spent += cost[mid]
        scored += 1
        push(a, mid)
        push(mid, b)
    for r, a, b in heap:
        if b - a == 1:
            found[a] = -r
        else:
            left.append((a, b - 1, -r))
    left.sort(key=lambda s: (-s[2], s[0]))
    return Rises(found, left, scored, every_prefix=False)
