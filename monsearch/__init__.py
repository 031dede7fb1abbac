"""monsearch: evolve cheap OPSEC monitors for offensive-security agent trajectories.

The library's functions (:mod:`monsearch.api`) are reached from here: ``monsearch.evolve``,
``monsearch.test``, ``monsearch.export``, ``monsearch.score`` (and ``monsearch.scoring``,
its streaming form), ``monsearch.load_corpus``.
They are imported on first use, so ``import monsearch`` stays cheap for the command line
and for the modules of the lower floors that import ``monsearch.errors``.
"""

from __future__ import annotations

import os
import sys
import types
from typing import Any

__version__ = "0.1.0"


def _reach_sibling_floors() -> None:
    """Imported from a clone's ``monsearch/`` folder, find the other floors beside it.

    pyproject's ``package-dir`` maps ``monsearch.search`` to the clone's ``search/``
    folder (and so on, floor by floor: docs/DESIGN.md). An install, editable or not,
    carries that mapping, but a clone's ``monsearch/`` folder, first on ``sys.path``
    when Python runs from the clone's root (``python -m monsearch``), does not: it
    would shadow the installed package and lose every floor but its own. So when, and
    only when, this file sits in a clone (a ``pyproject.toml`` and the ``search/``
    floor beside its folder), the clone's root is added to where the subpackages are
    looked for, and ``monsearch.search`` is ``<clone>/search`` as the mapping says.
    Installed into site-packages, nothing changes.
    """
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    clone = os.path.isfile(os.path.join(root, "pyproject.toml")) and os.path.isfile(
        os.path.join(root, "search", "__init__.py")
    )
    if clone and root not in __path__:
        __path__.append(root)


_reach_sibling_floors()

_API = (
    "evolve",
    "test",
    "export",
    "score",
    "scoring",
    "load_corpus",
    "EvolveResult",
    "SealedTestReport",
    "SealedCorpusFigures",
    "ExportedMonitor",
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
