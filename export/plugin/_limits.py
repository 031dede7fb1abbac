"""How the frozen program runs: in a worker process under a time budget and a memory cap
(the default), or in the host's own process with no limit at all.

The program was written by a language model or a mutator, and the trajectories it reads
were written by the agent it monitors: an input can be crafted to make it loop or
allocate without end. The defaults stop both, as monsearch's sandbox did when the run
measured the program (whose per-trajectory budget there was 0.5 s, its memory 1 GB).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

ISOLATIONS = ("process", "none")


@dataclass(frozen=True)
class Limits:
    """``timeout_s``: wall seconds one call may spend on one trajectory (reading it,
    building its view, running the program: for :func:`~.core.findings` and
    :func:`~.core.score_steps` all their runs together); waiting for the host's judge
    does not count. ``memory_mb``: how much the worker process may grow. ``isolation``:
    ``"process"`` (a worker process, the limits enforced) or ``"none"`` (the program runs
    in this process, and neither limit applies: only for a program you have read)."""

    timeout_s: float = 2.0
    memory_mb: int = 1024
    isolation: str = "process"

    def __post_init__(self) -> None:
        t = self.timeout_s
        if type(t) not in (int, float) or not math.isfinite(t) or t <= 0:
            raise ValueError(f"timeout_s must be a positive number of seconds, got {t!r}")
        if type(self.memory_mb) is not int or self.memory_mb < 16:
            raise ValueError(f"memory_mb must be a whole number >= 16, got {self.memory_mb!r}")
        if self.isolation not in ISOLATIONS:
            raise ValueError(
                f"isolation must be one of {', '.join(ISOLATIONS)}, got {self.isolation!r}"
            )
