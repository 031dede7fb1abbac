"""How much of the HTTP an agent sent the view recovers: steps that look like HTTP
but yield no parsed request.

A step *looks like HTTP* when something it runs is an HTTP client aimed at a
host, judged from the command text with simpler rules than the parsers use:

* ``curl`` / ``wget`` / ``http`` / ``https`` / ``xh`` with a URL (``http://...``,
  ``host:port/...``, httpie's ``:port/...``) among its arguments (kind ``curl``,
  ``wget`` or ``httpie``);
* ``nc`` / ``ncat`` / ``netcat`` / ``telnet`` / ``socat`` fed an HTTP request
  line (``GET /x HTTP/1.1``), and bash's ``/dev/tcp/HOST/PORT`` with one (``nc``);
* Python (``python3 -c``, heredocs, ``python3 FILE`` / ``-m NAME`` of a file an
  earlier step wrote, a Python tool's code) that imports an HTTP client
  (``urllib.request``, ``http.client``, ``requests``, ``httpx``, ``aiohttp``,
  ``urllib3``; ``socket`` with a request line in the code; ``subprocess`` /
  ``os.system`` running curl or wget), or imports a module the agent wrote that
  does, and calls something (kind ``python``); a Python script nobody wrote in
  the run, given an ``http(s)://`` argument, counts too;
* scanners with a URL argument (``sqlmap``, ``ffuf``, ``gobuster``, ``nikto``,
  ``wfuzz``, ``nuclei``, ``feroxbuster``, ``dirb``, ``ab``, ``hey``; kind ``other``).

A step *yields no request* when its view step has no request. The share of
such steps among the HTTP-looking ones is the view's blind spot on a corpus;
:func:`corpus_coverage` gives it overall, per surface style (``meta["style"]``
of synthetic runs) and per kind. Never raises on odd input.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from monsearch.corpora.model import Trajectory
from monsearch.views.build import (
    _PYTHON_TOOLS,
    _SESSION,
    CELL_SEP,
    _parse_step,
    find_module,
    remember_step,
)
from monsearch.views.command import Command
from monsearch.views.http_extract import python_invocation
from monsearch.views.python_parse import _parse

#: Kinds of HTTP-looking steps, in the order a step's kind is chosen.
KINDS = ("python", "curl", "wget", "httpie", "nc", "other")
#: Style name for trajectories whose meta names none.
NO_STYLE = "-"

_CURL_LIKE = {
    "curl": "curl",
    "wget": "wget",
    "http": "httpie",
    "https": "httpie",
    "xh": "httpie",
    "xhs": "httpie",
}
_NC_LIKE = frozenset({"nc", "ncat", "netcat", "telnet", "socat"})
_SCANNERS = frozenset(
    {"sqlmap", "ffuf", "gobuster", "nikto", "wfuzz", "nuclei", "feroxbuster", "dirb", "ab", "hey"}
)
_PYTHON = re.compile(r"^(?:python|python3|python3\.\d+|python2|pypy3?)$")
_URL_ARG = re.compile(
    r"(?:\bhttps?://[A-Za-z0-9\[]|^[A-Za-z0-9][A-Za-z0-9.-]*:\d{1,5}(?:/|$)|^:\d{1,5}(?:/|$))", re.I
)
_HTTP_URL = re.compile(r"\bhttps?://[A-Za-z0-9\[]", re.I)
_REQUEST_LINE = re.compile(r"\b(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) \S+ HTTP/[12]")
_HTTP_MODULES = frozenset(
    {
        "urllib.request",
        "urllib2",
        "http.client",
        "httplib",
        "requests",
        "httpx",
        "aiohttp",
        "urllib3",
        "pycurl",
        "httplib2",
    }
)
_SHELL_HTTP = re.compile(r"(?:^|[\s\"'\[(;|&])(?:curl|wget)\s", re.M)


@dataclass(frozen=True, slots=True)
class HttpStep:
    """One step that looks like HTTP: its position, kind and whether the view parsed it."""

    index: int
    kind: str
    parsed: bool


# --------------------------------------------------------------------------- python


def _imported(tree: ast.Module) -> set[str]:
    """Modules a program imports (``from a import b`` gives ``a`` and ``a.b``), found
    by walking statements only (cheaper than visiting every expression)."""
    mods: set[str] = set()
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import):
            mods.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.module and not node.level:
                mods.add(node.module)
                mods.update(f"{node.module}.{a.name}" for a in node.names)
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):
                todo.extend(getattr(node, field, ()) or ())
    return mods


@functools.lru_cache(maxsize=4096)
def _python_facts(code: str) -> tuple[bool, bool, tuple[str, ...]]:
    """(uses an HTTP client, calls something, local-module candidates it imports)."""
    tree = _parse(code)
    if tree is None:
        http = bool(re.search(r"\burlopen\(|\bHTTPS?Connection\(|\brequests\.\w+\(", code))
        return http, True, ()
    mods = _imported(tree)
    http = any(m in _HTTP_MODULES or m.split(".", 1)[0] in _HTTP_MODULES for m in mods)
    if not http and ("urllib" in mods or "http" in mods):
        http = bool(re.search(r"\burllib\.request\b|\burlopen\b|\bhttp\.client\b", code))
    if not http and "socket" in mods:
        http = bool(_REQUEST_LINE.search(code))
    if not http and mods & {"subprocess", "os", "commands"}:
        http = bool(_SHELL_HTTP.search(code)) and bool(
            _HTTP_URL.search(code) or re.search(r"[A-Za-z0-9.-]+:\d{2,5}", code)
        )
    calls = _runs_calls(tree, code)
    local = tuple(sorted(m for m in mods if m.split(".", 1)[0] not in _NOT_LOCAL))
    return http, calls, local


_CALL = re.compile(r"[\w)\]]\s*\(")
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)


def _runs_calls(tree: ast.Module, code: str) -> bool:
    """Whether the program's top level (not only its function and class bodies) calls
    something: a file of helpers run or written alone sends nothing."""
    lines = code.split("\n")
    for st in tree.body:
        if isinstance(st, _DEFS):
            continue
        end = getattr(st, "end_lineno", None) or st.lineno
        if _CALL.search("\n".join(lines[st.lineno - 1 : end])):
            return True
    return False


@functools.lru_cache(maxsize=1024)
def _cell_names(code: str) -> tuple[frozenset[str], frozenset[str]]:
    """(names a notebook cell reads, names its top level defines)."""
    tree = _parse(code)
    if tree is None:
        return frozenset(), frozenset()
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    defined: set[str] = set()
    for st in tree.body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(st.name)
        elif isinstance(st, ast.Assign):
            defined.update(t.id for t in st.targets if isinstance(t, ast.Name))
    return frozenset(used), frozenset(defined)


_NOT_LOCAL = frozenset(
    {
        *_HTTP_MODULES,
        "urllib",
        "http",
        "json",
        "os",
        "sys",
        "re",
        "time",
        "base64",
        "socket",
        "subprocess",
        "hashlib",
        "hmac",
        "random",
        "string",
        "itertools",
        "threading",
        "concurrent",
        "asyncio",
        "ssl",
        "math",
        "datetime",
        "collections",
        "functools",
        "pathlib",
        "typing",
        "uuid",
        "secrets",
        "struct",
        "binascii",
        "html",
        "logging",
        "argparse",
        "pprint",
        "textwrap",
        "traceback",
        "signal",
        "select",
        "shutil",
        "tempfile",
        "csv",
        "io",
        "copy",
        "dataclasses",
        "enum",
        "urllib3",
    }
)


def _python_http(code: str, files: dict[str, str], written: dict[str, str]) -> bool:
    return _python_facts(code)[1] and _module_http(code, files, written, 0)


def _module_http(code: str, files: dict[str, str], written: dict[str, str], depth: int) -> bool:
    """``code`` uses an HTTP client itself or through modules the agent wrote."""
    http, _calls, local = _python_facts(code)
    if http:
        return True
    if depth >= 3:
        return False
    for mod in local:
        rel = mod.replace(".", "/")
        found = find_module(written, rel) or find_module(files, rel)
        if found is not None and _module_http(found[1], files, written, depth + 1):
            return True
    return False


# --------------------------------------------------------------------------- shell


def _command_kind(cmd: Command, files: dict[str, str], written: dict[str, str]) -> str | None:
    argv = cmd.argv
    if not argv:
        return None
    name = argv[0].rsplit("/", 1)[-1]
    kind = _CURL_LIKE.get(name)
    if kind is not None:
        return kind if any(_URL_ARG.search(a) for a in argv[1:]) else None
    if name in _NC_LIKE:
        if any(a in ("-l", "-lp", "-lk", "-kl", "-lvp", "-lnvp", "-nlvp") for a in argv[1:]):
            return None
        fed = [cmd.stdin or "", cmd.raw or ""]
        if cmd.piped_from is not None:
            fed.append(cmd.piped_from.raw or "")
        return "nc" if any(_REQUEST_LINE.search(t) for t in fed) else None
    if _PYTHON.match(name):

        def lookup(path: str) -> str | None:
            return written[path] if path in written else files.get(path)

        inv = python_invocation(cmd, lookup)
        if inv is None:
            return None
        code = inv[0]
        if code is None:
            # A script this run never wrote: only a URL argument says it is HTTP.
            return "python" if any(_HTTP_URL.search(a) for a in inv[2][1:]) else None
        return "python" if _python_http(code, files, written) else None
    if name in _SCANNERS:
        return "other" if any(_URL_ARG.search(a) for a in argv[1:]) else None
    return None


def _session_http(tool: str, text: str, files: dict[str, str], written: dict[str, str]) -> bool:
    """A notebook cell calling what an earlier HTTP-using cell of the same tool defined."""
    cells = files.get(_SESSION + tool)
    if not cells or not _python_facts(text)[1]:
        return False
    used = _cell_names(text)[0]
    for cell in cells.split(CELL_SEP)[-32:]:
        defined = _cell_names(cell)[1]
        if used & defined and _module_http(cell, files, written, 0):
            return True
    return False


def _step_kind(
    tool: str, text: str, cmds: list[Command], files: dict[str, str], written: dict[str, str]
) -> str | None:
    if tool in _PYTHON_TOOLS:
        http = _python_http(text, files, written) or _session_http(tool, text, files, written)
        return "python" if http else None
    kinds = {k for c in cmds if (k := _command_kind(c, files, written)) is not None}
    if not kinds and "/dev/tcp/" in text and _REQUEST_LINE.search(text):
        kinds.add("nc")
    return next((k for k in KINDS if k in kinds), None)


# --------------------------------------------------------------------------- API


def http_steps(traj: Trajectory) -> list[HttpStep]:
    """The steps of ``traj`` that look like HTTP, each with whether the view parsed a
    request from it (the same parse :func:`~monsearch.views.build.build_view` does,
    memoised, so calling both costs little more than one). Never raises."""
    out: list[HttpStep] = []
    files: dict[str, str] = {}
    try:
        for pos, step in enumerate(traj.steps):
            tool = step.tool or ""
            text = step.text or ""
            if tool == "think" or not text:
                continue
            cmds, written, reqs, _listeners = _parse_step(tool, text, files)
            kind = _step_kind(tool, text, cmds, files, written)
            remember_step(files, tool, text, written)
            if kind is not None:
                out.append(HttpStep(pos, kind, bool(reqs)))
    except Exception:  # noqa: BLE001 - a measurement never stops a corpus
        return out
    return out


def unparsed_http_steps(traj: Trajectory) -> list[HttpStep]:
    """Steps of ``traj`` that look like HTTP but yield no request in its view."""
    return [s for s in http_steps(traj) if not s.parsed]


def _block(runs: bool = True) -> dict[str, Any]:
    return {**({"runs": 0} if runs else {}), "http_steps": 0, "unparsed": 0, "share": None}


def _add(block: dict[str, Any], steps: list[HttpStep]) -> None:
    block["http_steps"] += len(steps)
    block["unparsed"] += sum(1 for s in steps if not s.parsed)


def _finish(block: dict[str, Any]) -> dict[str, Any]:
    n = block["http_steps"]
    block["share"] = block["unparsed"] / n if n else None
    return block


def _style(traj: Trajectory) -> str:
    meta = traj.meta if isinstance(traj.meta, dict) else {}
    return str(meta.get("style") or NO_STYLE)


def sample_by_style(trajectories: Iterable[Trajectory], per_style: int) -> list[Trajectory]:
    """At most ``per_style`` runs of each style, evenly spaced in the given order
    (deterministic), in that order."""
    groups: dict[str, list[Trajectory]] = {}
    for t in trajectories:
        groups.setdefault(_style(t), []).append(t)
    keep: set[int] = set()
    for runs in groups.values():
        n = len(runs)
        picks = range(n) if n <= per_style else (k * n // per_style for k in range(per_style))
        keep.update(id(runs[k]) for k in picks)
    return [t for runs in groups.values() for t in runs if id(t) in keep]


def corpus_coverage(
    trajectories: Iterable[Trajectory], *, per_style: int = 0, examples: int = 0
) -> dict[str, Any]:
    """Unparsed-HTTP share of a corpus: overall, per style and per kind.

    Returns ``{"runs": n, "per_style": cap, "overall": block, "styles": {style:
    block}, "kinds": {kind: block}}`` with ``block = {"runs", "http_steps",
    "unparsed", "share"}`` (``share`` is None without HTTP steps). Runs whose
    ``meta`` names no ``style`` count under ``"-"``. ``per_style > 0`` measures at
    most that many runs of each style (:func:`sample_by_style`); ``runs`` is how
    many were measured. With ``examples > 0``, ``"examples"`` lists up to that many
    ``[trajectory id, step index, kind]`` of unparsed steps.
    """
    runs = list(trajectories)
    if per_style > 0:
        runs = sample_by_style(runs, per_style)
    overall = _block()
    styles: dict[str, dict[str, Any]] = {}
    kinds: dict[str, dict[str, Any]] = {}
    found: list[list[Any]] = []
    for traj in runs:
        steps = http_steps(traj)
        style = styles.setdefault(_style(traj), _block())
        overall["runs"] += 1
        style["runs"] += 1
        _add(overall, steps)
        _add(style, steps)
        for s in steps:
            kind = kinds.setdefault(s.kind, _block(runs=False))
            _add(kind, [s])
            if not s.parsed and len(found) < examples:
                found.append([traj.id, s.index, s.kind])
    out: dict[str, Any] = {
        "runs": len(runs),
        "per_style": per_style,
        "overall": _finish(overall),
        "styles": {k: _finish(v) for k, v in sorted(styles.items())},
        "kinds": {k: _finish(kinds[k]) for k in KINDS if k in kinds},
    }
    if examples:
        out["examples"] = found
    return out


def worst_style_share(coverage: dict[str, Any]) -> float | None:
    """The largest unparsed share over the styles of a :func:`corpus_coverage` result."""
    shares = [b["share"] for b in coverage.get("styles", {}).values() if b["share"] is not None]
    return max(shares) if shares else None
