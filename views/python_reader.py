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
import contextlib
import functools
import posixpath
import re
from collections.abc import Callable
from typing import Any

from monsearch.views import expansions
from monsearch.views.command import Command
from monsearch.views.python_builtins import _NOT_OWN
from monsearch.views.python_calls import CallReading
from monsearch.views.python_expressions import ExpressionReading
from monsearch.views.python_parse import (
    _CHUNKS,
    _GLOBALS,
    _SRC,
    _parse,
    _parse_body,
    _regex_requests,
)
from monsearch.views.python_sending import RequestRecording
from monsearch.views.python_statements import StatementReading
from monsearch.views.python_values import _MAX_STEPS, _NESTING, Instance, LocalMod, Obj
from monsearch.views.request import (
    FileLookup,
    ModuleLookup,
    Request,
    split_url,
)

#: ``shell_requests(commands, files)``: the requests of shell commands the code runs.
ShellRequests = Callable[[list[Command], FileLookup], list[Request]]


class PythonReader(StatementReading, ExpressionReading, CallReading, RequestRecording):
    """The abstract interpreter over one program. Its parts (mixins, one module each) hold
    the statements, expressions, calls and recording; this holds the state they share: the
    output, the loop multiplier, the step budget, the files, the modules loaded."""

    def __init__(
        self,
        files: FileLookup,
        shell_requests: ShellRequests,
        modules: ModuleLookup | None = None,
        argv: list[str] | None = None,
        environ: dict[str, str] | None = None,
        path: list[str] | None = None,
    ):
        self.files = files
        # Given by the caller: the shell's readers can run Python in turn, so this module
        # cannot import them (see monsearch.views.http_extract).
        self.shell_requests = shell_requests
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
    shell_requests: ShellRequests,
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
    ``cwd`` the folder it runs in, when known. ``shell_requests`` reads the shell
    commands the code runs (``subprocess``, ``os.system``). ``session`` holds the earlier
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
    reader = PythonReader(
        files if files is not None else (lambda _p: None),
        shell_requests,
        modules,
        argv,
        environ,
        path,
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


def _replay_cells(reader: PythonReader, cells: list[str], env: dict[str, Any]) -> None:
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
