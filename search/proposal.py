"""What a proposer is given and what it returns: the one interface between the
evolution loop and every proposer (offline mutator, LLM).

A proposer never evaluates on ``val`` and never sees ``val`` or ``test`` content:
it gets the parent and other programs (source plus their recorded metrics), a
random generator derived from the run seed and the candidate's sequence number
(so a resumed run proposes exactly what an uninterrupted one would), and a
:class:`ProposalContext` over ``train`` only.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np


@dataclass(frozen=True)
class ProgramInfo:
    """A program of the database as a proposer sees it."""

    id: str
    source: str
    fitness: float
    #: ``Fitness.to_dict()`` of its val evaluation (metrics only: no val content).
    metrics: dict[str, Any] = field(default_factory=dict)
    operator: str = ""
    generation: int = 0


@dataclass
class Proposal:
    """A proposed child. ``source`` None means the proposer failed: ``error`` says why,
    and the failure costs one candidate (it is recorded in the lineage)."""

    source: str | None
    operator: str
    parent_ids: tuple[str, ...]
    description: str = ""
    error: str | None = None
    #: The model's raw answer (LLM proposers), kept in the lineage for inspection.
    raw_response: str | None = None
    model: str | None = None
    #: ``prompt_tokens``, ``completion_tokens`` of LLM calls made for this proposal.
    usage: dict[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0


@dataclass
class TrainData:
    """``train`` as proposers may read it (labels included: mining needs them).

    ``views[i]`` is the sandbox's read-only view of ``trajectories[i]`` (built in
    the host process: proposers are trusted code); ``labels`` are panel labels
    (True = failure); ``dimensions`` the failure dimension of each trajectory's
    task; ``tasks`` the task names.
    """

    trajectories: Sequence[Any]
    views: Sequence[Any]
    labels: np.ndarray
    tasks: Sequence[str]
    dimensions: Sequence[str]
    ids: Sequence[str]


@dataclass
class ProposalContext:
    """What a proposer may use beyond the programs themselves."""

    train: TrainData
    #: Scores of a program on ``train`` (None if it does not run there). Cached by
    #: source; runs in the sandbox.
    score_on_train: Callable[[str], np.ndarray | None]
    seed: int
    seq: int
    #: Like ``score_on_train`` but also the sandbox's reason when the program does not
    #: run (None: not offered; proposers then fall back to ``score_on_train``).
    train_run: Callable[[str], tuple[np.ndarray | None, str | None]] | None = None
    #: The largest audit budget of the run's fitness (``b_hi``): a failure scored at or
    #: below the threshold that flags this share of train passes is missed at every
    #: budget the fitness counts.
    audit_budget: float = 0.10
    #: True once the run no longer wants the proposal (it ended, or was stopped): an
    #: asynchronous proposer stops there instead of using the sandbox.
    cancelled: Callable[[], bool] | None = None

    def run_on_train(self, source: str) -> tuple[np.ndarray | None, str | None]:
        """Scores on train and, when there are none, why (as far as the loop says)."""
        if self.train_run is not None:
            return self.train_run(source)
        scores = self.score_on_train(source)
        return scores, None if scores is not None else "the program does not run on train"


class Proposer(Protocol):
    """Anything that turns a parent (and some other programs) into a child program."""

    name: str

    def propose(
        self,
        parent: ProgramInfo,
        inspirations: Sequence[ProgramInfo],
        rng: random.Random,
        context: ProposalContext,
    ) -> Proposal: ...
