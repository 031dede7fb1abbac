"""MkDocs hooks of the documentation site (mkdocs.yml: ``hooks``).

1. The API reference reads the code statically (mkdocstrings' Python handler, griffe),
   which finds a package by its folders. monsearch installs several top-level folders
   under one namespace (pyproject.toml's ``[tool.setuptools.package-dir]``: ``search/`` is
   ``monsearch.search``), so the hook lays that namespace out as symbolic links in
   ``build/docs-api/`` and points the handler there. Nothing is imported: importing the
   package's modules would run code (``monsearch.__main__`` starts the CLI).
2. Docstrings are written with reStructuredText roles (``:func:`x```); in Markdown the
   role's name would be printed before the code, so it is dropped from the HTML.
"""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path

from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parent.parent
MIRROR = ROOT / "build" / "docs-api"
_ROLE = re.compile(r":(?:func|meth|class|mod|attr|data|exc|obj):(<code[^>]*>)~?")


def package_layout(root: Path = ROOT) -> dict[str, Path]:
    """Each package's folder, as pyproject.toml maps it (``monsearch.search`` -> ``search``)."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    dirs = config["tool"]["setuptools"]["package-dir"]
    return {name: root / folder for name, folder in dirs.items()}


def build_mirror(root: Path = ROOT, mirror: Path = MIRROR) -> Path:
    """``mirror/monsearch/...`` as the installed package looks, made of links into ``root``."""
    layout = package_layout(root)
    if mirror.exists():
        shutil.rmtree(mirror)
    top = mirror / "monsearch"
    top.mkdir(parents=True)
    for child in layout["monsearch"].iterdir():
        if child.name != "__pycache__":
            (top / child.name).symlink_to(child)
    for name, folder in sorted(layout.items()):
        parts = name.split(".")
        # Only the folders that do not sit where their name says (monsearch/api does).
        if len(parts) == 2 and folder != layout["monsearch"] / parts[1]:
            link = top / parts[1]
            if link.is_symlink() or link.exists():
                raise RuntimeError(f"{name}: both {folder} and {link} would hold it")
            link.symlink_to(folder)
    return mirror


@event_priority(100)  # before mkdocstrings creates its handler
def on_config(config, **_):
    mirror = build_mirror()
    python = config["plugins"]["mkdocstrings"].config["handlers"]["python"]
    python["paths"] = [str(mirror)]
    return config


def on_page_content(html: str, **_) -> str:
    return _ROLE.sub(r"\1", html)
