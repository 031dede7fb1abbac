"""Static checks of a monitor program: what compiles but still cannot run or be tuned.

:func:`check_program` compiles the source under the sandbox rules
(:func:`~monsearch.sandbox.restricted.compile_program`) and then walks its syntax
tree for the mistakes the compiler lets through, each reported with its line and
column:

- no ``score`` at all (an empty file included), or ``score`` bound to something
  that is not a function (``score = 1``, ``score = "x"``);
- a ``score`` the sandbox cannot call as ``score(traj)``: it must accept exactly
  one positional argument (extra parameters need defaults, keyword-only ones too);
- ``PARAMS`` that is not a dict literal, or an entry a tuner cannot use: a key that
  is not a string literal, a value that is not a number literal a tuner can search
  around (``True``, ``"high"``, ``[1]``, ``float("inf")`` or ``1.7e308`` are not: 0, or
  a magnitude from 1e-12 to 1e12, :func:`~monsearch.sandbox.restricted.tunable`), a key
  given twice, or a second
  top-level ``PARAMS =`` that would replace the literal a tuner rewrites.

``sandbox check`` and ``sandbox run`` both use it, so a program that passes the
check is one the sandbox can run and a tuner can adjust.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping

from monsearch.sandbox.restricted import (
    DEFAULT_MAX_SOURCE_BYTES,
    FILENAME,
    PARAMS_NAME,
    CompileIssue,
    CompileReport,
    compile_program,
    range_text,
    tunable,
)

__all__ = ["SCORE_NAME", "check_program", "static_issues"]

SCORE_NAME = "score"

#: Expressions whose value can never be a function.
_NOT_CALLABLE = (
    ast.Constant,
    ast.JoinedStr,
    ast.List,
    ast.Tuple,
    ast.Dict,
    ast.Set,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.BinOp,
    ast.UnaryOp,
    ast.Compare,
)


def check_program(
    source: str,
    params: Mapping[str, float] | None = None,
    *,
    max_source_bytes: int = DEFAULT_MAX_SOURCE_BYTES,
) -> CompileReport:
    """Compile ``source`` and add the static checks; never raises for a bad program.

    The result is a :class:`CompileReport`: ``ok`` only when the program compiles
    and passes every check (``code`` is then set), ``errors`` sorted by position.
    """
    try:
        report = compile_program(source, params, max_source_bytes=max_source_bytes)
    except OverflowError:
        # An int literal in PARAMS beyond float range: the static checks below name it.
        report = CompileReport(False)
    if not isinstance(source, str) or (report.errors and report.errors[0].line is None):
        return report  # not text, too large, or nested too deeply to walk
    try:
        tree = ast.parse(source, FILENAME, "exec")
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        return report  # compile_program has reported why
    try:
        extra = static_issues(tree)
    except RecursionError:
        extra = [CompileIssue("program is nested too deeply to check")]
    if not extra and report.ok:
        return report
    if not extra and not report.errors:
        extra = [CompileIssue("cannot compile program")]
    errors = tuple(sorted((*report.errors, *extra), key=_position))
    return CompileReport(False, errors, dict(report.params), report.warnings)


def _position(issue: CompileIssue) -> tuple[int, int]:
    return (issue.line or 0, issue.col or 0)


def _issue(node: ast.AST, message: str) -> CompileIssue:
    return CompileIssue(message, getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1)


def static_issues(tree: ast.Module) -> list[CompileIssue]:
    """The violations :func:`check_program` adds to the compiler's, in source order."""
    issues = _score_issues(tree)
    issues.extend(_params_issues(tree))
    return sorted(issues, key=_position)


# --------------------------------------------------------------------------- score


def _module_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements that run at module level: the body and its blocks, not function bodies."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for name in ("body", "orelse", "finalbody"):
            block = getattr(stmt, name, None)
            if isinstance(block, list):
                yield from _module_statements(block)
        for handler in getattr(stmt, "handlers", ()) or ():
            yield from _module_statements(handler.body)


def _target_names(target: ast.expr) -> Iterator[str]:
    """Names a target binds: ``x``, ``a, (b, *c)``; never ``x[k]`` or ``x.y``."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _target_names(element)
    elif isinstance(target, ast.Starred):
        yield from _target_names(target.value)


def _binds(stmt: ast.stmt, name: str) -> bool:
    """Whether ``stmt`` itself (not a nested block) binds ``name`` other than by def."""
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor):
        targets = [stmt.target]
    elif isinstance(stmt, ast.With | ast.AsyncWith):
        targets = [i.optional_vars for i in stmt.items if i.optional_vars is not None]
    return any(name in _target_names(t) for t in targets)


def _score_issues(tree: ast.Module) -> list[CompileIssue]:
    functions: dict[str, ast.FunctionDef] = {}
    last: ast.stmt | None = None
    for stmt in _module_statements(tree.body):
        if isinstance(stmt, ast.FunctionDef):
            functions[stmt.name] = stmt
            if stmt.name == SCORE_NAME:
                last = stmt
        elif _binds(stmt, SCORE_NAME):
            last = stmt
    if last is None:
        found = sorted(n for n in functions if n != SCORE_NAME)
        hint = f" (functions defined: {', '.join(found)})" if found else ""
        what = "the program is empty" if not tree.body else "the program has no score function"
        return [
            CompileIssue(
                f"{what}: define score(traj), which the sandbox calls on every trajectory{hint}",
                1,
                1,
            )
        ]
    if isinstance(last, ast.FunctionDef):
        return _signature_issues(last, last.args, "score")
    if isinstance(last, ast.Assign | ast.AnnAssign) and last.value is not None:
        value = last.value
        if isinstance(value, ast.Lambda):
            return _signature_issues(last, value.args, "score")
        if isinstance(value, ast.Name) and value.id in functions:
            target = functions[value.id]
            return _signature_issues(last, target.args, f"score (= {value.id})")
        if isinstance(value, _NOT_CALLABLE):
            kind = _describe_value(value)
            return [
                _issue(
                    last,
                    f"score must be a function `def score(traj): ...`, but it is assigned {kind}",
                )
            ]
        return []  # decided at run time (e.g. score = pick())
    if isinstance(last, ast.AugAssign):
        return [
            _issue(
                last,
                "score must be a function `def score(traj): ...`; it is changed "
                "by an augmented assignment here",
            )
        ]
    return []


def _describe_value(node: ast.expr) -> str:
    if isinstance(node, ast.Constant):
        return f"the constant {node.value!r}"[:80]
    names = {
        ast.JoinedStr: "an f-string",
        ast.List: "a list",
        ast.Tuple: "a tuple",
        ast.Dict: "a dict",
        ast.Set: "a set",
        ast.ListComp: "a list comprehension",
        ast.SetComp: "a set comprehension",
        ast.DictComp: "a dict comprehension",
        ast.GeneratorExp: "a generator expression",
    }
    return names.get(type(node), "an arithmetic or comparison result")


def _signature_issues(where: ast.AST, args: ast.arguments, name: str) -> list[CompileIssue]:
    """Violations unless ``name`` can be called with exactly one positional argument."""
    positional = [*args.posonlyargs, *args.args]
    required = positional[: len(positional) - len(args.defaults)]
    issues: list[CompileIssue] = []
    if not positional and args.vararg is None:
        issues.append(
            _issue(
                where,
                f"{name} takes no argument; the sandbox calls it with one: "
                "define it as score(traj)",
            )
        )
    for extra in required[1:]:
        issues.append(
            _issue(
                extra,
                f"{name} needs {len(required)} arguments, but the sandbox calls it with one "
                f"(the trajectory): give {extra.arg!r} a default or remove it",
            )
        )
    for kw, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if default is None:
            issues.append(
                _issue(
                    kw,
                    f"keyword-only argument {kw.arg!r} of {name} has no default; "
                    "the sandbox calls score(traj) with nothing else",
                )
            )
    return issues


# --------------------------------------------------------------------------- PARAMS


def _number_literal(node: ast.expr) -> float | None:
    """The value of an int/float literal (``-0.5`` too) in the tunable range; booleans
    are not numbers."""
    sign = 1.0
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        sign = -1.0 if isinstance(node.op, ast.USub) else 1.0
        node = node.operand
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        try:
            value = sign * float(node.value)
        except OverflowError:  # an int literal beyond float range
            return None
        if tunable(value):
            return value
    return None


def _params_value(stmt: ast.stmt) -> ast.expr | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
        if isinstance(target, ast.Name) and target.id == PARAMS_NAME:
            return stmt.value
    if (
        isinstance(stmt, ast.AnnAssign)
        and isinstance(stmt.target, ast.Name)
        and stmt.target.id == PARAMS_NAME
        and stmt.value is not None
    ):
        return stmt.value
    return None


def _params_issues(tree: ast.Module) -> list[CompileIssue]:
    """The first top-level ``PARAMS = ...`` is what a tuner reads and rewrites."""
    first: ast.stmt | None = None
    issues: list[CompileIssue] = []
    for stmt in tree.body:
        value = _params_value(stmt)
        if value is None and not _binds(stmt, PARAMS_NAME):
            continue
        if first is not None:
            issues.append(
                _issue(
                    stmt,
                    f"PARAMS is assigned again (first at line {first.lineno}); a tuner "
                    "rewrites only the first literal, so assign PARAMS once",
                )
            )
            continue
        first = stmt
        if value is None:
            issues.append(
                _issue(
                    stmt,
                    "PARAMS must be assigned once as a dict literal "
                    '(PARAMS = {"name": 1.0, ...}) so a tuner can read it',
                )
            )
        elif not isinstance(value, ast.Dict):
            issues.append(
                _issue(
                    value,
                    'PARAMS must be a dict literal of numbers ({"name": 1.0, ...}); '
                    "a tuner cannot read or adjust anything else",
                )
            )
        else:
            issues.extend(_entry_issues(value))
    return issues


def _entry_issues(literal: ast.Dict) -> list[CompileIssue]:
    issues: list[CompileIssue] = []
    seen: dict[str, int] = {}
    for key, val in zip(literal.keys, literal.values, strict=True):
        if key is None:
            issues.append(
                _issue(val, "PARAMS cannot unpack another dict (**...): list each number in it")
            )
            continue
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            issues.append(_issue(key, "PARAMS keys must be string literals"))
            continue
        name = key.value
        if name in seen:
            issues.append(
                _issue(key, f"PARAMS key {name!r} is given twice (first at line {seen[name]})")
            )
        seen.setdefault(name, key.lineno)
        if _number_literal(val) is None:
            issues.append(
                _issue(
                    val,
                    f"PARAMS[{name!r}] must be a finite number literal in the tunable range "
                    f"({range_text()}), got {_source_hint(val)}: a tuner can only adjust "
                    "such numbers (booleans are not numbers); keep other constants outside "
                    "PARAMS",
                )
            )
    return issues


def _source_hint(node: ast.expr) -> str:
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool):
            kind = "a boolean"
        elif isinstance(value, float) and value - value != 0.0:
            kind = "a non-finite float"
        elif isinstance(value, (int, float)):
            kind = "a number out of range"
        else:
            kind = type(value).__name__
        try:
            text = repr(value)
        except ValueError:  # an int too long to print
            text = "..."
        return f"{kind} {text if len(text) <= 40 else text[:37] + '...'}"
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001 - only a hint for the message
        text = type(node).__name__
    return text if len(text) <= 60 else text[:57] + "..."
