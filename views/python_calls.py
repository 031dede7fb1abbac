"""Calls as the Python reader follows them: the agent's functions and classes (inlined with
their arguments, bounded depth), library calls that build or send requests, string and
container methods, and programs run through ``subprocess`` / ``os.system`` (read as shell).
"""

from __future__ import annotations

import ast
import base64
import json
from typing import Any
from urllib.parse import quote

from monsearch.views import expansions
from monsearch.views.command import UNROLL_LIMIT, Command
from monsearch.views.python_builtins import (
    _BUILTIN_FUNCS,
    _SHELL_CALLS,
    _decorators,
    _os_path,
    _parse_cli,
    _str_method,
    _url_parts,
    _urljoin,
)
from monsearch.views.python_parse import _globals_of, _parse_body
from monsearch.views.python_values import (
    _MAX_DEPTH,
    _MAX_REPEAT,
    _METHODS,
    _NESTING,
    _SESSION_CLASSES,
    Bound,
    Cls,
    Func,
    Instance,
    Mod,
    Obj,
    Super,
    Unknown,
    _json_text,
    _LoopExit,
    _Name,
    _Return,
    _Starred,
    _text,
    _urlencode,
)
from monsearch.views.request import (
    Request,
    parse_raw_http,
)
from monsearch.views.shell import run_script


class CallReading:
    """Calls: recognise what is called and follow it, or model it."""

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
            for req in self.shell_requests(cmds, self.file):
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
