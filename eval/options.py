"""A run's evaluation options as ``config.json`` records them (``evaluation``).

The one reading of that record: the sealed test, the export and the run-integrity
check take the budget range, the fitness view, the context cells and the oracle caps
a run was scored with from :class:`EvaluationOptions`, never from the raw dict. It
lives on the eval floor so that the sealed test's own code may read it; the search
writes it (``search.config.EvaluationConfig`` is these options at a new run's defaults).

A key the record lacks reads as a run made before the key existed was scored (e.g. no
``fitness``: the split as it is, ``plain``). What is written back (:meth:`to_dict`) is
the record as found, byte for byte: an old run's export or integrity check does not
gain keys its run never recorded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any

from monsearch.errors import MonsearchError

from .metrics import B_HI, B_LO, N_BUDGETS
from .priors import CELL_KEYS, DEFAULT_CELL_KEYS, FITNESS_VIEWS, MASSES

ON_SMALL = ("warn", "refuse")
ORACLES = ("replay", "none")


class EvaluationOptionsError(MonsearchError):
    """A run's recorded evaluation options that cannot be read (a malformed value)."""


@dataclass(frozen=True)
class EvaluationOptions:
    """The options every evaluation of a run reuses (see the module doc)."""

    b_lo: float = B_LO
    b_hi: float = B_HI
    n_budgets: int = N_BUDGETS
    #: Mean oracle calls per benign trajectory a candidate may make (None: the run
    #: recorded none).
    rho: float | None = None
    #: Oracle calls per trajectory past which ``oracle()`` returns None (Q).
    per_traj_cap: int = 1
    on_small: str = "warn"
    #: ``replay`` answers ``oracle()`` from the split's stored judge verdicts.
    oracle: str = "replay"
    #: Bootstrap replicates for the selection's lower bound (5th percentile).
    n_boot: int = 200
    #: How many of the best candidates (by point fitness) the bootstrap ranks.
    select_top: int = 10
    #: ``invariant``: budget-AUC with every context cell (``cells``) reweighted to the
    #: same failure share, so the corpus's base rates cannot be learnt (eval/priors.py);
    #: ``plain``: the split as it is. Selection and tuning use the same weights.
    fitness: str = "plain"
    #: What a run's context cell is made of (trajectory attributes).
    cells: tuple[str, ...] = DEFAULT_CELL_KEYS
    #: How much each cell counts under the invariant fitness: ``minority`` (what its
    #: smaller class can carry; low variance) or ``kept`` (its share of the runs).
    cell_mass: str = "minority"
    #: The record as read (``from_dict``), written back verbatim; not an argument, so a
    #: ``dataclasses.replace`` of a read record writes its fields, not the stale record.
    _recorded: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def from_config(cls, config: dict[str, Any], where: str = "config.json") -> EvaluationOptions:
        """The record in a run's configuration (none at all: every default). Always an
        :class:`EvaluationOptions`: a missing key reads as an old run, not a new one."""
        return cls.from_dict(config.get("evaluation"), where)

    @classmethod
    def from_dict(cls, d: Any, where: str = "config.json") -> EvaluationOptions:
        """Read a recorded ``evaluation`` dict; :class:`EvaluationOptionsError` names the
        field of a value no evaluation could use. A null value reads as a missing key,
        and so do an empty ``cells`` or ``oracle`` (as the sealed test always read them)."""
        if d is None:
            d = {}
        if not isinstance(d, dict):
            raise EvaluationOptionsError(
                f"{where}: evaluation: expected an object, got {type(d).__name__}"
            )
        out: dict[str, Any] = {}
        for name, read in _READERS.items():
            value = d.get(name)
            if value is not None and (value or name not in _EMPTY_IS_MISSING):
                out[name] = read(value, f"{where}: evaluation.{name}")
        opts = EvaluationOptions(**out)
        if not 0 < opts.b_lo < opts.b_hi <= 1:
            raise EvaluationOptionsError(
                f"{where}: evaluation.b_lo, evaluation.b_hi: the budget range "
                f"[{opts.b_lo}, {opts.b_hi}] needs 0 < b_lo < b_hi <= 1"
            )
        object.__setattr__(opts, "_recorded", dict(d))
        return opts

    def to_dict(self) -> dict[str, Any]:
        """The record: as read, or (built in code) every option."""
        if self._recorded is not None:
            return dict(self._recorded)
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.init}
        out["cells"] = list(self.cells)
        return out

    def differs(self, other: EvaluationOptions) -> list[str]:
        """The keys whose recorded values differ (a key recorded on one side only
        differs too, unless null), compared as the lineage hashes them."""
        mine, theirs = self.to_dict(), other.to_dict()
        return sorted(k for k in set(mine) | set(theirs) if _text(mine.get(k)) != _text(theirs.get(k)))


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=True)


def _number(value: Any, where: str) -> float:
    # Kept as recorded (``rho = 0`` in a TOML file is an int): the export's caps show it so.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise EvaluationOptionsError(f"{where}: expected a number, got {value!r}")
    return value


def _whole(value: Any, where: str) -> int:
    # 41.0 is read as 41 (a TOML float); 1.5 names no count of anything.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise EvaluationOptionsError(f"{where}: expected a whole number, got {value!r}")
    return value


def _choice(allowed: tuple[str, ...]) -> Any:
    def read(value: Any, where: str) -> str:
        if value not in allowed:
            raise EvaluationOptionsError(
                f"{where}: expected one of {', '.join(allowed)}, got {value!r}"
            )
        return str(value)

    return read


def _budgets(value: Any, where: str) -> int:
    n = _whole(value, where)
    if n < 2:
        raise EvaluationOptionsError(f"{where}: at least 2 budgets, got {n}")
    return n


def _cells(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or any(k not in CELL_KEYS for k in value):
        raise EvaluationOptionsError(
            f"{where}: expected a list of {', '.join(CELL_KEYS)}, got {value!r}"
        )
    return tuple(value)


_EMPTY_IS_MISSING = ("cells", "oracle")

#: How each recorded key is read (the record's fields, in the order the search writes them).
_READERS: dict[str, Any] = {
    "b_lo": _number,
    "b_hi": _number,
    "n_budgets": _budgets,
    "rho": _number,
    "per_traj_cap": _whole,
    "on_small": _choice(ON_SMALL),
    "oracle": _choice(ORACLES),
    "n_boot": _whole,
    "select_top": _whole,
    "fitness": _choice(tuple(FITNESS_VIEWS)),
    "cells": _cells,
    "cell_mass": _choice(MASSES),
}
