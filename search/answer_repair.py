"""What the detector contract does with an answer that is almost right.

Measured with a 1.5B model (README, "The LLM proposer"): most unusable detectors are not
wrong ideas but wrong *places*. The model imports a helper that is already a global,
reads ``host_class`` off a step instead of its requests, asks a finding for ``.jwt``
when ``jwt`` is a value of its ``kind``. Two kinds of help, kept apart:

* :func:`predefined_imports` fixes what has one meaning (an import of something the
  sandbox already provides) before the answer runs, so it costs no repair turn;
* :func:`field_error_hint` and :func:`where_strings_occur` explain the rest in the
  repair turn's error: which object the code read, where the field it asked for lives,
  the answer's own lines that read it, where the strings it tests occur in train runs.

Nothing here sees ``val`` or ``test``: hints read the train views only.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Iterable, Sequence
from typing import Any

from monsearch.sandbox.helpers import HELPERS, MATH

__all__ = ["field_error_hint", "implicit_return", "predefined_imports", "where_strings_occur"]


# --------------------------------------------------------------------------- imports

#: Modules a small model imports out of habit, with the predefined global each call
#: becomes (``None``: the module itself is predefined).
_PREDEFINED: dict[str, dict[str, str] | None] = {
    "math": None,
    "re": {
        "search": "re_search",
        "findall": "re_findall",
        "sub": "re_sub",
        "split": "re_split",
    },
    "json": {"loads": "json_parse"},
}


def _from_import_names(module: str, names: Iterable[str]) -> dict[str, str] | None:
    """What each name of ``from module import names`` becomes in the code (None: a name
    the globals cannot stand for)."""
    out = {}
    for name in names:
        if module == "math" and name in MATH:
            out[name] = name if name in HELPERS else f"math.{name}"
        elif (calls := _PREDEFINED.get(module)) and name in calls:
            out[name] = calls[name]
        else:
            return None
    return out


def predefined_imports(code: str) -> tuple[str, str | None]:
    """``code`` with imports of what the sandbox already provides taken out, and a note
    of what changed (None: nothing).

    A small model writes ``import re`` and ``re.search(p, s)`` whatever the rules say
    (or ``import re_search``, or ``from math import sqrt``); the intent is exact, so the
    call becomes ``re_search(p, s)`` (``math.sqrt(x)``) rather than a repair turn the
    model often fails. Rewritten: ``import`` of a module in the table when every use of
    it is a call the table maps, ``import <helper>`` (the global already exists) and
    ``from re|json|math import <name>`` of a name the table maps. Anything else (``import
    os``, ``re.compile``, an ``as`` alias) leaves the code as it was, for the sandbox's
    rules to report. An import line becomes a blank line, so the line numbers of any
    later error are the answer's own.
    """
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code, None
    imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    nested = sum(isinstance(n, ast.Import | ast.ImportFrom) for n in ast.walk(tree))
    if not imports or nested != len(imports):
        return code, None
    modules: list[str] = []
    renames: dict[str, str] = {}
    dropped: list[str] = []
    plain: list[str] = []
    for node in imports:
        if any(a.asname for a in node.names):
            return code, None
        if isinstance(node, ast.ImportFrom | ast.Import) and _typing_only(node):
            if _uses_typing(tree, node):
                return code, None
            dropped.append(ast.get_source_segment(code, node) or "typing")
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level or node.module is None:
                return code, None
            mapped = _from_import_names(node.module, (a.name for a in node.names))
            if mapped is None:
                return code, None
            renames.update({k: v for k, v in mapped.items() if k != v})
            dropped.append(f"from {node.module} import {', '.join(a.name for a in node.names)}")
            continue
        for a in node.names:
            if a.name in _PREDEFINED:
                modules.append(a.name)
            elif a.name in HELPERS:
                pass  # ``import re_search``: the global is there already
            else:
                return code, None
            plain.append(a.name)
    lines = code.splitlines(keepends=True)
    for node in imports:
        for i in range(node.lineno - 1, (node.end_lineno or node.lineno)):
            lines[i] = "\n"
    text = "".join(lines)
    changed = []
    for module in modules:
        calls = _PREDEFINED[module]
        if calls is None:
            continue
        for attr, helper in calls.items():
            text, n = re.subn(rf"\b{module}\.{attr}\s*\(", f"{helper}(", text)
            if n:
                changed.append(f"{module}.{attr} -> {helper}")
        if re.search(rf"\b{module}\.\w", text):
            return code, None  # a use the table does not map: the rules say so
    for name, new in renames.items():
        # A bare call of the imported name (not an attribute of something else).
        text, n = re.subn(rf"(?<![\w.]){re.escape(name)}\b", new, text)
        if n:
            changed.append(f"{name} -> {new}")
    if plain:
        dropped.insert(0, "import " + ", ".join(plain))
    note = "; ".join(dropped) + " dropped"
    return text, note + (f" ({', '.join(changed)})" if changed else "")


def _typing_only(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.module == "typing" and not node.level
    return all(a.name == "typing" for a in node.names)


def _uses_typing(tree: ast.Module, node: ast.Import | ast.ImportFrom) -> bool:
    """Whether the code reads what a ``typing`` import brings (a ``*`` import: any
    annotation at all): only an unused one is dropped."""
    names = {a.asname or a.name for a in node.names}
    if "*" in names:
        return any(
            (isinstance(n, ast.arg) and n.annotation is not None)
            or (isinstance(n, ast.FunctionDef) and n.returns is not None)
            or isinstance(n, ast.AnnAssign)
            for n in ast.walk(tree)
        )
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(tree))


def _always_returns(body: list[ast.stmt]) -> bool:
    """Whether running ``body`` always ends in a ``return`` or ``raise`` (loops and
    ``try`` are taken as possibly falling through)."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, ast.Return | ast.Raise):
        return True
    if isinstance(last, ast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    if isinstance(last, ast.With):
        return _always_returns(last.body)
    return False


def implicit_return(code: str) -> tuple[str, str | None]:
    """``code`` with ``return 0`` added at the end of its detector when the function can
    end without a ``return`` (a note, or None when nothing changed).

    A small model writes ``if ...: return min(n, 5)`` and stops: the function then
    returns None on every quiet run, which the sandbox refuses as not a number. A
    detector returns 0 when the run shows nothing (the rules say so), so that is what
    the missing line means. The line goes after the function's last line: the line
    numbers of any later error stay the answer's own.
    """
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code, None
    fns = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("detect_")]
    if len(fns) != 1 or _always_returns(fns[0].body) or fns[0].end_lineno is None:
        return code, None
    fn = fns[0]
    indent = " " * fns[0].body[0].col_offset
    lines = code.splitlines(keepends=True)
    if lines[fn.end_lineno - 1] and not lines[fn.end_lineno - 1].endswith("\n"):
        lines[fn.end_lineno - 1] += "\n"
    lines.insert(fn.end_lineno, f"{indent}return 0\n")
    return "".join(lines), f"return 0 added at the end of {fn.name}"


# --------------------------------------------------------------------------- fields

#: The view's objects as a detector reaches them: (name in hints, the variable a
#: detector calls one, the loop that reaches it, path from the run: list keys, the last
#: one's items are the object).
_OBJECTS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("the run", "traj", "", ()),
    ("a step", "step", "for step in traj.steps:", ("steps",)),
    ("a request", "r", "for r in traj.requests:", ("requests",)),
    ("a finding", "f", "for f in traj.secrets:", ("secrets",)),
    ("a listener", "l", "for l in traj.listeners:", ("listeners",)),
    ("a written file", "w", "for w in traj.files_written:", ("files_written",)),
    ("a URL in a request's body", "u", "for u in r.body_urls:", ("requests", "body_urls")),
)
_VAR = {label: var for label, var, _loop, _path in _OBJECTS}
_LOOP = {label: loop for label, _var, loop, _path in _OBJECTS}
#: Runs read to learn the objects' fields and the values of their short string fields.
_SCHEMA_RUNS = 200
_NO_FIELD = re.compile(r"AttributeError: no field '(\w+)' \(fields: ([^)]*)\)")
_KEY_ERROR = re.compile(r"KeyError: '?([A-Za-z_]\w*)'?")


def _items(view: Any, path: tuple[str, ...]) -> Iterable[Any]:
    level = [view]
    for key in path:
        level = [x for obj in level for x in (obj.get(key) or ())]
    return level


def _schema(views: Sequence[Any]) -> dict[str, tuple[set[str], dict[str, set[str]]]]:
    """Per object: its fields, and the values each short enumerated string field takes
    (a request's method, a finding's kind...) in the first train runs."""
    out: dict[str, tuple[set[str], dict[str, set[str]]]] = {}
    for label, _var, _loop, path in _OBJECTS:
        fields: set[str] = set()
        values: dict[str, set[str]] = {}
        for view in views[:_SCHEMA_RUNS]:
            for obj in _items(view, path):
                if not isinstance(obj, dict):
                    continue
                for k, v in obj.items():
                    if not isinstance(k, str):
                        continue
                    fields.add(k)
                    if isinstance(v, str) and 0 < len(v) <= 24 and re.fullmatch(r"[\w.+-]+", v):
                        values.setdefault(k, set()).add(v)
        # A field with many values is free text (a host, a path), not an enumeration.
        out[label] = (fields, {k: v for k, v in values.items() if len(v) <= 12})
    return out


def _which_object(listed: set[str], schema: dict[str, tuple[set[str], dict]]) -> str | None:
    best, best_key = None, None
    for label, (fields, _values) in schema.items():
        if not fields or not listed <= fields:
            continue
        key = len(fields - listed)
        if best_key is None or key < best_key:
            best, best_key = label, key
    return best


def _owners(name: str, schema: dict[str, tuple[set[str], dict]], obj: str | None) -> list[str]:
    """The objects with field ``name`` other than ``obj``; a URL in a request's body
    only when no request has it (its fields echo the request's)."""
    owners = [label for label, (fields, _v) in schema.items() if name in fields and label != obj]
    if "a request" in owners:
        owners = [o for o in owners if o != "a URL in a request's body"]
    return owners


def _enum_owners(name: str, schema: dict[str, tuple[set[str], dict]]) -> list[tuple[str, str]]:
    """(object, field) pairs whose field takes the value ``name`` (case-insensitive)."""
    low = name.lower()
    return [
        (label, field)
        for label, (_f, values) in schema.items()
        for field, vals in values.items()
        if low in {v.lower() for v in vals}
    ]


def _lines_reading(
    fn: ast.FunctionDef | None, code: str, name: str, *, off_traj: bool = True
) -> str:
    """The answer's lines that read ``.name`` or ``['name']`` (at most two); with
    ``off_traj`` False, not ``traj.name`` (the error is about another object)."""
    if fn is None:
        return ""
    rows: list[int] = []
    for node in ast.walk(fn):
        hit = (isinstance(node, ast.Attribute) and node.attr == name) or (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Constant)
            and node.slice.value == name
        )
        on_traj = isinstance(getattr(node, "value", None), ast.Name) and node.value.id == "traj"  # type: ignore[attr-defined]
        if hit and (off_traj or not on_traj) and node.lineno not in rows:
            rows.append(node.lineno)
    src = code.splitlines()
    shown = [f"line {n}: `{src[n - 1].strip()}`" for n in sorted(rows)[:2] if 0 < n <= len(src)]
    return (" Your " + "; ".join(shown) + ".") if shown else ""


def field_error_hint(
    error: str, fn: ast.FunctionDef | None, code: str, views: Sequence[Any]
) -> str:
    """A sentence that says where the field an answer asked for really is, for a run on
    train that failed on a missing field (empty for any other error). ``fn`` is the
    answer's detector, ``code`` the answer's code (line numbers in its frame)."""
    m = _NO_FIELD.search(error)
    key = None if m else _KEY_ERROR.search(error)
    if m is None and key is None:
        return ""
    name = m.group(1) if m else key.group(1)  # type: ignore[union-attr]
    if key is not None and re.search(rf"PARAMS\s*\[\s*['\"]{re.escape(name)}['\"]", code):
        return (
            f" PARAMS has no key {name!r}: write the number into the function instead."
            + _lines_reading(fn, code, name)
        )
    schema = _schema(views)
    obj = _which_object({f.strip() for f in m.group(2).split(",")}, schema) if m else None
    where = _lines_reading(fn, code, name, off_traj=obj in (None, "the run"))
    head = (
        f" {obj[0].upper() + obj[1:]} has no field {name!r}"
        if obj
        else f" The object read there has no key {name!r}"
    )
    owners = _owners(name, schema, obj)
    enums = _enum_owners(name, schema)
    if not owners and not enums:
        # ``request_body``, ``step_command``: a field of another object, named with it.
        for part in (p for p in name.split("_") if len(p) > 2 and p != name):
            if owners := _owners(part, schema, obj):
                head += f" ({part!r} is a field, but not of it)"
                name = part
                break
    if owners:
        how = "; ".join(
            f"{label}'s: "
            + (f"`{_LOOP[label]}` then " if _LOOP[label] else "")
            + f"`{_VAR[label]}.{name}`"
            for label in owners[:2]
        )
        steps = (
            " (a step's own requests: `for r in step.requests:`)"
            if "a request" in owners[:2]
            else ""
        )
        return f"{head}; {name} is {how}{steps}.{where}"
    if enums:
        label, field = next(((lb, fd) for lb, fd in enums if lb == obj), enums[0])
        return (
            f"{head}: {name!r} is a value of {label}'s {field}, so test "
            f'`{_VAR[label]}.{field} == "{name}"`.{where}'
        )
    fields = sorted(schema[obj][0]) if obj else []
    close = difflib.get_close_matches(name, fields, n=2, cutoff=0.6)
    if close:
        return f"{head}: did you mean {' or '.join('.' + c for c in close)}?{where}"
    if obj:
        return f"{head}; its fields are: {', '.join(fields)}.{where}"
    return f"{head}.{where}"


# --------------------------------------------------------------------------- strings

#: Where :func:`where_strings_occur` looks: (field as the detector reads it, the view's
#: list and key), requests first (what small models most often test in the wrong place).
_STRING_FIELDS = (
    ("r.path", "requests", "path"),
    ("r.url", "requests", "url"),
    ("r.body", "requests", "body"),
    ("r.method", "requests", "method"),
    ("step.command", "steps", "command"),
    ("step.observation", "steps", "observation"),
    ("f.kind", "secrets", "kind"),
)
#: Runs searched for a detector's strings (the first ones of train: enough to say where
#: a string lives, cheap beside the run on train that found it fires on nothing).
_STRING_RUNS = 400


def where_strings_occur(fn: ast.FunctionDef, views: Sequence[Any], *, max_strings: int = 4) -> str:
    """For a detector that fired on nothing: where each string it tests occurs in train
    runs (as a regex when it compiles, else as text; case-insensitive), so the repair
    turn can move a test to the field that holds it, e.g. "'auth/login': in r.path of
    812 runs, in no r.body". Empty when the function tests no string."""
    strings: list[str] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if 3 <= len(text) <= 200 and text not in strings and not text.isspace():
                strings.append(text)
    if not strings:
        return ""
    parts = []
    for text in strings[:max_strings]:
        try:
            pattern = re.compile(text, re.IGNORECASE)
        except re.error:
            pattern = re.compile(re.escape(text), re.IGNORECASE)
        counts: dict[str, int] = {}
        for view in views[:_STRING_RUNS]:
            for label, kind, key in _STRING_FIELDS:
                if any(
                    isinstance(v := item.get(key), str) and pattern.search(v[:20_000])
                    for item in view.get(kind, ())
                ):
                    counts[label] = counts.get(label, 0) + 1
        if counts:
            found = ", ".join(
                f"in {k} of {n} runs" for k, n in sorted(counts.items(), key=lambda x: -x[1])
            )
            parts.append(f"{text!r}: {found}")
        else:
            parts.append(f"{text!r}: in no field of any run")
    n = min(len(views), _STRING_RUNS)
    return (
        ". Where the strings your code tests occur (first "
        + f"{n} train runs): "
        + "; ".join(parts)
    )
