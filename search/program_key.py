"""The normalised program hash: one key for every spelling of the same program.

The strategy hash (``lineage.source_hash``) is the sha256 of the exact text, so one
added newline or comment makes a new hash. The sealed-test ledger keys on this one
instead: the sha256 of the parsed program's syntax tree, so comments, blank lines,
docstrings, quoting, number spelling (``1.0`` / ``1.00``) and layout do not count.

The tree is serialised here, not with ``ast.dump``: its text changes between Python
versions (3.13 leaves empty fields out), which would change every key on an upgrade.
Empty and absent fields are left out whatever the version, as are the fields that
only carry spelling (a constant's ``u`` prefix, type comments).

What it cannot do: two programs that differ in any way the parser keeps (a renamed
variable, an unused assignment, a reordered sum) are two keys. Deciding that two
programs behave the same is undecidable; this key takes the changes that are
certainly not changes.
"""

from __future__ import annotations

import ast
import hashlib
import json
from typing import Any

VERSION = "program-ast/1"
_SPELLING = frozenset({"kind", "type_comment", "type_ignores"})
_DOC_HOLDERS = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _is_docstring(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _canon(value: Any) -> Any:
    if isinstance(value, ast.AST):
        fields = []
        for name, field in ast.iter_fields(value):
            if name in _SPELLING:
                continue
            if name == "body" and isinstance(value, _DOC_HOLDERS) and field and _is_docstring(field[0]):
                field = field[1:]
            out = _canon(field)
            if out is None or out == []:
                continue
            fields.append([name, out])
        return [type(value).__name__, fields]
    if isinstance(value, list):
        return [_canon(v) for v in value]
    if value is None:
        return None
    # Constants: their type and repr (True and 1, 1 and 1.0 stay apart).
    return [type(value).__name__, repr(value)]


def program_hash(source: str) -> str:
    """sha256 of the normalised program; of the raw text when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return hashlib.sha256(f"raw\n{source}".encode()).hexdigest()
    text = json.dumps([VERSION, _canon(tree)], separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
