"""monsearch: evolve cheap OPSEC monitors for offensive-security agent trajectories.

The library's functions (:mod:`monsearch.api`) are reached from here: ``monsearch.evolve``,
``monsearch.test``, ``monsearch.export``, ``monsearch.score`` (and ``monsearch.scoring``,
its streaming form), ``monsearch.load_corpus``.
They are imported on first use, so ``import monsearch`` stays cheap for the command line
and for the modules of the lower floors that import ``monsearch.errors``.
"""

from __future__ import annotations

import sys
import types
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


class _Package(types.ModuleType):
    """``monsearch.export`` is the library's function and also the name of the plugin
    writer's package: importing that package (``from monsearch.export import ...``) would
    bind the module over the name, and the next ``monsearch.export(...)`` would fail with
    "'module' object is not callable". The API's names keep meaning the API; the
    packages stay importable by their full names."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _API and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
