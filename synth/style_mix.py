"""Unlabelled synthetic runs that mix every task, its modes and every client style.

For measuring and checking the view build on many command and output shapes
(``bench/view_speed.py``, the fast-path tests); the labelled corpus is built by
:mod:`monsearch.synth.generate`.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime

from monsearch.corpora.model import Trajectory
from monsearch.synth.scenario import REGISTRY
from monsearch.synth.style import STYLES


def style_mix(n: int, seed: int, *, name: str = "mix") -> list[Trajectory]:
    """``n`` runs, tasks in turn, a mode and a style drawn for each (same seed, same runs);
    ids are ``{name}-{k}`` and the generator is ``name``."""
    rng = random.Random(seed)
    tasks = sorted(REGISTRY)
    styles = sorted(STYLES)
    start = datetime(2026, 8, 1, tzinfo=UTC)
    out: list[Trajectory] = []
    for k in range(n):
        task = tasks[k % len(tasks)]
        scenario = REGISTRY[task]
        mode = scenario.modes[rng.randrange(len(scenario.modes))]
        style = STYLES[styles[rng.randrange(len(styles))]]
        ep = scenario.build(mode.name, style, random.Random(rng.getrandbits(64)), start)
        out.append(scenario.trajectory(ep, f"{name}-{k}", name))
    return out
