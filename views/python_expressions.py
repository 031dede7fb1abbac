"""Python expressions as the reader evaluates them: names, literals, f-strings, operators,
comprehensions and attributes, to known values or :class:`~monsearch.views.python_values.Unknown`.
"""

from __future__ import annotations

import ast
from typing import Any

from monsearch.views import expansions
from monsearch.views.command import UNROLL_LIMIT
from monsearch.views.python_builtins import (
    _BUILTINS,
    _MODULE_CONSTS,
    _compare,
    _decorators,
    _identical,
)
from monsearch.views.python_parse import _src
from monsearch.views.python_values import (
    _MAX_REPEAT,
    Bound,
    Cls,
    Func,
    Instance,
    LocalMod,
    Mod,
    Obj,
    Super,
    Unknown,
    _Attribute,
    _Await,
    _BinOp,
    _BoolOp,
    _Budget,
    _built,
    _Call,
    _Compare,
    _Constant,
    _Dict,
    _DictComp,
    _GeneratorExp,
    _IfExp,
    _JoinedStr,
    _known,
    _Lambda,
    _List,
    _ListComp,
    _Name,
    _NamedExpr,
    _Set,
    _SetComp,
    _Slice,
    _Subscript,
    _text,
    _truth,
    _Tuple,
    _UnaryOp,
)


class ExpressionReading:
    """Expressions: evaluate to a known value or an unknown one."""

    def expr(self, node: ast.expr | None, env: dict[str, Any]) -> Any:
        if node is None:
            return None
        steps = self.steps + 1
        self.steps = steps
        if steps > self.budget:
            raise _Budget
        # Exact-type tests (the parser makes no subclasses), commonest first; the
        # handling stays inline so that nesting costs the same stack depth as before.
        kind = type(node)
        if kind is _Name:
            name = node.id  # type: ignore[attr-defined]
            if name in env:
                return env[name]
            return _BUILTINS[name] if name in _BUILTINS else Unknown(name)
        if kind is _Attribute:
            return self.attribute(self.expr(node.value, env), node.attr, node)  # type: ignore[attr-defined]
        if kind is _Constant:
            v = node.value  # type: ignore[attr-defined]
            return v.decode("utf-8", "replace") if isinstance(v, bytes) else v
        if kind is _Call:
            return self.call(node, env)  # type: ignore[arg-type]
        if kind is _Dict:
            d: dict[Any, Any] = {}
            for k, v in zip(node.keys, node.values, strict=True):
                if k is None:
                    inner = self.expr(v, env)
                    if isinstance(inner, dict):
                        d.update(inner)
                    continue
                key = self.expr(k, env)
                d[key if _known(key) and not isinstance(key, (dict, list)) else _text(key)] = (
                    self.expr(v, env)
                )
            return d
        if kind is _Compare:
            left = self.expr(node.left, env)
            rights = [self.expr(c, env) for c in node.comparators]
            if len(rights) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
                same = _identical(left, rights[0])
                if same is not None:
                    return same if isinstance(node.ops[0], ast.Is) else not same
                return Unknown("", node)
            if len(rights) == 1 and _known(left) and _known(rights[0]):
                try:
                    return _compare(node.ops[0], left, rights[0])
                except TypeError:
                    return Unknown("", node)
            return Unknown("", node)
        if kind is _List or kind is _Tuple or kind is _Set:
            items: list[Any] = []
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    inner = self.expr(e.value, env)
                    items.extend(inner if isinstance(inner, (list, tuple)) else [inner])
                else:
                    items.append(self.expr(e, env))
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if kind is _IfExp:
            test = _truth(self.expr(node.test, env))
            if test is not None:
                return self.expr(node.body if test else node.orelse, env)
            body = self.expr(node.body, env)
            self.expr(node.orelse, env)
            return body
        if kind is _BinOp:
            return self.binop(node.op, self.expr(node.left, env), self.expr(node.right, env))
        if kind is _Subscript:
            obj = self.expr(node.value, env)
            key = self.expr(node.slice, env)
            try:
                if (
                    isinstance(obj, (dict, list, tuple, str))
                    and _known(key)
                    and not isinstance(key, (dict, list))
                ):
                    return obj[key]
            except (KeyError, IndexError, TypeError, ValueError):
                pass
            return Unknown("", node)
        if kind is _BoolOp:
            vals = [self.expr(v, env) for v in node.values]
            if isinstance(node.op, ast.Or):
                # ``headers or {}``, ``os.environ.get("BASE") or "http://app:5000"``
                for v in vals:
                    t = _truth(v)
                    if t is None:
                        return v
                    if t:
                        return v
                return vals[-1]
            for v in vals:
                t = _truth(v)
                if t is None and not _known(v) and not isinstance(v, Unknown):
                    continue  # objects (sessions, responses) are true
                if t is not True:
                    return v
            return vals[-1]
        if kind is _JoinedStr:
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                elif isinstance(v, ast.FormattedValue):
                    val = self.expr(v.value, env)
                    if isinstance(val, Unknown):
                        parts.append("{" + _src(v.value) + "}")
                    elif v.format_spec is not None and isinstance(val, (int, float)):
                        spec = "".join(
                            str(x.value)
                            for x in v.format_spec.values
                            if isinstance(x, ast.Constant)
                        )  # type: ignore[attr-defined]
                        try:
                            if expansions.HUGE_WIDTH.search(spec):  # {n:>999999999}
                                raise ValueError(spec)
                            parts.append(format(val, spec))
                        except ValueError:
                            parts.append(str(val))
                    else:
                        parts.append(_text(val))
            return _built("".join(parts)) if len(parts) > 1 else "".join(parts)
        if kind is _Slice:
            # ``sys.argv[4:]``, ``parts[1:-1]``: a slice with known integer bounds
            parts = (node.lower, node.upper, node.step)
            bounds = [None if b is None else self.expr(b, env) for b in parts]
            if all(b is None or type(b) is int for b in bounds) and bounds[2] != 0:
                return slice(*bounds)
            return Unknown("slice")
        if kind is _ListComp or kind is _GeneratorExp or kind is _SetComp:
            return self.comprehension(node, env)
        if kind is _DictComp:
            self.comprehension(node, env)
            return Unknown("", node)
        if kind is _UnaryOp:
            v = self.expr(node.operand, env)
            if isinstance(node.op, ast.USub) and isinstance(v, (int, float)):
                return -v
            if isinstance(node.op, ast.Not) and (t := _truth(v)) is not None:
                return not t
            return Unknown("", node)
        if kind is _Lambda:
            return Func(node, env)
        if kind is _NamedExpr:
            v = self.expr(node.value, env)
            self.assign(node.target, v, env)
            return v
        if kind is _Await:
            return self.expr(node.value, env)
        return Unknown("", node)

    def comprehension(
        self,
        node: ast.ListComp | ast.GeneratorExp | ast.SetComp | ast.DictComp,
        env: dict[str, Any],
    ) -> Any:
        local = dict(env)
        results: list[Any] = []
        saved = (self.mult, self.mult_known)

        def walk(k: int) -> None:
            if k == len(node.generators):
                if isinstance(node, ast.DictComp):
                    self.expr(node.key, local)
                    self.expr(node.value, local)
                else:
                    results.append(self.expr(node.elt, local))
                return
            gen = node.generators[k]
            items, count, known = self.iterate(self.expr(gen.iter, local))
            if items is not None and count <= UNROLL_LIMIT:
                for it in items:
                    self.assign(gen.target, it, local)
                    if all(_truth(self.expr(c, local)) is not False for c in gen.ifs):
                        walk(k + 1)
            elif count:
                self.mult = min(self.mult * count, _MAX_REPEAT)
                self.mult_known = self.mult_known and known
                self.assign(gen.target, items[0] if items else Unknown("", gen.target), local)
                walk(k + 1)

        try:
            walk(0)
        finally:
            self.mult, self.mult_known = saved
        return results

    def binop(self, op: ast.operator, a: Any, b: Any) -> Any:
        try:
            if isinstance(op, ast.Add):
                if isinstance(a, (int, float)) and isinstance(b, (int, float)):
                    return a + b
                if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
                    if not expansions.spend(len(a) + len(b)):
                        return Unknown("…")
                    return list(a) + list(b)
                if isinstance(a, (str, Unknown)) or isinstance(b, (str, Unknown)):
                    left, right = _text(a), _text(b)
                    if not expansions.spend(len(left) + len(right)):
                        return Unknown("…")
                    return left + right
            elif isinstance(op, ast.Mod) and isinstance(a, str):
                if expansions.HUGE_WIDTH.search(a):  # "%0999999999d": not built
                    return Unknown("…")
                args = b if isinstance(b, tuple) else (b,)
                if isinstance(b, dict):
                    return _built(a % {k: _text(v) for k, v in b.items()})
                try:
                    return _built(
                        a % tuple(x if isinstance(x, (int, float)) else _text(x) for x in args)
                    )
                except (TypeError, ValueError):
                    return a
            elif isinstance(op, ast.Mult):
                if isinstance(a, (int, float)) and isinstance(b, (int, float)):
                    # x = x * x in a loop: a number of 2**64 digits.
                    if (
                        isinstance(a, int)
                        and isinstance(b, int)
                        and a.bit_length() + b.bit_length() > 4096
                    ):
                        return Unknown("…")
                    return a * b
                if isinstance(b, (str, list)) and isinstance(a, int):
                    a, b = b, a
                if isinstance(a, (str, list)) and isinstance(b, int) and b <= 10_000:
                    # Counted before it is built: ("A" * 10000) * 10000 is 100 MB.
                    return a * b if expansions.spend(len(a) * max(b, 0)) else Unknown("…")
            elif (
                isinstance(op, ast.Sub)
                and isinstance(a, (int, float))
                and isinstance(b, (int, float))
            ):
                return a - b
            elif isinstance(op, ast.FloorDiv) and isinstance(a, int) and isinstance(b, int) and b:
                return a // b
            elif (
                isinstance(op, ast.Div)
                and isinstance(a, (int, float))
                and isinstance(b, (int, float))
                and b
            ):
                return a / b
            elif (
                isinstance(op, ast.Pow)
                and isinstance(a, int)
                and isinstance(b, int)
                and 0 <= b <= 64
                and abs(a) < 1000
            ):
                return a**b
        except (TypeError, ValueError, OverflowError):
            pass
        return Unknown("?")

    def attribute(self, obj: Any, name: str, node: ast.AST) -> Any:
        # Exact-type tests (no subclasses), commonest first.
        kind = type(obj)
        if kind is Mod:
            full = f"{obj.name}.{name}"
            if full == "sys.argv":
                return list(self.argv) if self.argv is not None else Unknown("sys.argv")
            if full == "os.environ":
                return self.environ
            if full == "sys.path":
                return self.sys_path
            return _MODULE_CONSTS.get(full, Mod(full))
        if kind is Obj:
            if name in obj.attrs:
                return obj.attrs[name]
            if name == "full_url" and "url" in obj.attrs:
                return obj.attrs["url"]
            return Bound(obj, name)
        if kind is Unknown:
            return Unknown("", node)
        if kind is LocalMod:
            if name in obj.env:
                return obj.env[name]
            return self.local_module(f"{obj.name}.{name}") or Unknown("", node)
        if kind is Instance:
            if name in obj.attrs:
                return obj.attrs[name]
            found = obj.cls.lookup(name)
            if isinstance(found, Func):
                deco = _decorators(found)
                if "property" in deco:
                    return self.call_func(found, [obj], {})
                if "staticmethod" in deco:
                    return found
                return Bound(obj, name)
            if found is not None:
                return found
            if obj.session is not None:
                if name in obj.session.attrs:
                    return obj.session.attrs[name]
                return Bound(obj, name)
            return Bound(obj, name)
        if kind is Super:
            return Bound(obj, name)
        if kind is Cls:
            found = obj.lookup(name)
            return found if found is not None else Unknown("", node)
        if isinstance(obj, (str, dict, list, bytes)):
            return Bound(obj, name)
        return Unknown("", node)
