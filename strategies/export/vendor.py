"""Copy the sandbox's parsing and execution code into an exported plugin.

The exported core must build exactly the view the sandbox builds and run the
program exactly as the sandbox runs it, so it is not a re-implementation: the
modules listed in :data:`MODULES` are copied as they are at export time, with
only their import statements rewritten to point inside the plugin's ``_vendor``
package. Every other line is byte for byte the same (the line count too, so a
traceback in the plugin names the same line as in monsearch);
:func:`check_vendored` is the test of that.

Two third-party imports have stand-ins in the plugin: ``orjson`` (stdlib
``json`` with orjson's refusals) and ``re2`` (the real google-re2 when it is
installed, else stdlib ``re`` after translating RE2 syntax; see ``_re2.py``).
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import monsearch

#: (source module, file name inside the plugin's ``_vendor`` package).
MODULES: tuple[tuple[str, str], ...] = (
    ("monsearch.errors", "base_errors"),
    ("monsearch.corpora.errors", "errors"),
    ("monsearch.corpora.model", "model"),
    ("monsearch.corpora.codec", "codec"),
    ("monsearch.corpora.readers.jsonio", "jsonio"),
    ("monsearch.corpora.readers.stepinput", "stepinput"),
    ("monsearch.corpora.readers.verdicts", "verdicts"),
    ("monsearch.corpora.readers.report", "report"),
    ("monsearch.corpora.readers.stealthbench", "stealthbench"),
    ("monsearch.corpora.readers.atif", "atif"),
    ("monsearch.sandbox.frozen", "frozen"),
    ("monsearch.sandbox.secrets", "secrets"),
    ("monsearch.sandbox.shell", "shell"),
    ("monsearch.sandbox.http_extract", "http_extract"),
    ("monsearch.sandbox.http_python", "http_python"),
    ("monsearch.sandbox.infra", "infra"),
    ("monsearch.sandbox.view_ids", "view_ids"),
    ("monsearch.sandbox.view", "view"),
    ("monsearch.sandbox.helpers", "helpers"),
    ("monsearch.sandbox.restricted", "restricted"),
)

#: Stand-ins for third-party modules the vendored code imports.
SHIMS = {"orjson": "_orjson", "re2": "_re2"}

_LOCAL = {mod: name for mod, name in MODULES}
_IMPORT_LINE = re.compile(r"^\s*(?:from\s+\S+\s+import\b|import\s+\S)")
_FROM = re.compile(r"^(?P<indent>\s*)from\s+(?P<mod>[\w.]+)\s+import\s+(?P<rest>.*)$")
_IMPORT = re.compile(r"^(?P<indent>\s*)import\s+(?P<mod>[\w.]+)(?P<rest>(?:\s+as\s+\w+)?\s*)$")


class VendorError(Exception):
    """A module imports something the plugin cannot provide."""


def source_path(module: str) -> Path:
    """The file of a monsearch module (the namespace maps folders, so ask the importer)."""
    package, _, name = module.rpartition(".")
    files = resources.files(package)
    return Path(str(files.joinpath(name + ".py")))


def _rewrite_from(mod: str, rest: str, where: str) -> str:
    if mod in _LOCAL:
        return f"from .{_LOCAL[mod]} import {rest}"
    if mod.startswith("monsearch"):
        # ``from monsearch.sandbox import secrets as sec``: the names are modules.
        names = [n.strip() for n in rest.split(",")]
        for n in names:
            sub = n.split(" as ")[0].strip()
            if f"{mod}.{sub}" not in _LOCAL:
                raise VendorError(f"{where}: imports {mod}.{sub}, which is not vendored")
        parts = []
        for n in names:
            sub, _, alias = (x.strip() for x in n.partition(" as "))
            local = _LOCAL[f"{mod}.{sub}"]
            parts.append(f"{local} as {alias or sub}" if (alias or sub) != local else local)
        return f"from . import {', '.join(parts)}"
    if mod.split(".")[0] in SHIMS:
        raise VendorError(f"{where}: 'from {mod} import' of a shimmed module is not supported")
    return f"from {mod} import {rest}"


def rewrite(text: str, where: str = "<module>") -> str:
    """``text`` with its monsearch and shimmed imports pointed inside ``_vendor``."""
    out: list[str] = []
    for line in text.split("\n"):
        m = _FROM.match(line)
        if m and (m["mod"].startswith("monsearch") or m["mod"].split(".")[0] in SHIMS):
            line = m["indent"] + _rewrite_from(m["mod"], m["rest"], where)
        else:
            m = _IMPORT.match(line)
            if m and m["mod"] in SHIMS:
                alias = m["rest"].strip()
                line = f"{m['indent']}from . import {SHIMS[m['mod']]} {alias or 'as ' + m['mod']}"
            elif m and m["mod"].startswith("monsearch"):
                raise VendorError(f"{where}: 'import {m['mod']}' cannot be vendored")
        out.append(line)
    return "\n".join(out)


def vendored_sources() -> dict[str, str]:
    """``{file name: rewritten source}`` for every module in :data:`MODULES`."""
    return {
        f"{name}.py": rewrite(source_path(mod).read_text(encoding="utf-8"), mod)
        for mod, name in MODULES
    }


def check_vendored(original: str, vendored: str) -> list[int]:
    """1-based line numbers where ``vendored`` differs from ``original`` other than in an
    import statement (empty: the copy is the same code). Line counts must match."""
    a, b = original.split("\n"), vendored.split("\n")
    if len(a) != len(b):
        return [0]
    bad = []
    for i, (x, y) in enumerate(zip(a, b, strict=True), 1):
        if x != y and not (_IMPORT_LINE.match(x) and _IMPORT_LINE.match(y)):
            bad.append(i)
    return bad


def monsearch_version() -> str:
    return monsearch.__version__
