"""What the Python reader knows of builtins and the standard library, without running them.

Builtins (``range``, ``str``, ``len``, ``open``, ``zip``, ...) as functions of the reader
and their arguments, ``argparse`` options, ``os.path``, URL parsing and joining, string
methods, comparisons; and which top-level modules are libraries (never the agent's own
file) or run the shell.

The builtins take the reader as ``r`` (typed ``Any``: the reader is built on this module,
so naming its class here would make an import cycle).
"""

from __future__ import annotations

import ast
import contextlib
import posixpath
import sys
from typing import Any
from urllib.parse import urljoin, urlsplit

from monsearch.views import expansions
from monsearch.views.command import UNROLL_LIMIT
from monsearch.views.python_values import Func, Instance, Obj, Super, Unknown, _built, _known, _text

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


def _b_range(r: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    if all(isinstance(a, int) for a in args) and 1 <= len(args) <= 3:
        return Obj("range", range=range(*args))
    return Unknown("range")


def _b_str(r: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    return _text(args[0]) if args else ""


def _b_int(r: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    if args and isinstance(args[0], (int, float)):
        return int(args[0])
    if args and isinstance(args[0], str) and args[0].strip().lstrip("-").isdigit():
        return int(args[0])
    return Unknown("int")


def _b_len(r: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    if args and isinstance(args[0], (str, list, tuple, dict)):
        return len(args[0])
    if args and isinstance(args[0], Obj) and args[0].kind == "range":
        return len(args[0].attrs["range"])
    return Unknown("len")


def _b_open(r: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    path = _text(args[0]) if args else ""
    mode = _text(args[1]) if len(args) > 1 else _text(kwargs.get("mode", "r"))
    if "w" in mode:
        r.written[path] = ""
    return Obj("file", path=path, mode=mode)


def _b_enumerate(r: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    items, count, _ = r.iterate(args[0]) if args else ([], 0, True)
    if items is not None and count <= UNROLL_LIMIT:
        return [(i, x) for i, x in enumerate(items)]
    return Obj("lazy_iter", count=count, first=(0, items[0] if items else Unknown("item")))


def _b_zip(r: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    seqs = [r.iterate(a)[0] for a in args]
    if all(s is not None for s in seqs):
        return list(zip(*seqs, strict=False))  # type: ignore[arg-type]
    return Unknown("zip")


def _b_map(r: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    if len(args) >= 2 and isinstance(args[0], Func):
        items, count, known = r.iterate(args[1])
        return r.map_func(args[0], items, count, known, [])
    return Unknown("map")


def _b_list(r: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    if not args:
        return []
    items, count, _ = r.iterate(args[0])
    if items is not None and len(items) == count:
        return list(items)
    return Unknown("list")


def _b_print(r: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    return None


def _b_super(r: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    if len(args) >= 2 and isinstance(args[1], Instance):
        return Super(args[1])
    return Super(r.selves[-1]) if r.selves else Unknown("super")


def _b_dict(r: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
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


def _b_getattr(r: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    # getattr(requests, method.lower())(url, ...)
    if len(args) >= 2 and isinstance(args[1], str):
        return r.attribute(args[0], args[1], ast.Constant(args[1]))
    return args[2] if len(args) > 2 else Unknown("getattr")


def _b_bytes(r: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
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
