"""Tables the generator keeps as data: TOML files beside the modules that read them
(package data, installed with the package)."""

from __future__ import annotations

import tomllib
from importlib.resources import files
from typing import Any


def load_table(package: str, name: str) -> dict[str, Any]:
    """The TOML file ``name`` of ``package``, parsed."""
    return tomllib.loads(files(package).joinpath(name).read_text(encoding="utf-8"))
