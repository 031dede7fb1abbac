"""The values the Python reader computes with, and its limits.

Known values are plain Python data (strings, numbers, lists, dicts); everything else is
one of the opaque classes here: :class:`Unknown` (renders as a ``{name}`` placeholder),
modules, objects of interest (a Request, a Session, a socket), functions, classes and
their instances. The helpers render values as text within the expansion budget
(:mod:`monsearch.views.expansions`) and tell what is known of a value's truth.
"""

from __future__ import annotations

import ast
import json
from typing import Any
from urllib.parse import urlencode

from monsearch.views import expansions
from monsearch.views.python_parse import _src

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

class _LoopExit(Exception):
    pass

#: Nesting of Python -> shell -> Python readings (subprocess running python3 -c ...).
_NESTING = [0]
