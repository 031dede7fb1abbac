"""The offline proposers: no network, no model.

:class:`OfflineProposer` edits programs of the convention with real operators
(:mod:`.operators`): add a detector mined from train, remove one, retune PARAMS,
change the combiner, change the oracle band, cross over detectors of two parents.
Programs outside the convention get generic constant perturbation.

:class:`PerturbProposer` only perturbs constants: the baseline the search must beat.

Both are deterministic: the same parent, inspirations, context and ``rng`` state
give the same proposal (every choice comes from ``rng`` over ordered candidates).

The loop may call :meth:`OfflineProposer.prepare` once with the run's ``TrainData``
so that mining (seconds; cached per ``TrainData``) happens before the first
proposal rather than inside it. Operators that fit a weight or place an oracle band
read the parent's train scores through ``context.score_on_train`` (cached by source).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from monsearch.sandbox.check import check_program
from monsearch.search import operators as ops
from monsearch.search.proposal import ProgramInfo, Proposal, ProposalContext
from monsearch.strategies.convention import Program, parse_program, render

#: Operator name -> weight of choosing it first (fixed: part of the run's behaviour).
OPERATOR_WEIGHTS: tuple[tuple[str, float], ...] = (
    ("add_mined", 0.45),
    ("remove_detector", 0.10),
    ("retune", 0.20),
    ("change_combiner", 0.04),
    ("change_band", 0.06),
    ("crossover", 0.15),
)


def _valid(source: str) -> bool:
    return check_program(source).ok


@lru_cache(maxsize=256)
def _parsed(source: str) -> Program | None:
    """``parse_program``, remembered: the same parents and inspirations come back
    proposal after proposal, and parsing one costs a good part of a proposal (a
    :class:`Program` is immutable, so sharing it is safe)."""
    return parse_program(source)


class OfflineProposer:
    """Edits programs with the operators of :mod:`.operators` (see the module doc)."""

    name = "offline"

    def __init__(
        self,
        weights: Sequence[tuple[str, float]] = OPERATOR_WEIGHTS,
        *,
        mining_options: dict[str, Any] | None = None,
    ) -> None:
        self.weights = tuple(weights)
        self.mining_options = dict(mining_options or {})

    def prepare(self, train: Any) -> None:
        """Mine ``train`` now (the result is cached for every later proposal)."""
        from monsearch.search.mining import mined_for

        mined_for(train, **self.mining_options)

    def _operator(
        self,
        name: str,
        program: Program,
        rng: random.Random,
        context: ProposalContext,
        other: tuple[str, Program] | None,
    ) -> ops.Result:
        if name == "add_mined":
            from monsearch.search.mining import mined_for

            mined = mined_for(context.train, **self.mining_options)
            return ops.op_add_mined(program, rng, context, mined=mined)
        if name == "remove_detector":
            return ops.op_remove_detector(program, rng, context)
        if name == "retune":
            return ops.op_retune(program, rng, context)
        if name == "change_combiner":
            return ops.op_change_combiner(program, rng, context)
        if name == "change_band":
            return ops.op_change_band(program, rng, context)
        if name == "crossover":
            return ops.op_crossover(
                program, rng, context, other=None if other is None else other[1]
            )
        raise ValueError(f"unknown operator {name!r}")

    def propose(
        self,
        parent: ProgramInfo,
        inspirations: Sequence[ProgramInfo],
        rng: random.Random,
        context: ProposalContext,
    ) -> Proposal:
        program = _parsed(parent.source)
        if program is None:
            return _perturb(parent, rng)
        others = []
        for info in inspirations:
            if info.id == parent.id:
                continue
            parsed = _parsed(info.source)
            if parsed is not None:
                others.append((info.id, parsed))
        other = others[rng.randrange(len(others))] if others else None
        names = [n for n, _ in self.weights]
        first = names[ops._weighted_index(rng, [w for _, w in self.weights])]
        # The chosen operator first, then the others in their fixed order as fallbacks.
        order = [first] + [n for n in names if n != first]
        errors = []
        for name in order:
            if name == "crossover" and other is None:
                continue
            try:
                result = self._operator(name, program, rng, context, other)
            except Exception as exc:  # an operator bug costs this try, not the run
                errors.append(f"{name}: {type(exc).__name__}: {exc}")
                continue
            if result is None:
                continue
            child, description = result
            source = render(child)
            if source == parent.source or not _valid(source):
                errors.append(f"{name}: produced an invalid or unchanged program")
                continue
            parents = (
                (parent.id,) if name != "crossover" or other is None else (parent.id, other[0])
            )
            return Proposal(source, name, parents, description)
        # Nothing structural applied: fall back to retuning constants.
        fallback = _perturb(parent, rng)
        if fallback.source is None and errors:
            fallback.error = "; ".join(errors)
        return fallback


class PerturbProposer:
    """Constant perturbation only (PARAMS jitter in the convention, numeric literals
    otherwise): the baseline the search must beat."""

    name = "perturb"

    def propose(
        self,
        parent: ProgramInfo,
        inspirations: Sequence[ProgramInfo],
        rng: random.Random,
        context: ProposalContext,
    ) -> Proposal:
        return _perturb(parent, rng)


def _perturb(
    parent: ProgramInfo, rng: random.Random, check: Callable[[str], bool] = _valid
) -> Proposal:
    program = _parsed(parent.source)
    if program is not None:
        for _ in range(8):
            result = ops.op_retune(program, rng)
            if result is None:
                continue
            source = render(result[0])
            if source != parent.source and check(source):
                return Proposal(source, "retune", (parent.id,), result[1])
    found = ops.perturb_constants(parent.source, rng, check=check)
    if found is None:
        return Proposal(
            None, "perturb_constants", (parent.id,), error="no numeric constant to perturb"
        )
    return Proposal(found[0], "perturb_constants", (parent.id,), found[1])
