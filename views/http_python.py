"""HTTP requests in Python code the agent ran, read with :mod:`ast`.

A small abstract interpreter walks the module (it never runs agent code): it
tracks imports and aliases, simple assignments (strings, numbers, dicts, lists,
f-strings with known parts, ``+``/``%``/``.format``), ``json.dumps``,
``urlencode``, ``base64``, ``urlparse``/``urljoin``, ``os.path``, truth values
of known data (``if token:``, ``body if body is not None else None``),
function definitions (inlined at their call sites with their arguments and
defaults, bounded depth; ``global`` names reach the module), closures,
``functools.partial``, classes (``__init__``, methods, ``self`` attributes,
properties, ``super()``, subclasses of ``requests.Session`` that override
``request``), ``async``/``await`` (coroutines run where they are called),
``for`` loops (unrolled when short, otherwise one pass with a repeat count),
``while`` loops, comprehensions and ``executor.map``. Calls that send requests
are recorded with the loop multiplier in force:

* ``urllib.request.urlopen(url | Request(url, data=, headers=, method=))``,
  ``Request.add_header``, ``build_opener().open`` with ``addheaders``,
  ``install_opener``;
* ``requests.get/post/.../request``, ``requests.Session()`` (session headers,
  auth), the same for ``httpx`` (``Client(base_url=)``) and ``aiohttp``;
* ``http.client.HTTPConnection(host, port)`` / ``HTTPSConnection`` with
  ``.request(method, path, body, headers)`` or ``putrequest`` / ``putheader`` /
  ``endheaders`` / ``send``;
* raw HTTP through ``socket`` (``connect((host, port))`` + ``send``/``sendall``);
* curl / wget run through ``subprocess`` or ``os.system`` (read as shell).

Modules the agent wrote in earlier steps (``cat > /tmp/client.py``, ``tee``,
``open(...).write``) are read when imported (``import client``, ``from client
import get``, packages, ``sys.path`` / ``PYTHONPATH`` / ``os.chdir``, or
``exec(open(f).read())``), and their functions and classes called like local
ones. ``sys.argv`` comes from the command line, ``os.environ`` from the
variables the shell set (``os.environ.get(k, default)`` gives the default),
``argparse`` defaults and options from both.

Unknown values render as ``{name}`` placeholders (``f"Bearer {token}"``), so the
request shape survives. Code that does not parse falls back to regexes. Text the code
builds (concatenation, repetition, formatting, joins, JSON) is counted against the
text's expansion budget (:mod:`monsearch.views.expansions`): past it, what would be
built is unknown (``{…}``), so ``x = x + x`` in a loop cannot grow without end.
"""

from __future__ import annotations

import ast
import base64
import contextlib
import functools
import json
import posixpath
import re
import sys
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlencode, urljoin, urlsplit

from monsearch.views import expansions
from monsearch.views.http_extract import (
    ModuleLookup,
    Request,
    normalise_url,
    parse_raw_http,
    split_url,
)
from monsearch.views.shell import UNKNOWN_LOOP_REPEAT, UNROLL_LIMIT

FileLookup = Callable[[str], "str | None"]

_MAX_STEPS = 20_000
_MAX_DEPTH = 8
_MAX_REPEAT = 10**9
_METHODS = ("get", "post", "put", "patch", "delete", "head", "options")


class Unknown:
    """A value the reader cannot know; ``text`` is how it prints in a string."""

    __slots__ = ("_text", "_node")

    # Callers pass ``node`` by position: a keyword makes each construction twice as slow.
    def __init__(self, text: str = "", node: ast.AST | None = None):
        self._text = text
        self._node = node

    @property
    def text(self) -> str:
        # Rendering source is costly and most unknowns are never printed.
        if self._node is not None:
            self._text = _src(self._node)
            self._node = None
        return self._text

    def __repr__(self) -> str:
        return f"Unknown({self.text!r})"


class Mod:
    """A module, or a dotted name reached from one (``urllib.request.urlopen``)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


class Obj:
    """An object of interest: Request, Session, HTTPConnection, socket, file, ..."""

    __slots__ = ("kind", "attrs")

    def __init__(self, kind: str, **attrs: Any):
        self.kind = kind
        self.attrs = attrs


class Bound:
    __slots__ = ("obj", "name")

    def __init__(self, obj: Any, name: str):
        self.obj = obj
        self.name = name


class Func:
    __slots__ = ("node", "closure")

    def __init__(self, node: ast.FunctionDef | ast.Lambda, closure: dict[str, Any]):
        self.node = node
        self.closure = closure


class LocalMod:
    """A module the agent wrote earlier (a file) and imported: its global names."""

    __slots__ = ("name", "env")

    def __init__(self, name: str, env: dict[str, Any]):
        self.name = name
        self.env = env


class Cls:
    """A class the code defines: its namespace (methods as :class:`Func`) and bases."""

    __slots__ = ("name", "ns", "bases")

    def __init__(self, name: str, ns: dict[str, Any], bases: list[Any]):
        self.name = name
        self.ns = ns
        self.bases = bases

    def mro(self) -> list[Cls]:
        out: list[Cls] = []
        todo: list[Cls] = [self]
        while todo and len(out) < 16:
            c = todo.pop(0)
            if c not in out:
                out.append(c)
                todo.extend(b for b in c.bases if isinstance(b, Cls))
        return out

    def lookup(self, name: str, skip: int = 0) -> Any:
        for c in self.mro()[skip:]:
            if name in c.ns:
                return c.ns[name]
        return None

    def session_base(self) -> Mod | None:
        """``requests.Session`` / ``httpx.Client`` ... when the class derives from one."""
        for c in self.mro():
            for b in c.bases:
                if isinstance(b, Mod) and b.name.rsplit(".", 1)[-1] in _SESSION_CLASSES:
                    return b
        return None


class Instance:
    """An object of a class the code defines; ``session`` when it derives from one."""

    __slots__ = ("cls", "attrs", "session")

    def __init__(self, cls: Cls, session: Obj | None):
        self.cls = cls
        self.attrs: dict[str, Any] = {}
        self.session = session


class Super:
    """``super()`` inside a method: the instance seen past its own class."""

    __slots__ = ("inst",)

    def __init__(self, inst: Instance):
        self.inst = inst


_LIB_CLIENT = {
    "requests": "python_requests",
    "httpx": "python_httpx",
    "aiohttp": "python_aiohttp",
}
_SESSION_CLASSES = frozenset({"Session", "session", "Client", "AsyncClient", "ClientSession"})


class _Return(Exception):
    def __init__(self, value: Any):
        self.value = value


class _Budget(Exception):
    pass


def _text(v: Any) -> str:
    """How a value prints inside a string."""
    if isinstance(v, str):
        return v
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, Unknown):
        return "{" + v.text + "}"
    if isinstance(v, bool) or v is None or isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, (dict, list, tuple)):
        if not expansions.spend(_size(v)):
            return _TOO_BIG
        try:
            return str(_plain(v))
        except (TypeError, ValueError, RecursionError):
            return "{?}"
    return "{?}"


#: How a value too large to build prints (see :mod:`monsearch.views.expansions`).
_TOO_BIG = "{…}"
#: Deeper than this, a value counts as too large (the reader's own values are shallow;
#: a list that contains itself is not).
_SIZE_DEPTH = 200


def _size(v: Any, depth: int = 0) -> int:
    """About how many characters ``_text``/``json.dumps`` of ``v`` take (at least that
    many, up to the escapes; past the expansion budget, more than it: the count stops)."""
    if isinstance(v, str):
        return len(v) + 2
    if isinstance(v, (dict, list, tuple)):
        if depth > _SIZE_DEPTH:
            return expansions.EXPANSION_BUDGET + 1
        total = 2
        items = v.items() if isinstance(v, dict) else enumerate(v)
        for k, x in items:
            total += (_size(k, depth + 1) if isinstance(v, dict) else 0) + _size(x, depth + 1) + 2
            if total > expansions.EXPANSION_BUDGET:
                break
        return total
    return 24


def _json_text(value: Any, **options: Any) -> str | None:
    """``json.dumps(_plain(value), **options)`` if the budget allows it, else None."""
    indent = options.get("indent")
    # The indent is repeated per level and item: indent=10**9 would be gigabytes.
    if isinstance(indent, (int, str)) and (
        indent if isinstance(indent, int) else len(indent)
    ) > 64:
        return None
    if not expansions.spend(_size(value)):
        return None
    return json.dumps(_plain(value), **options)


def _urlencode(query: Any, doseq: bool = False) -> str | Unknown:
    """``urlencode(query)`` of text pairs if the budget allows it (each byte may become
    ``%XX``)."""
    pairs = query.items() if isinstance(query, dict) else query
    size = sum(len(_text(k)) + len(_text(v)) + 2 for k, v in pairs)
    if not expansions.spend(3 * size):
        return Unknown("…")
    return urlencode(query, doseq=doseq)


def _built(text: str) -> str | Unknown:
    """``text``, built from known parts, if the budget allows it."""
    return text if expansions.spend(len(text)) else Unknown("…")


def _plain(v: Any) -> Any:
    """Plain JSON-able data; Unknowns become their placeholder text."""
    if isinstance(v, dict):
        return {_text(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return _text(v)


#: ``try: ... except* E:`` (Python 3.11+), read like ``try``.
_TRY_STAR = getattr(ast, "TryStar", None)

# The node classes ``stmt``, ``expr`` and ``call`` test for, bound once: a module global
# costs one lookup where ``ast.X`` costs two, and reading a node makes several tests.
_AnnAssign = ast.AnnAssign
_Assign = ast.Assign
_AsyncFor = ast.AsyncFor
_AsyncFunctionDef = ast.AsyncFunctionDef
_AsyncWith = ast.AsyncWith
_Attribute = ast.Attribute
_AugAssign = ast.AugAssign
_Await = ast.Await
_BinOp = ast.BinOp
_BoolOp = ast.BoolOp
_Call = ast.Call
_ClassDef = ast.ClassDef
_Compare = ast.Compare
_Constant = ast.Constant
_Dict = ast.Dict
_DictComp = ast.DictComp
_Expr = ast.Expr
_For = ast.For
_FunctionDef = ast.FunctionDef
_GeneratorExp = ast.GeneratorExp
_If = ast.If
_IfExp = ast.IfExp
_Import = ast.Import
_ImportFrom = ast.ImportFrom
_JoinedStr = ast.JoinedStr
_Lambda = ast.Lambda
_List = ast.List
_ListComp = ast.ListComp
_Name = ast.Name
_NamedExpr = ast.NamedExpr
_ReturnStmt = ast.Return
_Set = ast.Set
_SetComp = ast.SetComp
_Slice = ast.Slice
_Starred = ast.Starred
_Subscript = ast.Subscript
_Try = ast.Try
_Tuple = ast.Tuple
_UnaryOp = ast.UnaryOp
_While = ast.While
_With = ast.With

_OPAQUE = (Unknown, Mod, Obj, Bound, Func, LocalMod, Cls, Instance, Super)


def _known(v: Any) -> bool:
    return not isinstance(v, _OPAQUE)


def _truth(v: Any) -> bool | None:
    """Truth value of ``v`` when the reader can know it, else None.

    Containers count only when non-empty: an empty one may have been filled
    by code the reader does not follow.
    """
    if v is None or isinstance(v, (bool, int, float, str)):
        return bool(v)
    if isinstance(v, (list, tuple, dict)) and v:
        return True
    return None


class _Reader:
    def __init__(
        self,
        files: FileLookup,
        modules: ModuleLookup | None = None,
        argv: list[str] | None = None,
        environ: dict[str, str] | None = None,
        path: list[str] | None = None,
    ):
        self.files = files
        self.modules = modules
        self.out: list[Request] = []
        self.mult = 1
        self.mult_known = True
        self.steps = 0
        self.depth = 0
        self.written: dict[str, str] = {}
        self.argv = argv
        self.environ: dict[str, Any] = dict(environ or {})
        self.sys_path: list[str] = list(path or [""])
        self.loaded: dict[str, LocalMod | None] = {}
        self.opener: Obj | None = None
        self.selves: list[Instance] = []
        self.shell_calls = 0
        # Code read from inside other code (subprocess -> python3 -c) gets a smaller budget.
        self.budget = _MAX_STEPS >> (3 * _NESTING[0])

    def file(self, path: str) -> str | None:
        """An earlier file's content: written by this code first, then by earlier steps."""
        if path in self.written:
            return self.written[path]
        return self.files(path)

    # ------------------------------------------------------------------ statements
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

    # ------------------------------------------------------------------ expressions
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

    # ------------------------------------------------------------------ calls
    def call(self, node: ast.Call, env: dict[str, Any]) -> Any:
        f = node.func
        func = self.expr(f, env)
        if type(f) is _Name and f.id == "exec" and "exec" not in env:
            # exec(open("/tmp/client.py").read()): the file's code runs in these globals.
            code = self.expr(node.args[0], env) if node.args else None
            body = _parse_body(code) if isinstance(code, str) else None
            if body is not None and self.depth < _MAX_DEPTH:
                self.depth += 1
                try:
                    self.run(body, env)
                except (_Return, _LoopExit):
                    pass
                finally:
                    self.depth -= 1
            return None
        args: list[Any] = []
        for a in node.args:
            if type(a) is _Starred:
                v = self.expr(a.value, env)
                args.extend(v if isinstance(v, (list, tuple)) else [v])
            else:
                args.append(self.expr(a, env))
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            v = self.expr(kw.value, env)
            if kw.arg is None:
                if isinstance(v, dict):
                    kwargs.update({str(k): x for k, x in v.items()})
            else:
                kwargs[kw.arg] = v
        return self.invoke(func, args, kwargs, node)

    def invoke(self, func: Any, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
        """Call the value ``func`` (a function, module function, method, class ...)."""
        # Exact-type tests: none of these classes has subclasses.
        kind = type(func)
        if kind is Mod:
            return self.call_mod(func.name, args, kwargs, node)
        if kind is Bound:
            obj = func.obj
            if type(obj) is Instance or type(obj) is Super:
                return self.call_instance(obj, func.name, args, kwargs, node)
            return self.call_method(obj, func.name, args, kwargs, node)
        if kind is Func:
            return self.call_func(func, args, kwargs)
        if kind is Obj and func.kind == "partial" and self.depth < _MAX_DEPTH:
            a = func.attrs
            self.depth += 1
            try:
                return self.invoke(a["func"], [*a["args"], *args], {**a["kwargs"], **kwargs}, node)
            finally:
                self.depth -= 1
        if kind is Cls:
            return self.instantiate(func, args, kwargs)
        if callable(func) and func in _BUILTIN_FUNCS:
            try:
                return func(self, args, kwargs)
            except (TypeError, ValueError, IndexError, KeyError, OverflowError):
                return Unknown("", node)
        return Unknown("", node)

    def instantiate(self, cls: Cls, args: list[Any], kwargs: dict[str, Any]) -> Instance:
        base = cls.session_base()
        session = None
        if base is not None:
            session = self.call_mod(base.name, [], {}, None)
            if not isinstance(session, Obj):
                session = None
        inst = Instance(cls, session)
        init = cls.lookup("__init__")
        if isinstance(init, Func):
            self.selves.append(inst)
            try:
                self.call_func(init, [inst, *args], kwargs)
            finally:
                self.selves.pop()
        return inst

    def call_instance(
        self,
        obj: Instance | Super,
        name: str,
        args: list[Any],
        kwargs: dict[str, Any],
        node: ast.Call | None,
    ) -> Any:
        inst = obj.inst if isinstance(obj, Super) else obj
        found = inst.cls.lookup(name, skip=1 if isinstance(obj, Super) else 0)
        if isinstance(found, Func):
            deco = _decorators(found)
            if "staticmethod" in deco:
                return self.call_func(found, args, kwargs)
            first: Any = inst.cls if "classmethod" in deco else inst
            self.selves.append(inst)
            try:
                return self.call_func(found, [first, *args], kwargs)
            finally:
                self.selves.pop()
        if isinstance(found, Cls):
            return self.instantiate(found, args, kwargs)
        if inst.session is None:
            return Unknown(name)
        if not isinstance(obj, Super) and name in _METHODS:
            # requests' Session.get(...) goes through self.request(...): honour an override.
            override = inst.cls.lookup("request")
            if isinstance(override, Func):
                url = args[0] if args else kwargs.pop("url", None)
                self.selves.append(inst)
                try:
                    return self.call_func(override, [inst, name.upper(), url, *args[1:]], kwargs)
                finally:
                    self.selves.pop()
        return self.call_method(inst.session, name, args, kwargs, node)

    def call_func(self, func: Func, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if self.depth >= _MAX_DEPTH:
            return Unknown(getattr(func.node, "name", "lambda"))
        fn = func.node
        local = dict(func.closure)
        params = fn.args
        positional = [*params.posonlyargs, *params.args]
        defaults = [None] * (len(positional) - len(params.defaults)) + list(params.defaults)
        for i, p in enumerate(positional):
            if i < len(args):
                local[p.arg] = args[i]
            elif p.arg in kwargs:
                local[p.arg] = kwargs[p.arg]
            elif defaults[i] is not None:
                local[p.arg] = self.expr(defaults[i], func.closure)
            else:
                local[p.arg] = Unknown(p.arg)
        for p, d in zip(params.kwonlyargs, params.kw_defaults, strict=True):
            local[p.arg] = kwargs.get(
                p.arg, self.expr(d, func.closure) if d is not None else Unknown(p.arg)
            )
        if params.vararg:
            local[params.vararg.arg] = tuple(args[len(positional) :])
        if params.kwarg:
            local[params.kwarg.arg] = {
                k: v for k, v in kwargs.items() if k not in {p.arg for p in positional}
            }
        self.depth += 1
        try:
            if isinstance(fn, ast.Lambda):
                return self.expr(fn.body, local)
            self.run(fn.body, local)
            return None
        except _Return as r:
            return r.value
        except _LoopExit:
            return None
        finally:
            self.depth -= 1
            # ``global TOKEN`` inside the function: its assignments reach the module.
            for name in _globals_of(fn):
                if name in local:
                    func.closure[name] = local[name]

    def call_mod(
        self, name: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call | None
    ) -> Any:
        short = name.split(".")
        last = short[-1]
        lib = short[0]
        if name in ("urllib.request.Request", "urllib2.Request", "urllib.request.Request.__init__"):
            return self.make_request(args, kwargs)
        if last == "urlopen" and lib in ("urllib", "urllib2", "urlopen"):
            return self.urlopen(args, kwargs)
        # JSON next: the commonest calls after urlopen / Request (no branch above takes them).
        if name == "json.dump" and len(args) >= 2:
            target = args[1]
            if isinstance(target, Obj) and target.kind == "file":
                path = target.attrs["path"]
                try:
                    text = _json_text(args[0]) or ""
                except (TypeError, ValueError):
                    text = ""
                self.written[path] = self.written.get(path, "") + text
            return None
        if name in ("json.dumps",):
            try:
                text = _json_text(
                    args[0],
                    **{
                        k: v
                        for k, v in kwargs.items()
                        if k in ("indent", "separators", "sort_keys")
                    },
                )
                return Unknown("…") if text is None else text
            except (TypeError, ValueError, IndexError):
                return Unknown("json")
        if name == "json.loads" and args and isinstance(args[0], str):
            try:
                return json.loads(args[0])
            except ValueError:
                return Unknown("json")
        if name in (
            "urllib.request.build_opener",
            "urllib2.build_opener",
            "urllib.request.OpenerDirector",
        ):
            return Obj("opener")
        if lib in ("requests", "httpx") and last in _METHODS:
            return self.send_lib(
                lib, last.upper(), args[0] if args else kwargs.get("url"), kwargs, {}
            )
        if lib in ("requests", "httpx") and last in ("request", "stream"):
            method = args[0] if args else kwargs.get("method", "GET")
            url = args[1] if len(args) > 1 else kwargs.get("url")
            return self.send_lib(lib, _text(method).upper(), url, kwargs, {})
        if lib in ("requests", "httpx", "aiohttp") and last in _SESSION_CLASSES:
            headers = kwargs.get("headers")
            return Obj(
                "session",
                lib=lib,
                headers=dict(headers) if isinstance(headers, dict) else {},
                base_url=kwargs.get("base_url"),
                auth=kwargs.get("auth"),
            )
        if name in (
            "http.client.HTTPConnection",
            "http.client.HTTPSConnection",
            "httplib.HTTPConnection",
            "httplib.HTTPSConnection",
        ):
            host = _text(args[0]) if args else _text(kwargs.get("host", ""))
            port = args[1] if len(args) > 1 else kwargs.get("port")
            if isinstance(port, str) and port.isdigit():
                port = int(port)
            scheme = "https" if name.endswith("HTTPSConnection") else "http"
            return Obj(
                "conn",
                host=host,
                port=port if isinstance(port, int) else None,
                scheme=scheme,
                pending=None,
                last=None,
            )
        if name.startswith("os.path.") and args and all(isinstance(a, str) for a in args):
            return _os_path(last, args)
        if name == "os.chdir" and args and isinstance(args[0], str):
            self.sys_path.insert(0, args[0])
            return None
        if name in ("os.getenv", "os.environ.get") and args:
            key = _text(args[0])
            if key in self.environ:
                return self.environ[key]
            return args[1] if len(args) > 1 else kwargs.get("default", Unknown(key))
        if name in ("urllib.parse.urlparse", "urllib.parse.urlsplit", "urlparse.urlparse"):
            return _url_parts(args[0] if args else kwargs.get("url"))
        if name in ("urllib.parse.urljoin", "urlparse.urljoin") and len(args) >= 2:
            return _urljoin(args[0], args[1])
        if name in _SHELL_CALLS:
            return self.shell_out(name, args, kwargs)
        if name in ("asyncio.run", "asyncio.wait_for", "asyncio.ensure_future") and args:
            return args[0]
        if name in ("asyncio.gather", "asyncio.wait"):
            return list(args)
        if name in ("asyncio.get_event_loop", "asyncio.new_event_loop"):
            return Obj("loop")
        if name in ("urllib.request.install_opener", "urllib2.install_opener") and args:
            self.opener = args[0] if isinstance(args[0], Obj) else None
            return None
        if name == "functools.partial" and args:
            return Obj("partial", func=args[0], args=list(args[1:]), kwargs=dict(kwargs))
        if name in ("argparse.ArgumentParser", "optparse.OptionParser"):
            return Obj("argparser", specs=[])
        if name in ("importlib.import_module",) and args and isinstance(args[0], str):
            return self.local_module(args[0]) or Mod(args[0])
        if name in ("socket.socket",):
            return Obj("socket", host=None, port=None)
        if name == "socket.create_connection":
            addr = args[0] if args else kwargs.get("address")
            sock = Obj("socket", host=None, port=None)
            self.connect(sock, addr)
            return sock
        if name in ("urllib.parse.urlencode", "urllib.urlencode") and args:
            data = args[0]
            if isinstance(data, dict):
                return _urlencode(
                    {_text(k): _text(v) for k, v in data.items()}, doseq=bool(kwargs.get("doseq"))
                )
            if isinstance(data, (list, tuple)):
                return _urlencode(
                    [
                        (_text(p[0]), _text(p[1]))
                        for p in data
                        if isinstance(p, (list, tuple)) and len(p) == 2
                    ]
                )
        if name in ("urllib.parse.quote", "urllib.parse.quote_plus", "urllib.quote") and args:
            text = _text(args[0])
            if not expansions.spend(3 * len(text)):  # each byte may become %XX
                return Unknown("…")
            return quote(
                text,
                safe=_text(kwargs.get("safe", "/")) if name.endswith("quote") else "",
            )
        if lib == "base64" and args and isinstance(args[0], str):
            try:
                if "encode" in last:
                    fn = {
                        "b64encode": base64.b64encode,
                        "urlsafe_b64encode": base64.urlsafe_b64encode,
                        "b32encode": base64.b32encode,
                    }.get(last)
                    if fn:
                        if not expansions.spend(2 * len(args[0])):  # 4/3, or 8/5 for b32
                            return Unknown("…")
                        return fn(args[0].encode()).decode()
                if "decode" in last:
                    fn2 = {
                        "b64decode": base64.b64decode,
                        "urlsafe_b64decode": base64.urlsafe_b64decode,
                    }.get(last)
                    if fn2:
                        return fn2(args[0] + "==").decode("utf-8", "replace")
            except (ValueError, UnicodeError):
                return Unknown("", node)
        if name in (
            "concurrent.futures.ThreadPoolExecutor",
            "concurrent.futures.ProcessPoolExecutor",
            "multiprocessing.Pool",
            "multiprocessing.pool.ThreadPool",
        ):
            return Obj("executor")
        if name in ("threading.Thread",):
            target = kwargs.get("target")
            targs = kwargs.get("args", ())
            if isinstance(target, Func):
                return Obj(
                    "thread",
                    target=target,
                    args=tuple(targs) if isinstance(targs, (list, tuple)) else (),
                )
            return Obj("thread", target=None, args=())
        if name in ("string.ascii_lowercase",):
            return "abcdefghijklmnopqrstuvwxyz"
        if name == "itertools.product" and args:
            return self.product(args, kwargs)
        return Unknown("", node)

    def shell_out(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """``subprocess.run(["curl", ...])`` / ``os.system("curl ...")``: the shell's requests."""
        cmd = args[0] if args else kwargs.get("args", kwargs.get("cmd"))
        self.shell_calls += 1
        if _NESTING[0] >= 2 or cmd is None or self.shell_calls > 64:
            return Unknown(name)
        from monsearch.views.http_extract import extract_requests
        from monsearch.views.shell import Command, run_script

        stdin = kwargs.get("input")
        _NESTING[0] += 1
        try:
            if isinstance(cmd, (list, tuple)):
                argv = [_text(a) for a in cmd]
                if (
                    len(argv) >= 3
                    and argv[0].rsplit("/", 1)[-1] in ("bash", "sh")
                    and (argv[1] == "-c")
                ):
                    cmds, _ = run_script(argv[2], self.file)
                else:
                    cmds = [Command(argv=argv, raw=" ".join(argv))]
            else:
                cmds, _ = run_script(_text(cmd), self.file)
            if isinstance(stdin, str) and len(cmds) == 1 and cmds[0].stdin is None:
                cmds[0].stdin = stdin
            for req in extract_requests(cmds, self.file):
                req.repeat = min(req.repeat * self.mult, _MAX_REPEAT)
                req.repeat_known = req.repeat_known and self.mult_known
                if len(self.out) < 2000:
                    self.out.append(req)
        finally:
            _NESTING[0] -= 1
        return Obj("response") if name != "os.system" else Unknown(name)

    def product(self, args: list[Any], kwargs: dict[str, Any]) -> Any:
        total = 1
        for a in args:
            _, c, _ = self.iterate(a)
            total *= c
        total **= kwargs.get("repeat", 1) if isinstance(kwargs.get("repeat", 1), int) else 1
        first = tuple((self.iterate(a)[0] or [Unknown("item")])[0] for a in args)
        return Obj("lazy_iter", count=total, first=first)

    def call_method(
        self, obj: Any, name: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call | None
    ) -> Any:
        if isinstance(obj, str):
            return _str_method(obj, name, args, kwargs)
        if isinstance(obj, dict):
            if name == "update" and args and isinstance(args[0], dict):
                obj.update(args[0])
                return None
            if name == "update":
                obj.update({k: v for k, v in kwargs.items()})
                return None
            if name == "get" and args:
                if obj is self.environ and len(args) == 1 and args[0] not in obj:
                    return Unknown(_text(args[0]))  # the process environment may have it
                return obj.get(args[0], args[1] if len(args) > 1 else None)
            if name == "copy":
                return dict(obj)
            if name in ("items", "keys", "values"):
                return list(getattr(obj, name)())
            if name == "setdefault" and args:
                return obj.setdefault(args[0], args[1] if len(args) > 1 else None)
            return Unknown("", node)
        if isinstance(obj, list):
            if name == "append" and args:
                obj.append(args[0])
            elif name == "extend" and args and isinstance(args[0], (list, tuple)):
                if expansions.spend(len(args[0])):  # x.extend(x) in a loop doubles it
                    obj.extend(args[0])
            elif name == "insert" and len(args) >= 2 and isinstance(args[0], int):
                obj.insert(args[0], args[1])
            return None
        if not isinstance(obj, Obj):
            return Unknown("", node)
        kind = obj.kind
        # Most method calls are on responses (``r.read()``), which no branch below takes.
        if kind == "response":
            return Unknown("", node)
        if kind == "request":
            if name in ("add_header", "add_unredirected_header") and len(args) >= 2:
                obj.attrs["headers"][_text(args[0])] = args[1]
            return None
        if kind == "opener" and name == "open":
            return self.urlopen(args, kwargs, obj)
        if kind == "loop" and name == "run_until_complete" and args:
            return args[0]
        if kind == "argparser":
            if name in ("add_argument", "add_option"):
                obj.attrs["specs"].append((args, kwargs))
                return None
            if name in ("parse_args", "parse_known_args"):
                ns = _parse_cli(obj.attrs["specs"], self.argv)
                return (ns, []) if name == "parse_known_args" else ns
            return Unknown("", node)
        if kind == "session":
            if name in _METHODS:
                return self.send_lib(
                    obj.attrs["lib"],
                    name.upper(),
                    args[0] if args else kwargs.get("url"),
                    kwargs,
                    obj.attrs,
                )
            if name in ("request", "stream"):
                method = args[0] if args else kwargs.get("method", "GET")
                url = args[1] if len(args) > 1 else kwargs.get("url")
                return self.send_lib(
                    obj.attrs["lib"], _text(method).upper(), url, kwargs, obj.attrs
                )
            return Unknown("", node)
        if kind == "conn":
            if name == "request":
                method = _text(args[0]) if args else _text(kwargs.get("method", "GET"))
                path = _text(args[1]) if len(args) > 1 else _text(kwargs.get("url", "/"))
                body = args[2] if len(args) > 2 else kwargs.get("body")
                headers = args[3] if len(args) > 3 else kwargs.get("headers", {})
                obj.attrs["last"] = self.emit_conn(
                    obj, method, path, body, headers if isinstance(headers, dict) else {}
                )
            elif name == "putrequest":
                obj.attrs["pending"] = (
                    _text(args[0]) if args else "GET",
                    _text(args[1]) if len(args) > 1 else "/",
                    {},
                )
            elif name == "putheader" and len(args) >= 2 and obj.attrs.get("pending"):
                obj.attrs["pending"][2][_text(args[0])] = args[1]
            elif name == "endheaders" and obj.attrs.get("pending"):
                m, p, h = obj.attrs["pending"]
                body = args[0] if args else kwargs.get("message_body")
                obj.attrs["last"] = self.emit_conn(obj, m, p, body, h)
                obj.attrs["pending"] = None
            elif name == "send" and args and isinstance(obj.attrs.get("last"), Request):
                # putrequest / putheader / endheaders, then the body with send().
                last: Request = obj.attrs["last"]
                last.body += _text(args[0])
            elif name == "set_tunnel":
                pass
            elif name == "getresponse":
                return Obj("response")
            return None
        if kind == "socket":
            if name == "connect" and args:
                self.connect(obj, args[0])
            elif name in ("send", "sendall") and args and obj.attrs.get("host"):
                data = _text(args[0])
                for req in parse_raw_http(
                    data, obj.attrs["host"], obj.attrs.get("port"), "python_socket"
                ):
                    self.record(req)
            return None
        if kind == "executor" and name == "map" and args and isinstance(args[0], Func):
            fn = args[0]
            iterables = args[1:]
            if not iterables:
                return []
            items, count, known = self.iterate(iterables[0])
            return self.map_func(
                fn, items, count, known, [self.iterate(x)[0] for x in iterables[1:]]
            )
        if (
            kind == "executor"
            and name in ("submit", "apply_async")
            and args
            and isinstance(args[0], Func)
        ):
            rest = args[1:]
            if name == "apply_async" and rest and isinstance(rest[0], (list, tuple)):
                rest = list(rest[0])
            return self.call_func(args[0], rest, {})
        if kind == "thread" and name == "start" and isinstance(obj.attrs.get("target"), Func):
            return self.call_func(obj.attrs["target"], list(obj.attrs.get("args", ())), {})
        if kind == "file":
            if name == "write" and args:
                path = obj.attrs["path"]
                text = _text(args[0])
                if expansions.spend(len(text)):  # appends in a loop add up
                    self.written[path] = self.written.get(path, "") + text
            elif name == "read":
                content = self.files(obj.attrs["path"])
                return content if content is not None else Unknown("", node)
            return None
        return Unknown("", node)

    def map_func(
        self,
        fn: Func,
        items: list[Any] | None,
        count: int,
        known: bool,
        extra: list[list[Any] | None],
    ) -> Any:
        if items is not None and count <= UNROLL_LIMIT:
            out = []
            for k, it in enumerate(items):
                more = [(e[k] if e is not None and k < len(e) else Unknown("arg")) for e in extra]
                out.append(self.call_func(fn, [it, *more], {}))
            return out
        saved = (self.mult, self.mult_known)
        self.mult = min(self.mult * count, _MAX_REPEAT)
        self.mult_known = self.mult_known and known
        try:
            self.call_func(fn, [items[0] if items else Unknown("item")], {})
        finally:
            self.mult, self.mult_known = saved
        return Unknown("map")

    # ------------------------------------------------------------------ recording
    def connect(self, sock: Obj, addr: Any) -> None:
        if isinstance(addr, (tuple, list)) and len(addr) >= 2:
            sock.attrs["host"] = _text(addr[0]).lower()
            sock.attrs["port"] = addr[1] if isinstance(addr[1], int) else None

    def make_request(self, args: list[Any], kwargs: dict[str, Any]) -> Obj:
        url = args[0] if args else kwargs.get("url", "")
        data = args[1] if len(args) > 1 else kwargs.get("data")
        headers = args[2] if len(args) > 2 else kwargs.get("headers", {})
        method = (
            kwargs.get("method") if "method" in kwargs else (args[5] if len(args) > 5 else None)
        )
        return Obj(
            "request",
            url=url,
            data=data,
            headers=dict(headers) if isinstance(headers, dict) else {},
            method=method,
        )

    def urlopen(self, args: list[Any], kwargs: dict[str, Any], opener: Obj | None = None) -> Obj:
        target = args[0] if args else kwargs.get("url", kwargs.get("fullurl"))
        data = args[1] if len(args) > 1 else kwargs.get("data")
        opener = opener or self.opener
        extra: dict[Any, Any] = {}
        added = opener.attrs.get("addheaders") if opener is not None else None
        if isinstance(added, (list, tuple)):
            for pair in added:
                if isinstance(pair, (list, tuple)) and len(pair) == 2:
                    extra[_text(pair[0])] = pair[1]
        if isinstance(target, Obj) and target.kind == "request":
            a = target.attrs
            body = a.get("data") if data is None else data
            method = a.get("method")
            if isinstance(a.get("get_method"), Func):
                method = self.call_func(a["get_method"], [], {})
            method_s = (
                _text(method).upper()
                if method is not None and _known(method)
                else ("POST" if body is not None else "GET")
            )
            if isinstance(method, Unknown):
                method_s = "{" + method.text + "}"
            headers = a.get("headers", {})
            if extra:
                headers = {**extra, **headers} if isinstance(headers, dict) else extra
            self.record_parts("python_urllib", method_s, a.get("url"), headers, body)
        else:
            method_s = "POST" if data is not None else "GET"
            self.record_parts("python_urllib", method_s, target, extra, data)
        return Obj("response")

    def send_lib(
        self, lib: str, method: str, url: Any, kwargs: dict[str, Any], session: dict[str, Any]
    ) -> Obj:
        client = _LIB_CLIENT.get(lib, "python_httpx")
        headers = dict(session.get("headers") or {})
        if isinstance(kwargs.get("headers"), dict):
            headers.update(kwargs["headers"])
        base = session.get("base_url")
        if base is not None and isinstance(url, str) and not re.match(r"^[a-z]+://", url):
            url = _text(base).rstrip("/") + "/" + url.lstrip("/")
        body: Any = None
        form: dict[str, str] = {}
        content_type = None
        if "json" in kwargs and kwargs["json"] is not None:
            body = _json_text(kwargs["json"])
            if body is None:
                body = Unknown("…")
            content_type = "application/json"
        elif "data" in kwargs and kwargs["data"] is not None or "content" in kwargs:
            data = kwargs.get("data", kwargs.get("content"))
            if isinstance(data, dict):
                form = {_text(k): _text(v) for k, v in data.items()}
                body = _urlencode(form)
                content_type = "application/x-www-form-urlencoded"
            else:
                body = data
        files: list[dict[str, str]] = []
        if isinstance(kwargs.get("files"), dict):
            for field, spec in kwargs["files"].items():
                files.append(self.file_spec(_text(field), spec))
            content_type = "multipart/form-data"
        params = kwargs.get("params")
        if isinstance(params, dict) and url is not None:
            qs = _text(_urlencode({_text(k): _text(v) for k, v in params.items()}))
            u = _text(url)
            url = f"{u}{'&' if '?' in u else '?'}{qs}"
        if content_type and not any(k.lower() == "content-type" for k in headers):
            headers["Content-Type"] = content_type
        req = self.record_parts(client, method, url, headers, body)
        if req is not None:
            if form:
                req.form = form
            if files:
                req.files = files
                req.form = form
            auth = kwargs.get("auth", session.get("auth"))
            if isinstance(auth, (tuple, list)) and len(auth) == 2:
                req.auth_user = _text(auth[0])
                req.auth_password = _text(auth[1])
        return Obj("response")

    def file_spec(self, field: str, spec: Any) -> dict[str, str]:
        if isinstance(spec, (tuple, list)) and spec:
            name = _text(spec[0])
            content = spec[1] if len(spec) > 1 else ""
            if isinstance(content, Obj) and content.kind == "file":
                content = self.files(content.attrs["path"]) or ""
            return {
                "field": field,
                "filename": name,
                "content": _text(content) if _known(content) else "",
            }
        if isinstance(spec, Obj) and spec.kind == "file":
            path = spec.attrs["path"]
            return {
                "field": field,
                "filename": path.rsplit("/", 1)[-1],
                "content": self.files(path) or "",
            }
        return {
            "field": field,
            "filename": field,
            "content": _text(spec) if isinstance(spec, str) else "",
        }

    def emit_conn(
        self, conn: Obj, method: str, path: str, body: Any, headers: dict[Any, Any]
    ) -> Request | None:
        host = conn.attrs.get("host", "")
        port = conn.attrs.get("port")
        hp = host if "://" in host else f"{conn.attrs['scheme']}://{host}"
        if port and f":{port}" not in hp.split("//", 1)[-1]:
            hp += f":{port}"
        url = (
            path
            if path.startswith(("http://", "https://"))
            else hp + (path if path.startswith("/") else "/" + path)
        )
        return self.record_parts("python_http_client", method.upper(), url, headers, body)

    def record_parts(
        self, client: str, method: str, url: Any, headers: dict[Any, Any], body: Any
    ) -> Request | None:
        if url is None:
            return None
        u = _text(url)
        if not u:
            return None
        if isinstance(body, Obj) and body.kind == "file":
            body = self.files(body.attrs["path"]) or ""
        body_text = (
            ""
            if body is None
            else (
                _text(body)
                if not isinstance(body, (dict, list))
                else _text(_urlencode({_text(k): _text(v) for k, v in body.items()}))
                if isinstance(body, dict)
                else _text(body)
            )
        )
        hdrs = (
            {_text(k).lower(): _text(v) for k, v in headers.items()}
            if isinstance(headers, dict)
            else {}
        )
        req = Request(
            method=method or "GET",
            url=normalise_url(u),
            client=client,
            headers=hdrs,
            body=body_text,
        )
        self.record(req)
        return req

    def record(self, req: Request) -> None:
        req.repeat = self.mult
        req.repeat_known = self.mult_known
        if len(self.out) < 2000:
            self.out.append(req)


class _LoopExit(Exception):
    pass


#: Top-level modules that are never the agent's own file (besides the standard library).
_LIBRARIES = frozenset(
    [
        "requests",
        "httpx",
        "urllib3",
        "aiohttp",
        "bs4",
        "lxml",
        "jwt",
        "yaml",
        "numpy",
        "pandas",
        "websocket",
        "websockets",
        "paramiko",
        "pwn",
        "Crypto",
        "cryptography",
        "flask",
        "django",
        "fastapi",
        "pydantic",
        "click",
        "rich",
        "tqdm",
        "colorama",
        "termcolor",
        "dns",
        "scapy",
        "socks",
        "certifi",
        "chardet",
        "charset_normalizer",
        "idna",
        "simplejson",
        "ujson",
        "orjson",
        "jose",
        "itsdangerous",
        "werkzeug",
        "jinja2",
        "boto3",
        "botocore",
        "grpc",
        "gql",
        "selenium",
        "playwright",
        "mechanize",
        "pycurl",
        "httplib2",
        "sseclient",
        "urllib2",
        "httplib",
        "urlparse",
    ]
)
#: Top-level names that are never the agent's own module: libraries and the stdlib.
_NOT_OWN = _LIBRARIES | sys.stdlib_module_names
_SHELL_CALLS = frozenset(
    {
        "subprocess.run",
        "subprocess.call",
        "subprocess.check_call",
        "subprocess.check_output",
        "subprocess.Popen",
        "subprocess.getoutput",
        "subprocess.getstatusoutput",
        "os.system",
        "os.popen",
        "commands.getoutput",
    }
)
#: Nesting of Python -> shell -> Python readings (subprocess running python3 -c ...).
_NESTING = [0]


_GLOBALS: dict[int, tuple[ast.AST, tuple[str, ...]]] = {}
_HOLDS_STATEMENTS = (ast.stmt, ast.excepthandler, ast.match_case)


def _globals_of(fn: ast.AST) -> tuple[str, ...]:
    """Names a function declares ``global`` (not in nested functions), cached per node."""
    hit = _GLOBALS.get(id(fn))
    if hit is not None and hit[0] is fn:
        return hit[1]
    names: list[str] = []
    todo = list(getattr(fn, "body", ()) if not isinstance(fn, ast.Lambda) else ())
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Global):
            names.extend(node.names)
        elif not isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
        ):
            # Only statements hold a ``global``, and they sit in list fields (body,
            # orelse, handlers, cases...): skipping expressions keeps the walk short
            # and visits the statements in the same order.
            for field in node._fields:
                value = getattr(node, field, None)
                if type(value) is list:
                    todo.extend(x for x in value if isinstance(x, _HOLDS_STATEMENTS))
    if len(_GLOBALS) > 4096:
        _GLOBALS.clear()
    _GLOBALS[id(fn)] = (fn, tuple(names))
    return _GLOBALS[id(fn)][1]


def _decorators(func: Func) -> frozenset[str]:
    node = func.node
    names = set()
    for d in getattr(node, "decorator_list", ()):
        if isinstance(d, ast.Name):
            names.add(d.id)
        elif isinstance(d, ast.Attribute):
            names.add(d.attr)
    return frozenset(names)


def _parse_cli(specs: list[tuple[list[Any], dict[str, Any]]], argv: list[str] | None) -> Obj:
    """``argparse`` arguments: defaults, then ``--opt value`` / ``--opt=value`` / positionals
    from ``argv`` when known (unknown positionals stay unknown)."""
    values: dict[str, Any] = {}
    options: dict[str, tuple[str, dict[str, Any]]] = {}
    positional: list[tuple[str, dict[str, Any]]] = []
    for args, kw in specs:
        names = [a for a in args if isinstance(a, str)]
        if not names:
            continue
        longest = max(names, key=len)
        dest = kw.get("dest") if isinstance(kw.get("dest"), str) else longest.lstrip("-")
        dest = dest.replace("-", "_")
        if names[0].startswith("-"):
            action = kw.get("action")
            default = kw.get("default", False if action == "store_true" else None)
            values[dest] = default
            for n in names:
                options[n] = (dest, kw)
        else:
            values[dest] = kw.get("default", Unknown(dest))
            positional.append((dest, kw))
    if argv is not None:
        rest = list(argv[1:])
        k = 0
        while rest and k < 256:
            k += 1
            tok = rest.pop(0)
            name, eq, inline = tok.partition("=")
            if tok.startswith("-") and name in options:
                dest, kw = options[name]
                if kw.get("action") in ("store_true", "store_false"):
                    values[dest] = kw.get("action") == "store_true"
                elif eq:
                    values[dest] = _cli_value(inline, kw)
                elif rest:
                    values[dest] = _cli_value(rest.pop(0), kw)
            elif not tok.startswith("-") and positional:
                dest, kw = positional.pop(0)
                values[dest] = _cli_value(tok, kw)
    return Obj("namespace", **values)


def _cli_value(text: str, kw: dict[str, Any]) -> Any:
    if kw.get("type") is _b_int:
        with contextlib.suppress(ValueError):
            return int(text)
    return text


def _os_path(name: str, args: list[str]) -> Any:
    try:
        if name == "join":
            return posixpath.join(*args)
        if name in ("dirname", "basename", "normpath"):
            return getattr(posixpath, name)(args[0])
        if name in ("abspath", "realpath"):
            a = args[0]
            return (
                posixpath.normpath(a)
                if a.startswith("/")
                else posixpath.normpath(posixpath.join("/workspace", a))
            )
        if name == "expanduser":
            return "/root" + args[0][1:] if args[0].startswith("~") else args[0]
    except (TypeError, ValueError, IndexError):
        pass
    return Unknown(f"os.path.{name}")


def _url_parts(url: Any) -> Any:
    if not isinstance(url, str):
        return Unknown("urlparse")
    try:
        sp = urlsplit(url)
        port = sp.port
    except ValueError:
        return Unknown("urlparse")
    return Obj(
        "urlparts",
        scheme=sp.scheme,
        netloc=sp.netloc,
        hostname=sp.hostname,
        port=port,
        path=sp.path,
        query=sp.query,
        fragment=sp.fragment,
        username=sp.username,
        password=sp.password,
    )


def _urljoin(base: Any, rel: Any) -> Any:
    if not isinstance(base, str):
        return Unknown("urljoin")
    mark = "\x00rel\x00"
    try:
        return urljoin(base, rel if isinstance(rel, str) else mark).replace(mark, _text(rel))
    except ValueError:
        return Unknown("urljoin")


_MODULE_CONSTS: dict[str, Any] = {
    "string.ascii_lowercase": "abcdefghijklmnopqrstuvwxyz",
    "string.ascii_uppercase": "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "string.ascii_letters": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "string.digits": "0123456789",
    "string.hexdigits": "0123456789abcdefABCDEF",
}


def _identical(a: Any, b: Any) -> bool | None:
    """``a is b`` for ``None`` / ``True`` / ``False`` comparisons, when knowable."""
    for x, y in ((a, b), (b, a)):
        if y is None or isinstance(y, bool):
            if isinstance(x, Unknown):
                return None
            return x is y
    return None


def _compare(op: ast.cmpop, a: Any, b: Any) -> bool:
    if isinstance(op, ast.Eq):
        return a == b
    if isinstance(op, ast.NotEq):
        return a != b
    if isinstance(op, ast.Lt):
        return a < b
    if isinstance(op, ast.LtE):
        return a <= b
    if isinstance(op, ast.Gt):
        return a > b
    if isinstance(op, ast.GtE):
        return a >= b
    if isinstance(op, ast.In):
        return a in b
    if isinstance(op, ast.NotIn):
        return a not in b
    raise TypeError


def _str_method(s: str, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    if name in ("encode", "decode"):
        return s
    if name in ("strip", "rstrip", "lstrip") and not args:
        return getattr(s, name)()
    if name in ("upper", "lower", "title", "capitalize"):
        return getattr(s, name)() if expansions.spend(len(s)) else Unknown("…")
    if name in ("strip", "rstrip", "lstrip") and args and isinstance(args[0], str):
        return getattr(s, name)(args[0])
    if name == "format":
        if expansions.HUGE_WIDTH.search(s):  # "{:>999999999}": not built
            return Unknown("…")
        try:
            return _built(
                s.format(
                    *[_text(a) if not isinstance(a, (int, float)) else a for a in args],
                    **{
                        k: (_text(v) if not isinstance(v, (int, float)) else v)
                        for k, v in kwargs.items()
                    },
                )
            )
        except (IndexError, KeyError, ValueError):
            return s
    if name == "replace" and len(args) >= 2:
        old, new = _text(args[0]), _text(args[1])
        # Counted before it is built: each of the (up to len(s) + 1) matches grows it.
        count = s.count(old) if old else len(s) + 1
        if not expansions.spend(len(s) + count * max(0, len(new) - len(old))):
            return Unknown("…")
        return s.replace(old, new)
    if name == "join" and args:
        seq = args[0]
        if isinstance(seq, (list, tuple)):
            texts = [_text(x) for x in seq]
            size = sum(map(len, texts)) + len(s) * max(0, len(texts) - 1)
            return s.join(texts) if expansions.spend(size) else Unknown("…")
    if name == "split":
        return s.split(args[0] if args and isinstance(args[0], str) else None)
    if name in ("zfill", "rjust", "ljust") and args and isinstance(args[0], int):
        if not expansions.spend(max(0, args[0])):  # "x".rjust(10**9)
            return Unknown("…")
        return getattr(s, name)(*args[:2])
    return Unknown(f"{s[:20]}.{name}()")


def _b_range(r: _Reader, args: list[Any], kwargs: dict[str, Any]) -> Any:
    if all(isinstance(a, int) for a in args) and 1 <= len(args) <= 3:
        return Obj("range", range=range(*args))
    return Unknown("range")


def _b_str(r: _Reader, args: list[Any], kwargs: dict[str, Any]) -> Any:
    return _text(args[0]) if args else ""


def _b_int(r: _Reader, args: list[Any], kwargs: dict[str, Any]) -> Any:
    if args and isinstance(args[0], (int, float)):
        return int(args[0])
    if args and isinstance(args[0], str) and args[0].strip().lstrip("-").isdigit():
        return int(args[0])
    return Unknown("int")


def _b_len(r: _Reader, args: list[Any], kwargs: dict[str, Any]) -> Any:
    if args and isinstance(args[0], (str, list, tuple, dict)):
        return len(args[0])
    if args and isinstance(args[0], Obj) and args[0].kind == "range":
        return len(args[0].attrs["range"])
    return Unknown("len")


def _b_open(r: _Reader, args: list[Any], kwargs: dict[str, Any]) -> Any:
    path = _text(args[0]) if args else ""
    mode = _text(args[1]) if len(args) > 1 else _text(kwargs.get("mode", "r"))
    if "w" in mode:
        r.written[path] = ""
    return Obj("file", path=path, mode=mode)


def _b_enumerate(r: _Reader, args: list[Any], kwargs: dict[str, Any]) -> Any:
    items, count, _ = r.iterate(args[0]) if args else ([], 0, True)
    if items is not None and count <= UNROLL_LIMIT:
        return [(i, x) for i, x in enumerate(items)]
    return Obj("lazy_iter", count=count, first=(0, items[0] if items else Unknown("item")))


def _b_zip(r: _Reader, args: list[Any], kwargs: dict[str, Any]) -> Any:
    seqs = [r.iterate(a)[0] for a in args]
    if all(s is not None for s in seqs):
        return list(zip(*seqs, strict=False))  # type: ignore[arg-type]
    return Unknown("zip")


def _b_map(r: _Reader, args: list[Any], kwargs: dict[str, Any]) -> Any:
    if len(args) >= 2 and isinstance(args[0], Func):
        items, count, known = r.iterate(args[1])
        return r.map_func(args[0], items, count, known, [])
    return Unknown("map")


def _b_list(r: _Reader, args: list[Any], kwargs: dict[str, Any]) -> Any:
    if not args:
        return []
    items, count, _ = r.iterate(args[0])
    if items is not None and len(items) == count:
        return list(items)
    return Unknown("list")


def _b_print(r: _Reader, args: list[Any], kwargs: dict[str, Any]) -> Any:
    return None


def _b_super(r: _Reader, args: list[Any], kwargs: dict[str, Any]) -> Any:
    if len(args) >= 2 and isinstance(args[1], Instance):
        return Super(args[1])
    return Super(r.selves[-1]) if r.selves else Unknown("super")


def _b_dict(r: _Reader, args: list[Any], kwargs: dict[str, Any]) -> Any:
    out: dict[Any, Any] = {}
    if args and isinstance(args[0], dict):
        out.update(args[0])
    elif args and isinstance(args[0], (list, tuple)):
        for pair in args[0]:
            if isinstance(pair, (list, tuple)) and len(pair) == 2 and _known(pair[0]):
                out[pair[0]] = pair[1]
    elif args:
        return Unknown("dict")
    out.update(kwargs)
    return out


def _b_getattr(r: _Reader, args: list[Any], kwargs: dict[str, Any]) -> Any:
    # getattr(requests, method.lower())(url, ...)
    if len(args) >= 2 and isinstance(args[1], str):
        return r.attribute(args[0], args[1], ast.Constant(args[1]))
    return args[2] if len(args) > 2 else Unknown("getattr")


def _b_bytes(r: _Reader, args: list[Any], kwargs: dict[str, Any]) -> Any:
    return _text(args[0]) if args and isinstance(args[0], str) else Unknown("bytes")


_BUILTIN_FUNCS = {
    _b_range,
    _b_str,
    _b_int,
    _b_len,
    _b_open,
    _b_enumerate,
    _b_zip,
    _b_map,
    _b_list,
    _b_print,
    _b_super,
    _b_dict,
    _b_getattr,
    _b_bytes,
}
_BUILTINS: dict[str, Any] = {
    "range": _b_range,
    "str": _b_str,
    "int": _b_int,
    "len": _b_len,
    "open": _b_open,
    "enumerate": _b_enumerate,
    "zip": _b_zip,
    "map": _b_map,
    "list": _b_list,
    "tuple": _b_list,
    "print": _b_print,
    "super": _b_super,
    "dict": _b_dict,
    "getattr": _b_getattr,
    "bytes": _b_bytes,
    "bytearray": _b_bytes,
    "True": True,
    "False": False,
    "None": None,
}


#: Node -> (node, its rendered source, stack room ``ast.unparse`` needed for it). The
#: parsed chunks are cached, so an unknown value's source recurs across trajectories.
_SRC: dict[int, tuple[ast.AST, str, int]] = {}


def _src(node: ast.AST) -> str:
    try:
        # The check costs the frame ``ast.unparse`` would: no limit is met sooner.
        hit = _SRC.get(id(node))
        if hit is not None and hit[0] is node and _stack_room(hit[2]):
            return hit[1]
        text = ast.unparse(node)
    except (ValueError, TypeError, AttributeError, RecursionError):
        return "?"
    short = text if len(text) <= 80 else text[:77] + "..."
    if len(_SRC) > 4096:
        _SRC.clear()
    # Rendering never takes more than a few frames per node of the tree, nor the tree
    # more nodes than its source has characters: with this much room it cannot fail.
    _SRC[id(node)] = (node, short, 8 * len(text) + 100)
    return short


def _stack_room(frames: int) -> bool:
    """Whether at least ``frames`` frames fit on the stack before the recursion limit
    (a cached result is used only where computing it again would give the same)."""
    top = sys.getrecursionlimit() - frames
    if top <= 0:
        return False
    try:
        sys._getframe(top)
    except ValueError:
        return True
    return False


# --------------------------------------------------------------------------- regex fallback

_RX_LIB = re.compile(
    r"""(?:requests|httpx|session|s|client)\.(get|post|put|patch|delete|head|options)\(\s*[fr]?['"]([^'"]+)['"]"""
)
_RX_URLOPEN = re.compile(r"""urlopen\(\s*[fr]?['"]([^'"]+)['"]""")
_RX_REQUEST = re.compile(
    r"""Request\(\s*[fr]?['"]([^'"]+)['"](?:[^)]*?method\s*=\s*['"](\w+)['"])?""", re.S
)


def _regex_requests(code: str) -> list[Request]:
    out: list[Request] = []
    for m in _RX_LIB.finditer(code):
        out.append(
            Request(
                method=m.group(1).upper(), url=normalise_url(m.group(2)), client="python_requests"
            )
        )
    for m in _RX_REQUEST.finditer(code):
        out.append(
            Request(
                method=(m.group(2) or "GET").upper(),
                url=normalise_url(m.group(1)),
                client="python_urllib",
            )
        )
    if not any(r.client == "python_urllib" for r in out):
        for m in _RX_URLOPEN.finditer(code):
            out.append(Request(method="GET", url=normalise_url(m.group(1)), client="python_urllib"))
    return out


@functools.lru_cache(maxsize=2048)
def _parse(code: str) -> ast.Module | None:
    """``ast.parse`` with a cache (the reader never mutates the tree); None if unparsable."""
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


# ----------------------------------------------------------------- statement-level parse cache
#
# Agents resend the same helper functions, imports and constants with a few new
# lines at the end, so most of a new text was already parsed as part of an
# earlier one. ``_parse_body`` splits a text into chunks of whole top-level
# statements and parses only the chunks it has not seen, all in one go; the
# reader uses only the statements (never their positions), so the result is
# ``_parse(code).body`` up to line numbers.

#: Chunk text -> its top-level statements (parsed on their own, they give these).
_CHUNKS: dict[str, tuple[ast.stmt, ...]] = {}
_CHUNKS_MAX = 16384
#: Longer chunks are not cached (see ``_parse_body``).
_CHUNK_MAX_LEN = 1000
#: Where a chunk may start: a line beginning with a letter or ``_`` that is not a
#: clause continuing the statement before it (a guess; ``_file_chunks`` checks).
_CHUNK_START = re.compile(r"\n(?=[A-Za-z_])(?!else|elif|except|finally)")


def _chunks(code: str) -> list[str]:
    """``code`` cut before lines that may start a top-level statement (``"\\n".join`` gives it back)."""
    parts = _CHUNK_START.split(code)
    if len(parts) == 1 or "@" not in code:
        return parts
    # A decorated definition stays in the chunk of its decorators.
    out = [parts[0]]
    for part in parts[1:]:
        last = out[-1]
        if last.startswith("@", last.rfind("\n") + 1):
            out[-1] = last + "\n" + part
        else:
            out.append(part)
    return out


def _file_chunks(texts: list[str], tree: ast.Module) -> bool:
    """File the statements of ``tree`` (``texts`` joined, parsed) under each text.

    False when a text after the first does not open exactly with a top-level
    statement: then the texts are not each a sequence of whole statements.
    """
    body = tree.body
    groups: list[tuple[ast.stmt, ...]] = []
    k = 0
    line = 1
    for n, text in enumerate(texts):
        end = line + text.count("\n") + 1  # first line of the next text
        if n:
            # A text after the first must open with an undecorated statement at column 0.
            if k >= len(body):
                return False
            st = body[k]
            if st.lineno != line or st.col_offset or getattr(st, "decorator_list", None):
                return False
        j = k
        while j < len(body) and body[j].lineno < end:
            j += 1
        groups.append(tuple(body[k:j]))
        k = j
        line = end
    if k != len(body):
        return False
    if len(_CHUNKS) + len(texts) > _CHUNKS_MAX:
        _CHUNKS.clear()
    for text, stmts in zip(texts, groups, strict=True):
        _CHUNKS[text] = stmts
        if "global" not in text:
            _note_no_globals(stmts)
    return True


def _note_no_globals(stmts: tuple[ast.stmt, ...]) -> None:
    """Functions and methods of a text without the word ``global`` declare none:
    file that in :func:`_globals_of`'s cache, which then need not walk them."""
    for st in stmts:
        for fn in st.body if type(st) is ast.ClassDef else (st,):
            if type(fn) is ast.FunctionDef or type(fn) is ast.AsyncFunctionDef:
                if len(_GLOBALS) > 4096:
                    _GLOBALS.clear()
                _GLOBALS[id(fn)] = (fn, ())


def _shallow_stack() -> bool:
    """Whether any chunk parses here as it would at any other depth where chunks are used.

    ``ast.parse`` fails on an AST deeper than about 3 * (recursion limit - stack
    depth) levels, and a chunk of at most _CHUNK_MAX_LEN characters is at most
    about that many levels deep: with the stack less than ``room`` frames deep,
    such a chunk always parses if it parses at all, so sharing chunks between
    texts cannot change whether one of them parses.
    """
    room = sys.getrecursionlimit() - (_CHUNK_MAX_LEN + 10) // 3 - 100
    if room <= 0:
        return False
    try:
        sys._getframe(room)
    except ValueError:
        return True
    return False


@functools.lru_cache(maxsize=2048)
def _parse_body(code: str) -> list[ast.stmt] | None:
    """The top-level statements of ``code`` as ``_parse(code).body``; None if unparsable."""
    # ``\r`` breaks lines for the parser but not for ``_chunks``; ``from __future__
    # import barry_as_FLUFL`` changes how later statements parse: whole text then.
    # Long chunks and deep stacks too: see ``_shallow_stack``. ``ast.parse`` is
    # called from here, at the stack depth ``_parse`` had, for the same reason.
    parts = _chunks(code) if "\r" not in code and "__future__" not in code else [code]
    if len(parts) > 1 and max(map(len, parts)) <= _CHUNK_MAX_LEN and _shallow_stack():
        missing = [p for p in dict.fromkeys(parts) if p not in _CHUNKS]
        filed = not missing
        if missing:
            try:
                filed = _file_chunks(missing, ast.parse("\n".join(missing)))
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                filed = False
        if filed:
            body: list[ast.stmt] = []
            for p in parts:
                found = _CHUNKS.get(p)
                if found is None:
                    break
                body += found
            else:
                return body
    try:
        return ast.parse(code).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def clear_caches() -> None:
    """Drop the parsed-code caches (the view's ``clear_caches`` calls this)."""
    _parse.cache_clear()
    _parse_body.cache_clear()
    _CHUNKS.clear()
    _GLOBALS.clear()
    _SRC.clear()
    _dirname.cache_clear()


def read_python(
    code: str,
    files: FileLookup | None = None,
    *,
    modules: ModuleLookup | None = None,
    argv: list[str] | None = None,
    environ: dict[str, str] | None = None,
    script: str | None = None,
    cwd: str | None = None,
    session: list[str] | None = None,
) -> tuple[list[Request], dict[str, str]]:
    """The HTTP requests a Python program sends, in order, and the files it
    writes with ``open(path, "w").write(...)`` (known content). Never raises.

    ``files`` gives the content of files written earlier (scripts, uploads, and
    modules the code imports: ``import client`` finds ``client.py`` in the
    script's folder, ``sys.path`` / ``PYTHONPATH`` folders, or else through
    ``modules``); ``argv`` is ``sys.argv`` when known, ``environ`` the
    variables the shell set, ``script`` the path of the file being run and
    ``cwd`` the folder it runs in, when known. ``session`` holds the earlier
    cells of a notebook-like Python tool: the imports, functions, classes and
    assignments they define are in scope (their requests are not repeated).
    """
    if not code:
        return [], {}
    # Most code names ``http``: test that word before the generator over all of them.
    sends = "http" in code or any(k in code for k in _SEND_WORDS)
    if not sends and "open(" not in code and not session and not _imports_own_module(code):
        return [], {}
    body = _parse_body(code)
    if body is None:
        return (_regex_requests(code) if sends else []), {}
    path = [_dirname(script) if script and "/" in script else (cwd or "")]
    pythonpath = (environ or {}).get("PYTHONPATH", "")
    path += [d for d in pythonpath.split(":") if d]
    reader = _Reader(
        files if files is not None else (lambda _p: None), modules, argv, environ, path
    )
    env: dict[str, Any] = {"__name__": "__main__", "__file__": script or "<stdin>"}
    expansions.begin()
    try:
        if session:
            _replay_cells(reader, session, env)
        # Whatever was read before a failure or the step budget is still kept. (A plain
        # try: suppress() costs three calls, ~1 % of a read.)
        try:  # noqa: SIM105
            reader.run(body, env)
        except Exception:  # noqa: BLE001
            pass
    finally:
        expansions.end()
    reqs = [r for r in reader.out if split_url(r.url).host or r.url.startswith("file:")]
    return reqs, reader.written


#: The script's folder (scripts are few and each is read many times).
_dirname = functools.lru_cache(maxsize=1024)(posixpath.dirname)


_DEFINING = (
    ast.Import,
    ast.ImportFrom,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Assign,
    ast.AnnAssign,
)


def _replay_cells(reader: _Reader, cells: list[str], env: dict[str, Any]) -> None:
    """Run the defining statements of earlier notebook cells, recording nothing."""
    for cell in cells[-32:]:
        stmts = _parse_body(cell)
        if stmts is None:
            continue
        body = [st for st in stmts if isinstance(st, _DEFINING)]
        with contextlib.suppress(Exception):
            reader.run(body, env)
    del reader.out[:]
    reader.written.clear()
    reader.steps = 0


_IMPORT_NAME = re.compile(r"^[ \t]*(?:from[ \t]+(\w+)|import[ \t]+([\w ,.\t]+))", re.M)


def _imports_own_module(code: str) -> bool:
    """Whether ``code`` imports something that is neither a library nor the stdlib."""
    if "import" not in code:
        return False
    for m in _IMPORT_NAME.finditer(code):
        names = [m.group(1)] if m.group(1) else m.group(2).split(",")
        for name in names:
            words = name.split()
            top = words[0].split(".", 1)[0] if words else ""
            if top and top not in _NOT_OWN:
                return True
    return False


_SEND_WORDS = ("http", "socket", "urlopen", "requests", "Request", "curl", "wget", "exec(")


def python_requests(code: str, files: FileLookup | None = None) -> list[Request]:
    """The HTTP requests a Python program sends, in order. Never raises."""
    return read_python(code, files)[0]


def python_written_files(code: str, files: FileLookup | None = None) -> dict[str, str]:
    """Files a Python program writes with ``open(path, "w").write(...)`` (known content)."""
    return read_python(code, files)[1]
