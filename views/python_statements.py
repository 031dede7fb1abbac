"""Python statements as the reader walks them: assignments, imports (with the agent's own
modules), classes, ``for`` and ``while`` loops with their repeat counts.
"""

from __future__ import annotations

import ast
import contextlib
from typing import Any

from monsearch.views.command import UNKNOWN_LOOP_REPEAT, UNROLL_LIMIT
from monsearch.views.python_builtins import _NOT_OWN
from monsearch.views.python_parse import _parse_body
from monsearch.views.python_values import (
    _MAX_DEPTH,
    _MAX_REPEAT,
    _TRY_STAR,
    Cls,
    Func,
    Instance,
    LocalMod,
    Mod,
    Obj,
    Unknown,
    _AnnAssign,
    _Assign,
    _AsyncFor,
    _AsyncFunctionDef,
    _AsyncWith,
    _AugAssign,
    _Budget,
    _ClassDef,
    _Expr,
    _For,
    _FunctionDef,
    _If,
    _Import,
    _ImportFrom,
    _known,
    _LoopExit,
    _Return,
    _ReturnStmt,
    _truth,
    _Try,
    _While,
    _With,
)


class StatementReading:
    """Statements: run a body, bind names, import, define classes, loop."""

    def run(self, body: list[ast.stmt], env: dict[str, Any]) -> None:
        for stmt in body:
            steps = self.steps + 1
            self.steps = steps
            if steps > self.budget:
                raise _Budget
            self.stmt(stmt, env)

    def stmt(self, node: ast.stmt, env: dict[str, Any]) -> None:
        # Exact-type tests (the parser makes no subclasses), commonest first; the
        # handling stays inline so that nesting costs the same stack depth as before.
        kind = type(node)
        if kind is _Assign:
            value = self.expr(node.value, env)  # type: ignore[attr-defined]
            for target in node.targets:  # type: ignore[attr-defined]
                self.assign(target, value, env)
        elif kind is _Expr:
            self.expr(node.value, env)  # type: ignore[attr-defined]
        elif kind is _Import or kind is _ImportFrom:
            self.imports(node, env)  # type: ignore[arg-type]
        elif kind is _With or kind is _AsyncWith:
            for item in node.items:  # type: ignore[attr-defined]
                val = self.expr(item.context_expr, env)
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, val, env)
            self.run(node.body, env)  # type: ignore[attr-defined]
        elif kind is _Try or kind is _TRY_STAR:
            self.run(node.body, env)  # type: ignore[attr-defined]
            for h in node.handlers:  # type: ignore[attr-defined]
                if h.name:
                    env[h.name] = Unknown(h.name)
                self.run(h.body, env)
            self.run(node.orelse, env)  # type: ignore[attr-defined]
            self.run(node.finalbody, env)  # type: ignore[attr-defined]
        elif kind is _If:
            test = _truth(self.expr(node.test, env))  # type: ignore[attr-defined]
            if test is not None:
                self.run(node.body if test else node.orelse, env)  # type: ignore[attr-defined]
            else:
                self.run(node.body, env)  # type: ignore[attr-defined]
                self.run(node.orelse, env)  # type: ignore[attr-defined]
        elif kind is _FunctionDef or kind is _AsyncFunctionDef:
            env[node.name] = Func(node, env)  # type: ignore[attr-defined,arg-type]
        elif kind is _ReturnStmt:
            raise _Return(self.expr(node.value, env) if node.value is not None else None)  # type: ignore[attr-defined]
        elif kind is _For or kind is _AsyncFor:
            self.for_loop(node.target, node.iter, node.body, env)  # type: ignore[attr-defined]
            self.run(node.orelse, env)  # type: ignore[attr-defined]
        elif kind is _ClassDef:
            env[node.name] = self.class_def(node, env)  # type: ignore[attr-defined,arg-type]
        elif kind is _AnnAssign:
            if node.value is not None:  # type: ignore[attr-defined]
                self.assign(node.target, self.expr(node.value, env), env)  # type: ignore[attr-defined]
        elif kind is _AugAssign:
            target = node.target  # type: ignore[attr-defined]
            cur = self.expr(target, env) if isinstance(target, ast.Name) else Unknown("?")
            val = self.binop(node.op, cur, self.expr(node.value, env))  # type: ignore[attr-defined]
            self.assign(target, val, env)
        elif kind is _While:
            if _truth(self.expr(node.test, env)) is not False:  # type: ignore[attr-defined]
                self.while_loop(node, env)  # type: ignore[arg-type]
            self.run(node.orelse, env)  # type: ignore[attr-defined]

    def assign(self, target: ast.expr, value: Any, env: dict[str, Any]) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (tuple, list)) and len(value) == len(target.elts):
                for t, v in zip(target.elts, value, strict=True):
                    self.assign(t, v, env)
            else:
                for t in target.elts:
                    self.assign(t, Unknown("", t), env)
        elif isinstance(target, ast.Subscript):
            obj = self.expr(target.value, env)
            key = self.expr(target.slice, env)
            if isinstance(obj, dict) and _known(key) and not isinstance(key, (dict, list)):
                obj[key] = value
            elif (
                isinstance(obj, Obj) and obj.kind in ("session", "request") and isinstance(key, str)
            ):
                pass
        elif isinstance(target, ast.Attribute):
            obj = self.expr(target.value, env)
            if isinstance(obj, Obj):
                obj.attrs["url" if target.attr == "full_url" else target.attr] = value
            elif isinstance(obj, Instance):
                if obj.session is not None and target.attr in ("headers", "auth", "base_url"):
                    obj.session.attrs[target.attr] = value
                else:
                    obj.attrs[target.attr] = value
            elif isinstance(obj, (LocalMod, Cls)):
                (obj.env if isinstance(obj, LocalMod) else obj.ns)[target.attr] = value

    def imports(self, node: ast.Import | ast.ImportFrom, env: dict[str, Any]) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".", 1)[0]
                # Most imports are of libraries, which ``local_module`` never reads.
                local = None if top in _NOT_OWN else self.local_module(alias.name)
                if alias.asname:
                    env[alias.asname] = local or Mod(alias.name)
                    continue
                if local is None:
                    env[top] = Mod(top)
                    continue
                # ``import pkg.client`` binds ``pkg`` with ``client`` reachable from it.
                parts = alias.name.split(".")
                head = self.local_module(top) or LocalMod(top, {})
                env[top] = cur = head
                for k in range(1, len(parts)):
                    sub = self.local_module(".".join(parts[: k + 1])) or LocalMod(parts[k], {})
                    cur.env.setdefault(parts[k], sub)
                    nxt = cur.env[parts[k]]
                    if not isinstance(nxt, LocalMod):
                        break
                    cur = nxt
            return
        base = node.module or ""
        local = self.local_module(base) if base else None
        for alias in node.names:
            if alias.name == "*":
                if local is not None:
                    env.update({k: v for k, v in local.env.items() if not k.startswith("_")})
                continue
            name = alias.asname or alias.name
            full = f"{base}.{alias.name}" if base else alias.name
            if local is not None and alias.name in local.env:
                env[name] = local.env[alias.name]
            elif (sub := self.local_module(full)) is not None:
                env[name] = sub
            elif local is not None:
                env[name] = Unknown(full)
            else:
                env[name] = Mod(full)

    def local_module(self, name: str) -> LocalMod | None:
        """A module the agent wrote earlier, read (run) once; None for libraries."""
        if name in self.loaded:
            return self.loaded[name]
        top = name.split(".", 1)[0]
        if not name or top in _NOT_OWN:
            return None
        found = self.find_module(name)
        body = _parse_body(found[1]) if found is not None else None
        if found is None or body is None or self.depth >= _MAX_DEPTH:
            self.loaded[name] = None
            return None
        mod = LocalMod(name, {"__name__": name, "__file__": found[0]})
        self.loaded[name] = mod  # before running: circular imports see the partial module
        self.depth += 1
        try:
            self.run(body, mod.env)
        except _Budget:
            raise
        except Exception:  # noqa: BLE001 - a broken module keeps what it defined so far
            pass
        finally:
            self.depth -= 1
        return mod

    def find_module(self, name: str) -> tuple[str, str] | None:
        rel = name.replace(".", "/")
        for d in self.sys_path[:16]:
            if not isinstance(d, str):
                continue
            base = d.rstrip("/") + "/" if d not in ("", ".") else ""
            for cand in (f"{base}{rel}.py", f"{base}{rel}/__init__.py"):
                src = self.file(cand)
                if src is not None:
                    return cand, src
        for path, src in self.written.items():
            if path == f"{rel}.py" or path.endswith(f"/{rel}.py"):
                return path, src
        return self.modules(rel) if self.modules is not None else None

    def class_def(self, node: ast.ClassDef, env: dict[str, Any]) -> Cls:
        bases = [self.expr(b, env) for b in node.bases]
        local = dict(env)
        with contextlib.suppress(_Return, _LoopExit):
            self.run(node.body, local)
        ns: dict[str, Any] = {}
        for k, v in local.items():
            if k in env and env[k] is v:
                continue
            # Methods see the module's globals, not the class body's names.
            ns[k] = Func(v.node, env) if isinstance(v, Func) else v
        return Cls(node.name, ns, bases)

    def for_loop(
        self, target: ast.expr, iter_node: ast.expr, body: list[ast.stmt], env: dict[str, Any]
    ) -> None:
        items, count, known = self.iterate(self.expr(iter_node, env))
        if count == 0:
            return
        if items is not None and count <= UNROLL_LIMIT:
            for item in items:
                self.assign(target, item, env)
                try:
                    self.run(body, env)
                except _LoopExit:
                    break
            return
        saved = (self.mult, self.mult_known)
        self.mult = min(self.mult * count, _MAX_REPEAT)
        self.mult_known = self.mult_known and known
        try:
            self.assign(target, items[0] if items else Unknown("", target), env)
            self.run(body, env)
        except _LoopExit:
            pass
        finally:
            self.mult, self.mult_known = saved

    def iterate(self, value: Any) -> tuple[list[Any] | None, int, bool]:
        """(first items, count, count known) of an iterable value."""
        if isinstance(value, Obj) and value.kind == "lazy_iter":
            return [value.attrs["first"]], value.attrs["count"], True
        if isinstance(value, Obj) and value.kind == "range":
            r: range = value.attrs["range"]
            n = len(r)
            return ([r[0]] if n else []) if n > UNROLL_LIMIT else list(r), n, True
        if isinstance(value, (list, tuple)):
            return list(value), len(value), True
        if isinstance(value, str):
            return list(value), len(value), True
        if isinstance(value, dict):
            return list(value.keys()), len(value), True
        return None, UNKNOWN_LOOP_REPEAT, False

    def while_loop(self, node: ast.While, env: dict[str, Any]) -> None:
        count: int | None = None
        t = node.test
        if (
            isinstance(t, ast.Compare)
            and len(t.ops) == 1
            and isinstance(t.left, ast.Name)
            and isinstance(t.ops[0], (ast.Lt, ast.LtE))
        ):
            start = env.get(t.left.id)
            limit = self.expr(t.comparators[0], env)
            if isinstance(start, int) and isinstance(limit, int):
                count = max(0, limit - start + (1 if isinstance(t.ops[0], ast.LtE) else 0))
        saved = (self.mult, self.mult_known)
        self.mult = min(
            self.mult * (count if count is not None else UNKNOWN_LOOP_REPEAT), _MAX_REPEAT
        )
        self.mult_known = self.mult_known and count is not None
        try:
            self.run(node.body, env)
        except _LoopExit:
            pass
        finally:
            self.mult, self.mult_known = saved
