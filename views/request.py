"""The request record every reader of the view fills, and what reading one takes.

:class:`Request` is one HTTP request as the agent sent it; the URL helpers
normalise and split URLs the way every reader does; :func:`parse_raw_http` reads
requests written as raw HTTP (piped into ``nc``, or sent on a Python socket). The
command-line clients (:mod:`monsearch.views.http_curl`, :mod:`monsearch.views.http_clients`)
and the Python reader (:mod:`monsearch.views.python_reader`) all build on it, and on
nothing of each other.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

FileLookup = Callable[[str], "str | None"]
#: ``modules(relpath)`` -> ``(path, source)`` of a file written earlier whose path ends
#: in ``relpath + ".py"`` (or ``relpath + "/__init__.py"``), else None.
ModuleLookup = Callable[[str], "tuple[str, str] | None"]


@dataclass(slots=True)
class Request:
    """One HTTP request as the agent sent it (before freezing into the view)."""

    method: str
    url: str
    client: str
    headers: dict[str, str] = field(default_factory=dict)
    body: str = ""
    form: dict[str, str] = field(default_factory=dict)
    files: list[dict[str, str]] = field(default_factory=list)
    repeat: int = 1
    repeat_known: bool = True
    auth_user: str | None = None
    auth_password: str | None = None
    write_out: str | None = None  # curl -w format
    include_headers: bool = False  # -i / -v / -I: response headers in the output
    background: bool = False
    query_extra: list[tuple[str, str]] = field(default_factory=list)


# --------------------------------------------------------------------------- URLs

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def normalise_url(url: str, default_scheme: str = "http") -> str:
    """Add a scheme to scheme-less URLs (``app:5000/x`` -> ``http://app:5000/x``)."""
    url = url.strip()
    if not url:
        return url
    # Most URLs start with one of these, and every such URL matches ``_SCHEME``.
    if url.startswith(("http://", "https://")) or _SCHEME.match(url):
        return url
    if url.startswith("//"):
        return f"{default_scheme}:{url}"
    if url.startswith(":"):  # httpie shorthand for localhost
        return f"{default_scheme}://localhost{url}"
    return f"{default_scheme}://{url}"


class UrlParts(NamedTuple):
    scheme: str
    host: str
    port: int | None
    path: str
    query: str
    user: str | None
    password: str | None


@functools.lru_cache(maxsize=16384)
def split_url(url: str) -> UrlParts:
    """Parse a URL without raising (bad ports become None, unknown text stays in path)."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        try:
            port = parts.port
        except ValueError:
            port = None
        if port is None and parts.scheme in ("http", "ws"):
            port = 80
        elif port is None and parts.scheme in ("https", "wss"):
            port = 443
        user = unquote(parts.username) if parts.username else None
        password = unquote(parts.password) if parts.password else None
        return UrlParts(
            parts.scheme.lower(), host, port, parts.path or "/", parts.query, user, password
        )
    except (ValueError, TypeError):
        return UrlParts("", "", None, url, "", None, None)


_URL_CREDENTIALS = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/@\s]*)@(.*)$", re.S)


def strip_credentials(url: str) -> str:
    """The URL without ``user:pass@`` (the credentials are reported separately)."""
    if "@" not in url:  # the common case, for every request of every view
        return url
    m = _URL_CREDENTIALS.match(url)
    return m.group(1) + m.group(3) if m else url


def _looks_like_url(arg: str) -> bool:
    if not arg or arg.startswith("-"):
        return False
    if _SCHEME.match(arg):
        return arg.split("://", 1)[0].lower() in (
            "http",
            "https",
            "ws",
            "wss",
            "ftp",
            "file",
            "gopher",
            "dict",
        )
    # Scheme-less host[:port][/path]
    return bool(_HOST_PATH.match(arg)) and (":" in arg or "/" in arg or "." in arg)


_HOST_PATH = re.compile(r"^(?:[A-Za-z0-9_.-]+|\[[0-9a-fA-F:]+\])(?::\d+)?(?:/\S*)?$")


# --------------------------------------------------------------------------- parts of a request

def add_header(headers: dict[str, str], line: str) -> None:
    name, sep, value = line.partition(":")
    if not sep:
        name, sep, value = line.partition(";")  # curl's "X-Empty;" form
        if not sep:
            return
    key = name.strip().lower()
    if not key:
        return
    value = value.strip()
    headers[key] = (
        f"{headers[key]}, {value}" if key in headers and key != "authorization" else value
    )


def set_user(req: Request, user: str | None) -> None:
    if user is None:
        return
    name, sep, password = user.partition(":")
    req.auth_user = name
    req.auth_password = password if sep else None


def file_content(path: str, files: FileLookup, stdin: str | None) -> str | None:
    if path == "-":
        return stdin
    return files(path)


# --------------------------------------------------------------------------- raw HTTP (nc)

_REQ_LINE = re.compile(r"^([A-Z]{3,10}) (\S+) HTTP/\d(?:\.\d)?\s*$")


def parse_raw_http(
    text: str, host: str, port: int | None, client: str, scheme: str = "http"
) -> list[Request]:
    """Requests in a raw HTTP/1.x byte stream (possibly several, pipelined)."""
    out: list[Request] = []
    text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = _REQ_LINE.match(lines[i].strip())
        if not m:
            i += 1
            continue
        method, target = m.group(1), m.group(2)
        i += 1
        headers: dict[str, str] = {}
        while i < len(lines) and lines[i].strip():
            add_header(headers, lines[i])
            i += 1
        i += 1  # blank line
        body_lines: list[str] = []
        length = headers.get("content-length", "")
        if length.isdigit():
            need = int(length)
            got = 0
            while i < len(lines) and got < need:
                body_lines.append(lines[i])
                got += len(lines[i]) + 1
                i += 1
            body = "\n".join(body_lines)[:need]
        else:
            while i < len(lines) and not _REQ_LINE.match(lines[i].strip()):
                body_lines.append(lines[i])
                i += 1
            body = "\n".join(body_lines).strip("\n")
        hosthdr = headers.get("host", "")
        netloc = host + (f":{port}" if port and port not in (80, 443) else "")
        if target.startswith(("http://", "https://")):
            url = target
        else:
            url = f"{scheme}://{netloc or hosthdr}{target if target.startswith('/') else '/' + target}"
        req = Request(
            method=method, url=url, client=client, headers=headers, body=body, include_headers=True
        )
        out.append(req)
    return out
