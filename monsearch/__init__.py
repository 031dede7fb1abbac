"""monsearch: evolve cheap OPSEC monitors for offensive-security agent trajectories.

The library's functions (:mod:`monsearch.api`) are reached from here: ``monsearch.evolve``,
``monsearch.test``, ``monsearch.export``, ``monsearch.score`` (and ``monsearch.scoring``,
its streaming form), ``monsearch.load_corpus``.
They are imported on first use, so ``import monsearch`` stays cheap for the command line
and for the modules of the lower floors that import ``monsearch.errors``.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_API = (
    "evolve",
    "test",
    "export",
    "score",
    "scoring",
    "load_corpus",
    "EvolveResult",
    "TrajectoryScore",
)


def __getattr__(name: str) -> Any:
    if name in _API:
        from monsearch import api

        return getattr(api, name)
    raise AttributeError(f"module 'monsearch' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
