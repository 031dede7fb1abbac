"""Compile monitor programs with RestrictedPython and build their hardened globals.

A monitor program is Python source that defines ``score(traj) -> float`` and may
define helper functions, module-level constants and a ``PARAMS`` dict of numbers
(numeric constants a tuner may override; see :func:`extract_params`).

Language rules on top of RestrictedPython 9.0 (its transformer already rejects
names/attributes starting with ``_``, frame/generator/traceback attributes,
``exec``/``eval`` spelled as calls, ``async``, ``nonlocal``, ``try/except*``, ``match``):

- no ``import``, no classes, no ``yield`` (no generator functions; generator
  *expressions* stay allowed: their objects expose no attributes to the program, and
  the child process that ran them dies after the candidate);
- a bare ``except:`` is read as ``except Exception:`` so that the sandbox's own
  interrupts (``BaseException``) cannot be swallowed;
- no ``return``/``break``/``continue`` inside ``finally`` (they discard an exception);
- ``x[k] += v`` is allowed (routed through the item and write guards).

Runtime walls (the guards below): attribute reads only on an allowlist of exact
types (plain data, the view containers, exception ``.args``), never ``format`` /
``format_map``; item reads only on plain sequences/mappings and view containers;
writes only into the program's own ``dict``/``list`` objects; a small builtins
whitelist (no ``type``, ``object``, ``vars``, ``globals``, ``open``, ``hash``, ``id``,
``exec``, ``eval``, ``compile``, ``format``, ``__import__``, ``exit``...); a guarded
``getattr``/``hasattr`` that re-checks names given as strings; a bounded ``print``.
"""

from __future__ import annotations

import ast
import builtins as _builtins
import dis
import functools
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import CodeType, FunctionType
from typing import Any

from RestrictedPython import compile_restricted_exec, safe_builtins
from RestrictedPython.transformer import (
    INSPECT_ATTRIBUTES,
    IOPERATOR_TO_STR,
    RestrictingNodeTransformer,
    copy_locations,
)

from monsearch.errors import MonsearchError
from monsearch.views.frozen import VIEW_TYPES, FrozenDict

#: The filename programs are compiled under; tracebacks are matched against it.
FILENAME = "<monitor>"
DEFAULT_MAX_SOURCE_BYTES = 64 * 1024
PARAMS_NAME = "PARAMS"
#: The range a tunable PARAMS value must lie in: 0, or a magnitude within
#: [PARAM_MIN, PARAM_MAX]. The tuner searches a factor of 4 either side of a value (log
#: scale), which must stay finite, non-zero and normal; no monitor's weight or threshold
#: needs more than twelve orders of magnitude either way.
PARAM_MAX = 1e12
PARAM_MIN = 1e-12


# --------------------------------------------------------------------------- compile


@dataclass(frozen=True, slots=True)
class CompileIssue:
    """One compile error: 1-based line and column when known."""

    message: str
    line: int | None = None
    col: int | None = None

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line is not None else "program"
        if self.col is not None:
            where += f", col {self.col}"
        return f"{where}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"message": self.message, "line": self.line, "col": self.col}


@dataclass(frozen=True, slots=True)
class CompileReport:
    """Outcome of compiling a program; ``code`` is set only when ``ok``."""

    ok: bool
    errors: tuple[CompileIssue, ...] = ()
    params: dict[str, float] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    code: CodeType | None = field(default=None, repr=False, compare=False)

    @property
    def message(self) -> str:
        return "; ".join(str(e) for e in self.errors)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "errors": [e.to_dict() for e in self.errors],
            "params": dict(self.params),
            "warnings": list(self.warnings),
        }


class ProgramError(MonsearchError):
    """A program cannot be compiled or its PARAMS cannot be applied."""

    def __init__(self, message: str, issues: tuple[CompileIssue, ...] = ()) -> None:
        super().__init__(message)
        self.issues = issues


class _Issue(str):
    """A RestrictedPython error string that also carries line and column."""

    issue: CompileIssue

    def __new__(cls, text: str, issue: CompileIssue) -> _Issue:
        obj = super().__new__(cls, text)
        obj.issue = issue
        return obj


class MonitorPolicy(RestrictingNodeTransformer):
    """RestrictedPython's transformer with monsearch's extra rules (module docstring)."""

    def error(self, node: ast.AST, info: str) -> None:
        line = getattr(node, "lineno", None)
        col = getattr(node, "col_offset", None)
        issue = CompileIssue(info, line, None if col is None else col + 1)
        self.errors.append(_Issue(f"Line {line}: {info}", issue))

    def visit_Import(self, node: ast.Import) -> Any:
        self.error(node, "imports are not allowed: helpers and `math` are predefined globals")
        return node

    def visit_ImportFrom(self, node: ast.ImportFrom) -> Any:
        self.error(node, "imports are not allowed: helpers and `math` are predefined globals")
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> Any:
        self.error(node, "classes are not allowed: use functions, dicts and tuples")
        return node

    def visit_Yield(self, node: ast.Yield) -> Any:
        self.error(node, "`yield` is not allowed (no generator functions); return a list instead")
        return node

    def visit_YieldFrom(self, node: ast.YieldFrom) -> Any:
        self.error(node, "`yield from` is not allowed (no generator functions)")
        return node

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> Any:
        if node.type is None:
            # The sandbox interrupts a slow score() with a BaseException; a bare
            # except must not be able to swallow it.
            node.type = ast.Name("Exception", ast.Load())
            copy_locations(node.type, node)
        return super().visit_ExceptHandler(node)

    def visit_Try(self, node: ast.Try) -> Any:
        for stmt in node.finalbody:
            self._check_finally(stmt, in_loop=False)
        return super().visit_Try(node)

    def _check_finally(self, node: ast.AST, *, in_loop: bool) -> None:
        if isinstance(node, ast.Return):
            self.error(node, "`return` inside `finally` is not allowed (it discards exceptions)")
        elif isinstance(node, ast.Break | ast.Continue) and not in_loop:
            self.error(
                node, "`break`/`continue` inside `finally` is not allowed (it discards exceptions)"
            )
        if isinstance(node, ast.FunctionDef | ast.Lambda | ast.AsyncFunctionDef):
            return
        loop = in_loop or isinstance(node, ast.For | ast.While)
        for child in ast.iter_child_nodes(node):
            self._check_finally(child, in_loop=loop)

    def visit_AugAssign(self, node: ast.AugAssign) -> Any:
        target = node.target
        if isinstance(target, ast.Name):
            # Plain names: the native in-place operator. Views are immutable, so an
            # in-place op on a view value yields a new object (or a TypeError).
            return self.node_contents_visit(node)
        if isinstance(target, ast.Attribute):
            self.error(node, "augmented assignment of attributes is not allowed")
            return node
        if not isinstance(target, ast.Subscript):  # pragma: no cover - grammar
            self.not_allowed(node)
            return node
        # x[k] op= v  ->  t = _write_(x); i = k; t[i] = _inplacevar_(op, _getitem_(t, i), v)
        node = self.node_contents_visit(node)
        sub = node.target
        assert isinstance(sub, ast.Subscript)
        holder, index = self.gen_tmp_name(), self.gen_tmp_name()
        key = sub.slice
        if isinstance(key, ast.Slice):
            none = ast.Constant(None)
            key = ast.Call(
                func=ast.Name("slice", ast.Load()),
                args=[key.lower or none, key.upper or none, key.step or none],
                keywords=[],
            )
        first = ast.Assign(targets=[ast.Name(holder, ast.Store())], value=sub.value)  # _write_(x)
        second = ast.Assign(targets=[ast.Name(index, ast.Store())], value=key)
        current = ast.Call(
            func=ast.Name("_getitem_", ast.Load()),
            args=[ast.Name(holder, ast.Load()), ast.Name(index, ast.Load())],
            keywords=[],
        )
        combined = ast.Call(
            func=ast.Name("_inplacevar_", ast.Load()),
            args=[ast.Constant(IOPERATOR_TO_STR[type(node.op)]), current, node.value],
            keywords=[],
        )
        third = ast.Assign(
            targets=[
                ast.Subscript(
                    ast.Name(holder, ast.Load()), ast.Name(index, ast.Load()), ast.Store()
                )
            ],
            value=combined,
        )
        out = [first, second, third]
        for stmt in out:
            copy_locations(stmt, node)
            ast.fix_missing_locations(stmt)
        return out


def _parse(source: str) -> tuple[ast.Module | None, tuple[CompileIssue, ...]]:
    try:
        return ast.parse(source, FILENAME, "exec"), ()
    except SyntaxError as exc:
        return None, (CompileIssue(f"{type(exc).__name__}: {exc.msg}", exc.lineno, exc.offset),)
    except (RecursionError, MemoryError):
        return None, (CompileIssue("program is nested too deeply to compile"),)
    except (ValueError, TypeError) as exc:  # e.g. NUL bytes in the source
        return None, (CompileIssue(f"invalid source: {exc}"),)


def compile_program(
    source: str,
    params: Mapping[str, float] | None = None,
    *,
    max_source_bytes: int = DEFAULT_MAX_SOURCE_BYTES,
) -> CompileReport:
    """Compile ``source`` under the monitor policy, with optional PARAMS overrides.

    Never raises for a bad program: problems come back as ``errors`` with line and
    column. ``params`` overrides entries of the program's literal ``PARAMS`` dict
    (unknown names are errors).
    """
    if not isinstance(source, str):
        return CompileReport(False, (CompileIssue("program source must be text"),))
    size = len(source.encode("utf-8", "surrogatepass"))
    if size > max_source_bytes:
        return CompileReport(
            False, (CompileIssue(f"program is {size} bytes; the limit is {max_source_bytes}"),)
        )
    tree, issues = _parse(source)
    if tree is None:
        return CompileReport(False, issues)
    try:
        found = _params_nodes(tree)
        if params:
            _apply_params(found, params)
        values = {k: v for k, (v, _d, _i) in found.items()}
        if params:
            values.update({k: float(v) for k, v in params.items()})
    except ProgramError as exc:
        return CompileReport(False, exc.issues or (CompileIssue(str(exc)),))
    try:
        result = compile_restricted_exec(tree, FILENAME, policy=MonitorPolicy)
    except (RecursionError, MemoryError):
        return CompileReport(
            False, (CompileIssue("program is nested too deeply to compile"),), values
        )
    except Exception as exc:  # the transformer is recursive Python: fail closed
        return CompileReport(
            False, (CompileIssue(f"cannot compile program: {type(exc).__name__}"),), values
        )
    if result.errors or result.code is None:
        errs = tuple(
            e.issue if isinstance(e, _Issue) else CompileIssue(str(e)) for e in result.errors
        ) or (CompileIssue("cannot compile program"),)
        return CompileReport(False, errs, values, tuple(result.warnings))
    return CompileReport(True, (), values, tuple(result.warnings), result.code)


# --------------------------------------------------------------------------- PARAMS


def _number(node: ast.AST) -> float | int | None:
    """The numeric value of a literal (``3``, ``-0.5``), else None. Booleans are not numbers."""
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        sign = -1 if isinstance(node.op, ast.USub) else 1
        node = node.operand
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        value = node.value
        if isinstance(value, float) and not math.isfinite(value):
            return None
        return sign * value
    return None


def tunable(value: Any) -> bool:
    """Whether ``value`` is a PARAMS number a tuner can search around: an int or float
    (not a boolean), finite, and 0 or of magnitude within [PARAM_MIN, PARAM_MAX]."""
    if type(value) not in (int, float):
        return False
    try:
        magnitude = abs(float(value))
    except OverflowError:  # an int beyond float range
        return False
    return magnitude == 0.0 or PARAM_MIN <= magnitude <= PARAM_MAX


def range_text() -> str:
    """The tunable range, as error messages state it."""
    return f"0 or a magnitude from {PARAM_MIN:g} to {PARAM_MAX:g}"


_ParamNodes = dict[str, tuple[float, ast.Dict, int]]


def _params_nodes(tree: ast.Module) -> _ParamNodes:
    """Numeric entries of the first top-level ``PARAMS = {...}`` literal."""
    for stmt in tree.body:
        value: ast.expr | None = None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name) and target.id == PARAMS_NAME:
                value = stmt.value
        elif (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and stmt.target.id == PARAMS_NAME
        ):
            value = stmt.value
        if value is None:
            continue
        if not isinstance(value, ast.Dict):
            return {}
        out: _ParamNodes = {}
        for i, (key, val) in enumerate(zip(value.keys, value.values, strict=True)):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                number = _number(val)
                if number is None or not tunable(number):
                    continue  # e.g. 1.7e308: the program may read it, no tuner may search it
                out[key.value] = (float(number), value, i)
        return out
    return {}


def _check_override(name: str, value: Any) -> float | int:
    if not tunable(value):
        raise ProgramError(
            f"PARAMS override {name!r} must be a finite number ({range_text()}), got {value!r}"
        )
    return value


def _apply_params(found: _ParamNodes, params: Mapping[str, float]) -> None:
    unknown = sorted(set(params) - set(found))
    if unknown:
        known = ", ".join(sorted(found)) or "none"
        raise ProgramError(f"unknown PARAMS {unknown} (the program's numeric PARAMS: {known})")
    for name, value in params.items():
        number = _check_override(name, value)
        _value, literal, index = found[name]
        # Rewrite the literal itself, so module-level code derived from PARAMS sees it too.
        new = ast.Constant(number)
        copy_locations(new, literal.values[index])
        literal.values[index] = new


def extract_params(source: str) -> dict[str, float]:
    """The numeric entries of the program's top-level ``PARAMS = {...}`` dict literal.

    Only literal numbers in the tunable range count (``-0.5`` too; see :func:`tunable`);
    other entries are left to the program.
    Raises :class:`ProgramError` when the source does not parse.
    """
    tree, issues = _parse(source)
    if tree is None:
        raise ProgramError("; ".join(str(i) for i in issues), issues)
    return {k: v for k, (v, _d, _i) in _params_nodes(tree).items()}


def substitute_params(source: str, params: Mapping[str, float]) -> str:
    """``source`` with the given PARAMS literals rewritten in the text (formatting kept).

    For freezing a tuned program: the result compiles to the same program as
    ``compile_program(source, params)``.
    """
    tree, issues = _parse(source)
    if tree is None:
        raise ProgramError("; ".join(str(i) for i in issues), issues)
    found = _params_nodes(tree)
    unknown = sorted(set(params) - set(found))
    if unknown:
        raise ProgramError(f"unknown PARAMS {unknown}")
    lines = source.splitlines(keepends=True)
    encoded = [line.encode("utf-8") for line in lines]
    edits = []
    for name, value in params.items():
        number = _check_override(name, value)
        _value, literal, index = found[name]
        node = literal.values[index]
        assert node.end_lineno is not None and node.end_col_offset is not None
        edits.append(
            (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, repr(number))
        )
    # Offsets are UTF-8 byte columns; apply from the end so earlier ones stay valid.
    for line, col, end_line, end_col, text in sorted(edits, reverse=True):
        head = encoded[line - 1][:col]
        tail = encoded[end_line - 1][end_col:]
        encoded[line - 1 : end_line] = [head + text.encode("utf-8") + tail]
    return b"".join(encoded).decode("utf-8")


# --------------------------------------------------------------------------- guards

_MISSING = object()
_FROZEN_OWN = frozenset(dir(FrozenDict))
_VIEW = frozenset(VIEW_TYPES)

#: Exact types whose (non-underscore) attributes a program may read.
ATTR_TYPES: frozenset[type] = frozenset(
    {
        str, bytes, int, float, bool, complex, list, tuple, dict, set, frozenset, range,
        type({}.keys()), type({}.values()), type({}.items()),
        *VIEW_TYPES,
    }
)  # fmt: skip
#: Exact types a program may subscript.
ITEM_TYPES: frozenset[type] = frozenset({str, bytes, list, tuple, dict, range, *VIEW_TYPES})
#: Exact types a program may write into (its own containers; views are never these).
WRITE_TYPES: frozenset[type] = frozenset({dict, list})
#: Attributes refused on every non-view type: format strings walk attributes in C,
#: and a dict view's ``mapping`` hands out its dict.
BLOCKED_ATTRIBUTES = frozenset({"format", "format_map", "mapping"})


def _plain_arg(value: Any) -> Any:
    if type(value) in (str, int, float, bool, type(None)):
        return value
    return f"<{type(value).__name__}>"


def guarded_getattr(obj: Any, name: str) -> Any:
    """``_getattr_``: the hook for ``obj.name`` written literally in a program.

    The transformer has already refused names starting with ``_`` and the frame /
    generator attributes, so only the type allowlist is checked here (hot path).
    """
    if type(obj) is FrozenDict:
        if name not in _FROZEN_OWN:
            # A field read, the hot path: subscripting is the same C dict lookup as
            # dict.get, without the method call (FrozenDict has no __missing__).
            # (type(obj) is not kept in a local for the other types: storing and
            # reloading it was a few percent of this path, ~470 calls a trajectory.)
            try:
                return obj[name]
            except KeyError:
                pass
        return getattr(obj, name)
    t = type(obj)
    if t in ATTR_TYPES and name not in BLOCKED_ATTRIBUTES:
        return getattr(obj, name)
    if t in _VIEW:
        return getattr(obj, name)
    if isinstance(obj, BaseException) and name == "args":
        return tuple(_plain_arg(a) for a in obj.args)
    if t in ATTR_TYPES:
        hint = " (use f-strings or %-formatting)" if name.startswith("format") else ""
        raise AttributeError(f"{t.__name__}.{name} is not allowed{hint}")
    raise AttributeError(f"attribute access on {t.__name__!r} objects is not allowed")


def safe_getattr(obj: Any, name: Any, *default: Any) -> Any:
    """The ``getattr`` builtin given to programs: names arrive at run time, so check them."""
    if type(name) is not str:
        raise TypeError("getattr(): attribute name must be a plain string")
    if name.startswith("_") or name in INSPECT_ATTRIBUTES or name.endswith("__roles__"):
        raise AttributeError(f"attribute {name!r} is not allowed")
    if len(default) > 1:
        raise TypeError("getattr() takes at most 3 arguments")
    try:
        return guarded_getattr(obj, name)
    except AttributeError:
        if default:
            return default[0]
        raise


def safe_hasattr(obj: Any, name: Any) -> bool:
    """The ``hasattr`` builtin given to programs: forbidden names are simply absent."""
    if type(name) is str and (name.startswith("_") or name in INSPECT_ATTRIBUTES):
        return False
    return safe_getattr(obj, name, _MISSING) is not _MISSING


def guarded_getitem(obj: Any, key: Any) -> Any:
    """``_getitem_``: ``obj[key]`` only on plain sequences/mappings and view containers."""
    if type(obj) in ITEM_TYPES:
        return obj[key]
    raise TypeError(f"item access on {type(obj).__name__!r} objects is not allowed")


def guarded_write(obj: Any) -> Any:
    """``_write_``: item/attribute stores and deletes go only to plain dicts and lists."""
    if type(obj) in WRITE_TYPES:
        return obj
    raise TypeError(
        f"cannot modify {type(obj).__name__!r} objects: only the program's own dicts and lists "
        "can be changed (trajectory views are read-only)"
    )


def _unpack(it: Any, spec: Any, getiter: Any = None) -> Any:
    # RestrictedPython routes unpacking through _getiter_ so a per-item policy can
    # run; ours is plain iter(), so native unpacking is equivalent and much faster.
    return it


_INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
    "%=": operator.imod, "**=": operator.ipow, "<<=": operator.ilshift, ">>=": operator.irshift,
    "|=": operator.ior, "^=": operator.ixor, "&=": operator.iand, "//=": operator.ifloordiv,
    "@=": operator.imatmul,
}  # fmt: skip


def inplacevar(op: str, x: Any, y: Any) -> Any:
    return _INPLACE[op](x, y)


def apply_call(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return func(*args, **kwargs)


class PrintSink:
    """Printed text of one candidate, bounded; the rest is counted and dropped."""

    __slots__ = ("limit", "parts", "size", "dropped")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.size = 0
        self.dropped = 0

    def add(self, text: str) -> None:
        room = self.limit - self.size
        if room <= 0:
            self.dropped += len(text)
            return
        piece = text[:room]
        self.parts.append(piece)
        self.size += len(piece)
        self.dropped += len(text) - len(piece)

    def text(self) -> str:
        return "".join(self.parts)


class BoundedPrint:
    """One ``print`` collector: RestrictedPython makes one per function that prints.

    A module-level class bound to its sink by :func:`make_print_factory`: defining the
    class anew per program instance cost more than the rest of the instance's globals.
    """

    __slots__ = ("sink", "limit", "parts", "size")

    def __init__(self, sink: PrintSink, limit: int, _getattr_: Any = None) -> None:
        self.sink = sink
        self.limit = limit
        self.parts: list[str] = []
        self.size = 0

    def _call_print(self, *objects: Any, sep: Any = " ", end: Any = "\n", **kwargs: Any) -> None:
        if kwargs:
            raise TypeError("print() here accepts only sep= and end=")
        if sep is None:
            sep = " "
        if end is None:
            end = "\n"
        if type(sep) is not str or type(end) is not str:
            raise TypeError("print(): sep and end must be strings")
        text = sep.join([str(o) for o in objects]) + end
        self.sink.add(text)
        room = self.limit - self.size
        if room > 0:
            piece = text[:room]
            self.parts.append(piece)
            self.size += len(piece)

    def __call__(self) -> str:
        return "".join(self.parts)


def make_print_factory(sink: PrintSink, per_call_limit: int) -> Callable[..., Any]:
    """``_print_``: RestrictedPython calls it (with ``_getattr_``) for each collector."""
    return functools.partial(BoundedPrint, sink, per_call_limit)


# --------------------------------------------------------------------------- globals

_EXCLUDED_BUILTINS = {
    "__build_class__", "_getattr_", "setattr", "delattr", "id", "hash",
    "BaseException", "SystemExit", "KeyboardInterrupt", "GeneratorExit", "MemoryError",
}  # fmt: skip
_EXTRA_BUILTINS = (
    "all", "any", "dict", "enumerate", "filter", "frozenset", "iter", "list", "map", "max",
    "min", "next", "reversed", "set", "sorted", "sum", "tuple", "zip", "bin",
)  # fmt: skip


#: Longest ``range`` a program may make: builtins such as ``sum``, ``max``, ``any`` or
#: ``sorted`` consume an iterator inside C, where the per-trajectory interrupt cannot
#: reach them, so every source of items a C loop can drain must be bounded.
MAX_RANGE = 10_000_000
_range = range
_iter = iter


def bounded_range(*args: Any) -> range:
    """``range`` refusing more than :data:`MAX_RANGE` elements."""
    r = _range(*args)
    if len(r) > MAX_RANGE:
        raise ValueError(f"range() of more than {MAX_RANGE:,} elements is not allowed")
    return r


def _call_until(func: Callable[[], Any], sentinel: Any) -> Any:
    # A Python loop: the interpreter checks for the sandbox's interrupt between items.
    while True:
        value = func()
        if value == sentinel:
            return
        yield value


def bounded_iter(obj: Any, *sentinel: Any) -> Any:
    """``iter``: the two-argument form yields from Python code, so C loops stay interruptible.

    ``iter(int, 1)`` would otherwise be an endless iterator that ``any``/``sum``/``max``
    drain inside C without ever returning to the interpreter.
    """
    if not sentinel:
        return _iter(obj)
    if len(sentinel) > 1:
        raise TypeError("iter expected at most 2 arguments")
    if not callable(obj):
        raise TypeError("iter(v, w): v must be callable")
    return _call_until(obj, sentinel[0])


def _make_builtins() -> dict[str, Any]:
    out = {k: v for k, v in safe_builtins.items() if k not in _EXCLUDED_BUILTINS}
    for name in _EXTRA_BUILTINS:
        out[name] = getattr(_builtins, name)
    out["getattr"] = safe_getattr
    out["hasattr"] = safe_hasattr
    out["range"] = bounded_range
    out["iter"] = bounded_iter
    return out


#: Names a program finds as builtins (read-only for the program: it cannot reach the dict).
SAFE_BUILTINS: Mapping[str, Any] = _make_builtins()


def build_globals(
    *,
    helpers: Mapping[str, Any] | None = None,
    print_sink: PrintSink | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A fresh globals dict for one program: hooks, builtins, helpers, extras."""
    sink = print_sink if print_sink is not None else PrintSink(64 * 1024)
    glb: dict[str, Any] = {
        "__builtins__": dict(SAFE_BUILTINS),
        "__name__": "monitor",
        "_getattr_": guarded_getattr,
        "_getitem_": guarded_getitem,
        "_getiter_": iter,
        "_write_": guarded_write,
        "_iter_unpack_sequence_": _unpack,
        "_unpack_sequence_": _unpack,
        "_inplacevar_": inplacevar,
        "_apply_": apply_call,
        "_print_": make_print_factory(sink, sink.limit),
    }
    if helpers:
        glb.update(helpers)
    if extra:
        glb.update(extra)
    return glb


#: What a module body may consist of for :func:`rerunnable`: constants built, functions
#: made, names bound. No name is read, nothing is called, nothing is jumped over.
_RERUN_BODY_OPS = frozenset(
    {
        "RESUME", "NOP", "LOAD_CONST", "STORE_NAME", "MAKE_FUNCTION", "POP_TOP",
        "RETURN_VALUE", "BUILD_TUPLE", "BUILD_LIST", "BUILD_SET", "BUILD_MAP",
        "BUILD_CONST_KEY_MAP", "MAP_ADD", "DICT_UPDATE", "LIST_EXTEND", "SET_UPDATE",
    }
)  # fmt: skip
#: Instructions that add or remove names of a module namespace from inside a function.
_NAMESPACE_OPS = frozenset(
    {"STORE_GLOBAL", "DELETE_GLOBAL", "STORE_NAME", "DELETE_NAME", "IMPORT_NAME", "IMPORT_STAR"}
)


def _opnames(code: CodeType) -> set[str]:
    return {ins.opname for ins in dis.get_instructions(code)}


def _nested_codes(code: CodeType) -> list[CodeType]:
    out = []
    for const in code.co_consts:
        if isinstance(const, CodeType):
            out.append(const)
            out.extend(_nested_codes(const))
    return out


def rerunnable(code: CodeType) -> bool:
    """Whether a program's module body, run again in the namespace it already ran in
    (after :func:`build_globals`' entries are set again), leaves exactly the namespace
    a first run in fresh globals leaves.

    True when the body only builds constants, makes functions and binds names, so
    what the namespace held before cannot change what it binds, and no function of
    the program can add or remove a module name (no ``global`` stores or deletes), so
    between runs the namespace keeps the same names in the same order. Then every
    name is bound again to what a fresh run binds. Anything else answers False.
    """
    if not _opnames(code) <= _RERUN_BODY_OPS:
        return False
    return not any(_opnames(inner) & _NAMESPACE_OPS for inner in _nested_codes(code))


def load_program(code: CodeType, glb: dict[str, Any]) -> Callable[[Any], Any]:
    """Run the module body of a compiled program and return its ``score`` function.

    Raises :class:`ProgramError` when ``score`` is missing or not a function;
    exceptions of the module body propagate.
    """
    exec(code, glb)  # noqa: S102 - restricted code object, hardened globals
    score = glb.get("score")
    if type(score) is not FunctionType:
        raise ProgramError("the program must define a function score(traj)")
    return score
