"""HTTP requests out of the commands an agent ran.

:func:`extract_requests` takes the simple commands of one step (from
:func:`monsearch.views.shell.run_script`) and returns :class:`~monsearch.views.request.Request`
records for the HTTP clients among them: curl (:mod:`monsearch.views.http_curl`), wget,
httpie and raw HTTP through ``nc`` and its kin (:mod:`monsearch.views.http_clients`), and
Python code (``python3 -c``, heredocs, scripts written earlier) read by
:func:`read_python`. The two recurse: Python code can run curl or Python through
``subprocess``, and a shell command can run Python; this module is where both meet, so
the readers below it import neither. Every parser is tolerant: unknown options are
skipped, and nothing raises.
"""

from __future__ import annotations

import re
from typing import Any

from monsearch.views import python_reader
from monsearch.views.command import Command
from monsearch.views.http_clients import parse_httpie, parse_nc, parse_wget
from monsearch.views.http_curl import parse_curl
from monsearch.views.request import FileLookup, ModuleLookup, Request

_PYTHON = re.compile(r"^(?:python|python3|python3\.\d+|python2|pypy3?)$")
CLIENTS = {
    "curl": parse_curl,
    "wget": parse_wget,
    "http": parse_httpie,
    "https": parse_httpie,
    "xh": parse_httpie,
    "xhs": parse_httpie,
}


def python_source(cmd: Command, files: FileLookup) -> str | None:
    """The Python code a ``python3 ...`` command runs, when it can be known."""
    inv = python_invocation(cmd, files)
    return inv[0] if inv is not None else None


def resolve_path(path: str, cwd: str | None, files: FileLookup) -> tuple[str, str | None]:
    """``(path, content)`` of a file an earlier command wrote; a relative path is also
    tried under the command's folder (``cd /tmp && python3 run.py``)."""
    content = files(path)
    if content is None and cwd and path and not path.startswith("/"):
        joined = cwd.rstrip("/") + "/" + path
        found = files(joined)
        if found is not None:
            return joined, found
    return path, content


_PY_OPTS_WITH_ARG = frozenset({"-W", "-X", "-Q"})


def python_invocation(
    cmd: Command, files: FileLookup
) -> tuple[str | None, str | None, list[str]] | None:
    """``(code, script path, sys.argv)`` of a ``python3 ...`` command; None if not Python.

    The code is None when it cannot be known (a script nobody wrote in the run).
    ``python3 -m NAME`` runs ``NAME.py`` when an earlier step wrote it.
    """
    argv = cmd.argv
    if not argv or not _PYTHON.match(argv[0].rsplit("/", 1)[-1]):
        return None
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "-c":
            return (argv[i + 1] if i + 1 < len(argv) else ""), None, ["-c", *argv[i + 2 :]]
        if a.startswith("-c") and len(a) > 2:
            return a[2:], None, ["-c", *argv[i + 1 :]]
        if a == "-m" or (a.startswith("-m") and len(a) > 2):
            name = argv[i + 1] if a == "-m" and i + 1 < len(argv) else a[2:]
            rel = name.replace(".", "/") + ".py"
            path, code = resolve_path(rel, cmd.cwd, files)
            rest = argv[i + 2 :] if a == "-m" else argv[i + 1 :]
            return code, path, [path, *rest]
        if a == "-":
            return cmd.stdin, None, ["-", *argv[i + 1 :]]
        if a in _PY_OPTS_WITH_ARG:
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        path, code = resolve_path(a, cmd.cwd, files)
        return code, path, [a, *argv[i + 1 :]]
    return cmd.stdin, None, [""]


def extract_requests(
    cmds: list[Command],
    files: FileLookup,
    written: dict[str, str] | None = None,
    modules: ModuleLookup | None = None,
) -> list[Request]:
    """Every HTTP request the commands of one step send, in order.

    Files that Python code writes are added to ``written`` when given;
    ``modules`` finds modules written earlier that Python code imports
    (:data:`~monsearch.views.request.ModuleLookup`).
    """
    out: list[Request] = []
    for cmd in cmds:
        if not cmd.argv:
            continue
        name = cmd.argv[0]
        if "/" in name:  # (a name without "/" is its own basename)
            name = name.rsplit("/", 1)[-1]
        parser = CLIENTS.get(name)
        try:
            if parser is not None:
                out.extend(parser(cmd, files))
            elif name in ("nc", "ncat", "netcat", "socat", "telnet"):
                out.extend(parse_nc(cmd))
            elif name.startswith("py") and _PYTHON.match(name):  # every match starts "py"
                inv = python_invocation(cmd, files)
                code = inv[0] if inv is not None else None
                if inv is not None and code:
                    py_reqs, py_written = read_python(
                        code,
                        files,
                        modules=modules,
                        argv=inv[2],
                        environ=cmd.env,
                        script=inv[1],
                        cwd=cmd.cwd,
                    )
                    if written is not None:
                        written.update(py_written)
                    for req in py_reqs:
                        req.repeat = min(req.repeat * cmd.repeat, 10**9)
                        req.repeat_known = req.repeat_known and cmd.repeat_known
                        req.background = cmd.background
                        out.append(req)
        except (ValueError, IndexError, KeyError, TypeError, RecursionError, OverflowError):
            continue
    return out


def read_python(
    code: str, files: FileLookup | None = None, **options: Any
) -> tuple[list[Request], dict[str, str]]:
    """The requests a Python program sends and the files it writes
    (:func:`monsearch.views.python_reader.read_python`, same options), with the shell
    commands it runs read by :func:`extract_requests`. Never raises."""
    return python_reader.read_python(code, files, shell_requests=extract_requests, **options)


def python_requests(code: str, files: FileLookup | None = None) -> list[Request]:
    """The HTTP requests a Python program sends, in order. Never raises."""
    return read_python(code, files)[0]


def python_written_files(code: str, files: FileLookup | None = None) -> dict[str, str]:
    """Files a Python program writes with ``open(path, "w").write(...)`` (known content)."""
    return read_python(code, files)[1]
