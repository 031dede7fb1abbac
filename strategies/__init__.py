"""Seed monitor programs for the search, in the readable convention the offline
proposer edits (see :mod:`monsearch.strategies.convention`).

``SEEDS`` maps a seed's name to its program source: ``baseline`` (a few keyword
and secret detectors) and ``stronger`` (hand-written, uses the view well: the bar
the search must beat)."""

from monsearch.strategies.baseline import BASELINE
from monsearch.strategies.stronger import STRONGER

SEEDS: dict[str, str] = {"baseline": BASELINE, "stronger": STRONGER}

__all__ = ["BASELINE", "SEEDS", "STRONGER"]
