"""Copy the sandbox's parsing and execution code into an exported plugin.

The exported core must build exactly the view the sandbox builds and run the
program exactly as the sandbox runs it, so it is not a re-implementation: the
modules listed in :data:`MODULES` are copied as they are at export time, with
only their import statements rewritten to point inside the plugin's ``_vendor``
package. Every other line is byte for byte the same, and so is the line count
(a traceback in the plugin names the same line as in monsearch);
:func:`check_vendored` is the test of that.

The rewritten imports are relative, so they form the import block's last section
(isort's local folder): :func:`rewrite` re-sorts that section the way ruff's isort
does, so the plugin lints clean like the code it came from. Where a section
disappears (``import orjson`` was the only third-party import and now joins the
local section), a comment naming the stand-in takes the freed line.

Two third-party imports have stand-ins in the plugin: ``orjson`` (stdlib
``json`` with orjson's refusals) and ``re2`` (the real google-re2 when it is
installed, else stdlib ``re`` after translating RE2 syntax; see ``_re2.py``).
"""

from __future__ import annotations

import ast
import re
from importlib import resources
from pathlib import Path
from typing import Any

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
    ("monsearch.corpora.readers.tree", "tree"),
    ("monsearch.corpora.readers.stealthbench", "stealthbench"),
    ("monsearch.corpora.readers.atif", "atif"),
    ("monsearch.views.frozen", "frozen"),
    ("monsearch.views.secrets", "secrets"),
    ("monsearch.views.expansions", "expansions"),
    ("monsearch.views.command", "command"),
    ("monsearch.views.shell_words", "shell_words"),
    ("monsearch.views.shell_parse", "shell_parse"),
    ("monsearch.views.shell_builtins", "shell_builtins"),
    ("monsearch.views.shell_interp", "shell_interp"),
    ("monsearch.views.shell", "shell"),
    ("monsearch.views.request", "request"),
    ("monsearch.views.http_curl", "http_curl"),
    ("monsearch.views.http_clients", "http_clients"),
    ("monsearch.views.python_values", "python_values"),
    ("monsearch.views.python_parse", "python_parse"),
    ("monsearch.views.python_builtins", "python_builtins"),
    ("monsearch.views.python_statements", "python_statements"),
    ("monsearch.views.python_expressions", "python_expressions"),
    ("monsearch.views.python_calls", "python_calls"),
    ("monsearch.views.python_sending", "python_sending"),
    ("monsearch.views.python_reader", "python_reader"),
    ("monsearch.views.http_extract", "http_extract"),
    ("monsearch.views.infra", "infra"),
    ("monsearch.views.ids", "view_ids"),
    ("monsearch.views.run_context", "run_context"),
    ("monsearch.views.request_proto", "request_proto"),
    ("monsearch.views.build", "view"),
    ("monsearch.sandbox.helpers", "helpers"),
    ("monsearch.sandbox.restricted", "restricted"),
)

#: Stand-ins for third-party modules the vendored code imports.
SHIMS = {"orjson": "_orjson", "re2": "_re2"}

_LOCAL = {mod: name for mod, name in MODULES}
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
        # ``from monsearch.views import secrets as sec``: the names are modules.
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
    """``text`` with its monsearch and shimmed imports pointed inside ``_vendor`` (and its
    import blocks re-sorted: :func:`sort_import_blocks`)."""
    return sort_import_blocks(_rewrite_lines(text, where), where)


def _rewrite_lines(text: str, where: str) -> str:
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


def _import_blocks(tree: ast.AST) -> list[list[ast.stmt]]:
    """Runs of consecutive import statements in every statement list of ``tree`` (the
    blocks isort sorts as one: the module's, and any inside a function)."""
    blocks: list[list[ast.stmt]] = []
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if not isinstance(stmts, list):
                continue
            run: list[ast.stmt] = []
            for stmt in [*stmts, None]:
                if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    run.append(stmt)
                    continue
                if run:
                    blocks.append(run)
                run = []
    return blocks


def _natural(text: str) -> tuple[Any, ...]:
    # isort's natural order: digit runs compare as numbers.
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text))


def _member_key(name: str) -> tuple[Any, ...]:
    # order-by-type: CONSTANTS, then Classes, then other names.
    kind = 0 if len(name) > 1 and name.isupper() else 1 if name[:1].isupper() else 2
    return (kind, _natural(name.lower()), name)


def _local_key(stmt: ast.ImportFrom) -> tuple[Any, ...]:
    """ruff's isort order of relative imports: furthest first, ``from . import x`` before
    ``from .a import y``, then by module (case-insensitive, natural), then first name."""
    module = stmt.module or ""
    return (
        -stmt.level,
        stmt.module is not None,
        _natural(module.lower()),
        module,
        _member_key(stmt.names[0].name),
    )


def _shim_of(stmt: ast.stmt) -> str | None:
    """The third-party module a rewritten ``from . import _orjson as orjson`` stands in for."""
    if isinstance(stmt, ast.ImportFrom) and stmt.level == 1 and stmt.module is None:
        for real, shim in SHIMS.items():
            if stmt.names[0].name == shim:
                return real
    return None


#: One import statement of a block and its lines (any comment lines above it first).
_Chunk = tuple[ast.stmt, list[str]]


def _is_relative(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.ImportFrom) and stmt.level > 0


def _sections(block: list[ast.stmt], lines: list[str]) -> list[list[_Chunk]]:
    """A block's statements in its sections (the runs between blank lines)."""
    sections: list[list[_Chunk]] = [[]]
    previous_end = block[0].lineno - 1
    for stmt in block:
        between = lines[previous_end : stmt.lineno - 1]
        if sections[-1] and any(not line.strip() for line in between):
            sections.append([])
        # Comment lines after the last blank line belong to the statement below them.
        comments: list[str] = []
        for line in between:
            comments = [*comments, line] if line.strip() else []
        end = stmt.end_lineno or stmt.lineno
        sections[-1].append((stmt, comments + lines[stmt.lineno - 1 : end]))
        previous_end = end
    return sections


def _relayout(sections: list[list[_Chunk]], length: int, indent: str) -> list[str] | None:
    """The block's lines with its relative imports sorted into a last section, in
    ``length`` lines (None if that cannot be done)."""
    local = sorted(
        (c for section in sections for c in section if _is_relative(c[0])),
        key=lambda c: _local_key(c[0]),  # type: ignore[arg-type]
    )
    kept = [[c for c in section if not _is_relative(c[0])] for section in sections]
    kept = [section for section in kept if section]
    freed = length - sum(len(c[1]) for c in local) - sum(len(c[1]) for s in kept for c in s)
    freed -= len(kept)  # one blank line before each section after the first
    for i, (stmt, chunk) in enumerate(local):
        real = _shim_of(stmt)
        if freed > 0 and real is not None:
            note = f"{indent}# {real}: the plugin's stand-in (_vendor/{SHIMS[real]}.py)"
            local[i] = (stmt, [note, *chunk])
            freed -= 1
    if freed != 0:
        return None
    out: list[str] = []
    for section in [*kept, local]:
        if out:
            out.append("")
        out.extend(line for _, chunk in section for line in chunk)
    return out


def sort_import_blocks(text: str, where: str = "<module>") -> str:
    """``text`` with the relative imports of each import block gathered into the block's
    last section and sorted as ruff's isort sorts them; the block keeps its line count.

    Only blocks holding a relative import change. A section emptied by the move (the
    shimmed third-party import was its only one) frees a line: a comment naming the
    stand-in takes it, above the shim's import."""
    lines = text.split("\n")
    edits: list[tuple[int, int, list[str]]] = []
    for block in _import_blocks(ast.parse(text)):
        if not any(_is_relative(stmt) for stmt in block):
            continue
        start, end = block[0].lineno, block[-1].end_lineno or block[-1].lineno
        indent = lines[start - 1][: len(lines[start - 1]) - len(lines[start - 1].lstrip())]
        out = _relayout(_sections(block, lines), end - start + 1, indent)
        if out is None:
            raise VendorError(f"{where}: sorting the imports at line {start} changes its length")
        edits.append((start, end, out))
    for start, end, out in sorted(edits, reverse=True):
        lines[start - 1 : end] = out
    return "\n".join(lines)


def _import_lines(text: str) -> set[int]:
    """1-based numbers of the lines of ``text``'s import blocks (statements, and the blank
    and comment lines between them)."""
    return {
        n
        for block in _import_blocks(ast.parse(text))
        for n in range(block[0].lineno, (block[-1].end_lineno or block[-1].lineno) + 1)
    }


def check_vendored(original: str, vendored: str) -> list[int]:
    """1-based line numbers where ``vendored`` differs from ``original`` other than inside
    an import block of both (empty: the copy is the same code). Line counts must match."""
    a, b = original.split("\n"), vendored.split("\n")
    if len(a) != len(b):
        return [0]
    imports = _import_lines(original) & _import_lines(vendored)
    return [i for i, (x, y) in enumerate(zip(a, b, strict=True), 1) if x != y and i not in imports]


def monsearch_version() -> str:
    return monsearch.__version__
