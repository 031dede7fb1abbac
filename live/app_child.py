"""Inside one app process of a live run: the real StealthBench app, as its container saw it.

An app process is forked from the run's app host with the heavy imports done. Here it:

- loads ``app.py`` from the user's checkout under a module name of its own (never as
  ``__main__``: its ``app.run(host="0.0.0.0")`` is not called), once per instance of
  the task (neighbor-services has a staging and a production instance, each with its
  compose file's environment);
- maps the absolute paths the app was written for (``/app/flag.txt``, ``/uploads``)
  into the run's folder, by rewriting those string constants in the parsed source,
  and answers ``file://`` fetches from the run's small container file tree only;
- reads time from the run's virtual clock (a rate limiter's windows follow the
  run's timeline);
- routes the app's own outbound connections as its container network would: its
  ``localhost:5000`` to itself (as a loopback client), the task's other hosts to
  their instances, the agent's address to the agent's listeners, anything else to the
  run's third-party sink (or nowhere, when the run's internet is down);
- serves every instance on a loopback port, telling the app who is calling
  (``REMOTE_ADDR``): its own outbound connections keep their container address, every
  other connection is the agent's;
- logs every exchange (method, path, status, bodies, cut at a size) for the driver:
  what really happened, per step.
"""

from __future__ import annotations

import ast
import io
import json
import logging
import os
import socket
import sqlite3
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from monsearch.live.clock import VirtualClock
from monsearch.synth.tasks.infra import dotted_ip

#: The absolute path roots an app may name; they live under the run's container tree.
CONTAINER_ROOTS = ("/app", "/uploads")
#: Names under which an app reaches itself inside its own container.
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "0.0.0.0", "::1", "[::1]", "ip6-localhost")
#: The port every app listens on inside its container (the apps read PORT, default 5000).
CONTAINER_PORT = 5000
#: Bytes of a request or response body kept in the exchange log.
LOG_BODY = 64_000


#: Calls whose string arguments are file paths (``open("/app/flag.txt")``,
#: ``Path("/uploads")``, ``os.path.exists(...)``); a route like ``"/uploads/<name>"``
#: is an argument of ``app.get`` and stays as it is.
PATH_CALLS = frozenset({"open", "Path", "PurePath", "exists", "isfile", "isdir", "join", "read_text"})


def rewrite_paths(tree: ast.AST, root: str) -> ast.AST:
    """String arguments of file calls naming a container path (``/app/flag.txt``,
    ``/uploads``) moved under ``root``; nothing else in the source changes."""

    def moved(node: ast.AST) -> ast.AST:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            v = node.value
            if any(v == r or v.startswith(r + "/") for r in CONTAINER_ROOTS):
                return ast.copy_location(ast.Constant(root + v), node)
        return node

    class Paths(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name in PATH_CALLS:
                node.args = [moved(a) for a in node.args]
            return node

    return ast.fix_missing_locations(Paths().visit(tree))


class Network:
    """How the app's container reaches other hosts (see the module doc)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.agent_ip: str = spec["agent_ip"]
        self.agent_names = {spec["agent_ip"], spec.get("agent_hostname", "")} - {""}
        self.sink_port: int | None = spec.get("sink_port")
        self.sink_tls_port: int | None = spec.get("sink_tls_port")
        self.online: bool = bool(spec.get("online", True))
        self.instances: dict[str, dict[str, Any]] = {}  # name -> {"ip", "port"}
        self.callers: dict[int, str] = {}  # local port of our outbound socket -> our address
        self.current = threading.local()  # which instance is handling this thread's request

    def route(self, host: str, port: int) -> tuple[tuple[str, int], str]:
        """(real address, the address the peer should see us as) for ``host:port``."""
        host = host.strip("[]").lower()
        host = dotted_ip(host) or host
        me = self.instances.get(getattr(self.current, "name", ""), {})
        my_ip = me.get("ip", "127.0.0.1")
        if host in LOOPBACK_NAMES:
            if port == CONTAINER_PORT and me:
                return ("127.0.0.1", me["port"]), "127.0.0.1"
            raise ConnectionRefusedError(111, "Connection refused")
        for name, inst in self.instances.items():
            if host in (name, inst["ip"]):
                if port != CONTAINER_PORT:
                    raise ConnectionRefusedError(111, "Connection refused")
                return ("127.0.0.1", inst["port"]), my_ip
        if host in self.agent_names:
            return ("127.0.0.1", port), my_ip
        if host.startswith("169.254."):
            # A cloud metadata address: nothing answers it from a container (a route out
            # and no reply: the fetch times out; no route: unreachable).
            if self.online:
                raise TimeoutError("timed out")
            raise OSError(101, "Network is unreachable")
        if self.online and self.sink_port:
            sink = self.sink_tls_port if port == 443 and self.sink_tls_port else self.sink_port
            return ("127.0.0.1", sink), my_ip
        raise socket.gaierror(-3, "Temporary failure in name resolution")

    def create_connection(self, address, timeout=socket._GLOBAL_DEFAULT_TIMEOUT, source_address=None, **kw):
        real, seen_as = self.route(str(address[0]), int(address[1]))
        sock = _real_create_connection(real, timeout, None, **kw)
        self.callers[sock.getsockname()[1]] = seen_as
        return sock


_real_create_connection = socket.create_connection


class ContainerFiles:
    """``file://`` inside the app's container: the run's container tree, nothing else."""

    def __init__(self, root: str) -> None:
        self.root = root

    def url2pathname(self, path: str) -> str:
        inside = os.path.normpath("/" + _real_url2pathname(path).lstrip("/"))
        return self.root + inside


_real_url2pathname = urllib.request.url2pathname


class ExchangeLog:
    """WSGI middleware: the caller's address for the app, and one log line per exchange."""

    def __init__(self, app, name: str, net: Network, log_path: Path, clock: VirtualClock, root: str):
        self.app, self.name, self.net, self.clock = app, name, net, clock
        self.root = root.encode()
        self._log = open(log_path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115
        self._lock = threading.Lock()

    def __call__(self, environ, start_response):
        port = int(environ.get("REMOTE_PORT") or 0)
        caller = self.net.callers.pop(port, None)
        environ["REMOTE_ADDR"] = caller or self.net.agent_ip
        self.net.current.name = self.name
        if environ.get("wsgi.input_terminated"):
            body = environ["wsgi.input"].read()
        else:
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        environ.pop("HTTP_TRANSFER_ENCODING", None)
        seen: dict[str, Any] = {}

        def start(status, headers, exc_info=None):
            seen["status"] = int(status.split(" ", 1)[0])
            seen["headers"] = [(k, v) for k, v in headers]
            return start_response(status, headers, exc_info)

        result = self.app(environ, start)
        try:
            out = b"".join(result)
        finally:
            if hasattr(result, "close"):
                result.close()
        out = out.replace(self.root, b"")  # the run's folder never shows: /app/... as in the container
        record = {
            "t": self.clock.now(),
            "instance": self.name,
            "client": "self" if caller else "agent",
            "method": environ.get("REQUEST_METHOD", ""),
            "path": environ.get("PATH_INFO", ""),
            "query": environ.get("QUERY_STRING", ""),
            "status": seen.get("status", 0),
            "request": body[:LOG_BODY].decode("utf-8", "replace"),
            "response": out[:LOG_BODY].decode("utf-8", "replace"),
            "content_type": next((v for k, v in seen.get("headers", ()) if k.lower() == "content-type"), ""),
        }
        with self._lock:
            self._log.write(json.dumps(record) + "\n")
        return [out]


#: Real seconds an app's socket read with a timeout may wait (box/livebox.py's rule).
WAIT_CAP = 0.5


def _compress_waits(clock: VirtualClock) -> None:
    """An app's outbound read that would wait out its timeout (a listener that never
    answers) waits :data:`WAIT_CAP` real seconds; the rest passes on the run's clock."""
    for name in ("recv", "recv_into"):
        real = getattr(socket.socket, name)

        def wrapped(self, *args, __real=real, **kwargs):
            timeout = self.gettimeout()
            if not timeout or timeout <= WAIT_CAP:
                return __real(self, *args, **kwargs)
            self.settimeout(WAIT_CAP)
            try:
                return __real(self, *args, **kwargs)
            except TimeoutError:
                clock.advance(timeout - WAIT_CAP)
                raise
            finally:
                self.settimeout(timeout)

        setattr(socket.socket, name, wrapped)


def _patch_process(spec: dict[str, Any], clock: VirtualClock, net: Network) -> None:
    """What every app of the run sees instead of the host: time, network, files, threads."""
    import ssl

    # Outside hosts are answered by the run's sink, whose certificate stands for theirs.
    ssl._create_default_https_context = ssl._create_unverified_context
    time.time = clock.now
    time.time_ns = lambda: int(clock.now() * 1e9)
    socket.create_connection = net.create_connection
    _compress_waits(clock)
    urllib.request.url2pathname = ContainerFiles(spec["fs_root"]).url2pathname
    real_connect = sqlite3.connect

    def connect(*args, **kwargs):
        # The apps open one in-memory database at import and use it from request
        # threads: allowed here, where requests come one at a time from one agent.
        kwargs["check_same_thread"] = False
        return real_connect(*args, **kwargs)

    sqlite3.connect = connect
    logging.getLogger("werkzeug").disabled = True


def load_app(source: Path, module_name: str, fs_root: str, env: dict[str, str]):
    """The Flask app object of ``source``, loaded fresh under ``module_name``."""
    import sys
    import types

    os.environ.update(env)
    text = source.read_text(encoding="utf-8")
    tree = rewrite_paths(ast.parse(text, filename=str(source)), fs_root)
    module = types.ModuleType(module_name)
    module.__file__ = str(source)
    sys.modules[module_name] = module
    exec(compile(tree, str(source), "exec"), module.__dict__)  # the user's own checkout
    app = getattr(module, "app", None)
    if app is None or not callable(app):
        raise RuntimeError(f"{source} defines no Flask object named app")
    return app


def serve(spec: dict[str, Any]) -> dict[str, int]:
    """Start every instance of the task (threads of this process); returns name -> port."""
    from werkzeug.serving import make_server

    clock = VirtualClock(spec["clock"])
    net = Network(spec)
    _patch_process(spec, clock, net)
    ports: dict[str, int] = {}
    servers = []
    for inst in spec["instances"]:
        env = {"PORT": str(CONTAINER_PORT), **inst.get("env", {})}
        app = load_app(Path(spec["source"]), f"stealthbench_{spec['key']}_{inst['name']}", spec["fs_root"], env)
        wsgi = ExchangeLog(app, inst["name"], net, Path(spec["exchanges"]), clock, spec["fs_root"])
        srv = make_server("127.0.0.1", 0, wsgi, threaded=True)
        ports[inst["name"]] = srv.server_port
        net.instances[inst["name"]] = {"ip": inst["ip"], "port": srv.server_port}
        servers.append(srv)
    for srv in servers:
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    return ports
