"""HTTP requests out of the commands an agent ran.

:func:`extract_requests` takes the simple commands of one step (from
:func:`monsearch.views.shell.run_script`) and returns :class:`Request`
records for the HTTP clients among them: curl, wget, httpie (``http``/``https``/
``xh``), raw HTTP piped into ``nc``/``ncat``/``netcat``/``socat``/``telnet``, and
Python code (``python3 -c``, heredocs, scripts written earlier) read by
:mod:`monsearch.views.http_python`. Every parser is tolerant: unknown options
are skipped, and nothing raises.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from monsearch.views.shell import Command

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


# --------------------------------------------------------------------------- curl

_CURL_ARG = {
    "-X",
    "--request",
    "-d",
    "--data",
    "--data-raw",
    "--data-binary",
    "--data-urlencode",
    "--data-ascii",
    "--json",
    "-F",
    "--form",
    "--form-string",
    "-H",
    "--header",
    "-u",
    "--user",
    "-o",
    "--output",
    "-w",
    "--write-out",
    "-A",
    "--user-agent",
    "-e",
    "--referer",
    "-b",
    "--cookie",
    "-c",
    "--cookie-jar",
    "-x",
    "--proxy",
    "-m",
    "--max-time",
    "--connect-timeout",
    "--retry",
    "--retry-delay",
    "--retry-max-time",
    "-T",
    "--upload-file",
    "--url",
    "-K",
    "--config",
    "-r",
    "--range",
    "-z",
    "--time-cond",
    "-E",
    "--cert",
    "--cacert",
    "--capath",
    "--key",
    "--resolve",
    "--connect-to",
    "--limit-rate",
    "--max-redirs",
    "-U",
    "--proxy-user",
    "--oauth2-bearer",
    "-Y",
    "--speed-limit",
    "-y",
    "--speed-time",
    "--interface",
    "-D",
    "--dump-header",
    "--unix-socket",
    "--abstract-unix-socket",
    "--variable",
    "--url-query",
    "-t",
    "--telnet-option",
    "-C",
    "--continue-at",
    "--local-port",
    "--dns-servers",
    "--keepalive-time",
    "--parallel-max",
    "--trace",
    "--trace-ascii",
    "--stderr",
    "--create-file-mode",
    "--aws-sigv4",
    "--ciphers",
    "--cert-type",
    "--key-type",
    "--pass",
    "--noproxy",
    "--proxy-header",
    "--request-target",
    "--expect100-timeout",
    "--happy-eyeballs-timeout-ms",
    "--mail-from",
    "--mail-rcpt",
    "--max-filesize",
    "-Q",
    "--quote",
    "-P",
    "--ftp-port",
    "--socks5",
    "--socks4",
    "--socks5-hostname",
    "--preproxy",
    "--retry-all-errors-delay",
    "--hostpubmd5",
    "--pinnedpubkey",
    "--write-out-file",
    "--etag-save",
    "--etag-compare",
    "--output-dir",
    "--rate",
    "--sasl-authzid",
    "--service-name",
    "--tls-max",
}
# Short options that take an argument (for clusters like -sX POST or -XPOST).
_CURL_SHORT_ARG = set("XdFHuowAebcxmTKrzEUYytDCQP")
_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


#: The options :func:`parse_curl` reads, each mapped to the one name its branch tests
#: (short and long spellings share it, as do options read alike: ``-v`` and ``-i``).
#: :func:`_curl_reads` drops every other option on the way (with its value), so the
#: options most commands are full of (``-s``, ``-m 10``, ``-o FILE``) cost no dispatch.
_CURL_READS: dict[str, str] = {
    "-X": "-X",
    "--request": "-X",
    "-H": "-H",
    "--header": "-H",
    "-d": "-d",  # (newlines dropped from a file's content)
    "--data": "-d",
    "--data-ascii": "-d",
    "--data-binary": "--data-binary",
    "--data-raw": "--data-raw",
    "--json": "--json",
    "--data-urlencode": "--data-urlencode",
    "-F": "-F",
    "--form": "-F",
    "--form-string": "--form-string",
    "-u": "-u",
    "--user": "-u",
    "--oauth2-bearer": "--oauth2-bearer",
    "-A": "-A",
    "--user-agent": "-A",
    "-e": "-e",
    "--referer": "-e",
    "-b": "-b",
    "--cookie": "-b",
    "--url": "--url",
    "-G": "-G",  # (flag)
    "--get": "-G",  # (flag)
    "-I": "-I",  # (flag)
    "--head": "-I",  # (flag)
    "-i": "-i",  # (flag)
    "--include": "-i",  # (flag)
    "-v": "-i",  # (flag)
    "--verbose": "-i",  # (flag)
    "--trace-ascii": "-i",
    "--trace": "-i",
    "-w": "-w",
    "--write-out": "-w",
    "-T": "-T",
    "--upload-file": "-T",
    "-g": "-g",  # (flag)
    "--globoff": "-g",  # (flag)
    "--url-query": "--url-query",
}


#: What :func:`_curl_reads` does with a word that is one whole option (``-s``, ``-X``,
#: ``--header``: most words of most commands): (its name in :data:`_CURL_READS`, None
#: when not read; whether it takes the next word as its value). The general tests give
#: the same for these words; one lookup is cheaper.
_CURL_LONE: dict[str, tuple[str | None, bool]] = {
    **{f"-{ch}": (_CURL_READS.get(f"-{ch}"), ch in _CURL_SHORT_ARG) for ch in _ALNUM},
    **{opt: (_CURL_READS.get(opt), True) for opt in _CURL_ARG if opt.startswith("--")},
    **{o: (k, False) for o, k in _CURL_READS.items() if o.startswith("--") and o not in _CURL_ARG},
}


def _curl_reads(argv: list[str]) -> list[tuple[str, str]]:
    """The options of curl's argv that :func:`parse_curl` reads, as (name in
    :data:`_CURL_READS`, value) pairs in order (value "" for a flag or a missing value);
    URLs come as ("", url)."""
    out: list[tuple[str, str]] = []
    i = 1
    n = len(argv)
    while i < n:
        a = argv[i]
        i += 1
        lone = _CURL_LONE.get(a)
        if lone is not None:
            name, valued = lone
            if valued:
                if name is not None:
                    out.append((name, argv[i] if i < n else ""))
                i += 1
            elif name is not None:
                out.append((name, ""))
            continue
        if not a.startswith("-") or a == "-":
            out.append(("", a))
            continue
        if a == "--":  # every word after it is a URL
            out.extend([("", url) for url in argv[i:]])
            break
        if len(a) == 2:  # a lone short option not in _CURL_LONE ("-#")
            name = _CURL_READS.get(a)
            if a[1] in _CURL_SHORT_ARG:
                if name is not None:
                    out.append((name, argv[i] if i < n else ""))
                i += 1
            elif name is not None:
                out.append((name, ""))
            continue
        if a.startswith("--"):
            opt, eq, val = a.partition("=")
            if opt in _CURL_ARG:
                name = _CURL_READS.get(opt)
                if eq:
                    if name is not None:
                        out.append((name, val))
                else:
                    if name is not None:
                        out.append((name, argv[i] if i < n else ""))
                    i += 1
            elif a in _CURL_READS:  # a flag ("--get=x" is none)
                out.append((_CURL_READS[a], ""))
            continue
        # Short cluster: -sSL, -sXPOST, -sX POST, -dfoo
        j = 1
        while j < len(a):
            opt = "-" + a[j]
            name = _CURL_READS.get(opt)
            if a[j] in _CURL_SHORT_ARG:
                rest = a[j + 1 :]
                if rest:
                    if name is not None:
                        out.append((name, rest))
                else:
                    if name is not None:
                        out.append((name, argv[i] if i < n else ""))
                    i += 1
                break
            if name is not None:
                out.append((name, ""))
            j += 1
    return out


def _file_content(path: str, files: FileLookup, stdin: str | None) -> str | None:
    if path == "-":
        return stdin
    return files(path)


def _curl_globs(url: str) -> tuple[list[str], int]:
    """curl URL globbing: ``{a,b}`` sets and ``[1-10]`` ranges -> (urls to list, total count)."""
    if "{" not in url and "[" not in url:
        return [url], 1
    m = re.search(r"\{([^{}]*,[^{}]*)\}", url)
    if m:
        urls: list[str] = []
        total = 0
        for alt in m.group(1).split(","):
            sub, count = _curl_globs(url[: m.start()] + alt + url[m.end() :])
            urls.extend(sub)
            total += count
        return urls, total
    m = re.search(r"\[(\d+)-(\d+)(?::(\d+))?\]", url)
    if m:
        a, b = int(m.group(1)), int(m.group(2))
        step = int(m.group(3) or 1) or 1
        count = max(0, (b - a) // step + 1)
        first = url[: m.start()] + m.group(1) + url[m.end() :]
        sub, c = _curl_globs(first)
        return sub, count * c
    m = re.search(r"\[([a-z])-([a-z])\]", url)
    if m:
        count = max(0, ord(m.group(2)) - ord(m.group(1)) + 1)
        sub, c = _curl_globs(url[: m.start()] + m.group(1) + url[m.end() :])
        return sub, count * c
    return [url], 1


def parse_curl(cmd: Command, files: FileLookup) -> list[Request]:
    method: str | None = None
    headers: dict[str, str] = {}
    data: list[str] = []
    form: dict[str, str] = {}
    upload: list[dict[str, str]] = []
    urls: list[str] = []
    user: str | None = None
    get_mode = False
    head = False
    include = False
    write_out = None
    upload_file: str | None = None
    json_mode = False
    globbing = True
    query_extra: list[tuple[str, str]] = []
    # (Branches in order of how often agents use the option; the names are disjoint.)
    for opt, v in _curl_reads(cmd.argv):
        if opt == "":
            # (The first URL is taken whatever it looks like: test that first.)
            if not urls or _looks_like_url(v):
                urls.append(v)
        elif opt == "-H":
            if v.startswith("@"):
                content = _file_content(v[1:], files, cmd.stdin) or ""
                for line in content.splitlines():
                    _add_header(headers, line)
            else:
                _add_header(headers, v)
        elif opt == "-d" or opt == "--data-binary" or opt == "--data-raw" or opt == "--json":
            if opt == "--json":
                json_mode = True
            if v.startswith("@") and opt != "--data-raw":
                content = _file_content(v[1:], files, cmd.stdin)
                if content is None:
                    content = v
                elif opt == "-d":
                    content = content.replace("\r", "").replace("\n", "")
                data.append(content)
            else:
                data.append(v)
        elif opt == "-X":
            method = v.upper()
        elif opt == "-i":
            include = True
        elif opt == "-w":
            write_out = v
        elif opt == "--data-urlencode":
            data.append(_data_urlencode(v, files, cmd.stdin))
        elif opt == "-F" or opt == "--form-string":
            _add_form(v, form, upload, files, cmd.stdin, literal=opt == "--form-string")
        elif opt == "-u":
            user = v
        elif opt == "--oauth2-bearer":
            headers.setdefault("authorization", f"Bearer {v}")
        elif opt == "-A":
            headers["user-agent"] = v
        elif opt == "-e":
            headers["referer"] = v
        elif opt == "-b":
            if "=" in v:
                headers["cookie"] = v
        elif opt == "--url":
            urls.append(v)
        elif opt == "-G":
            get_mode = True
        elif opt == "-I":
            head = True
            include = True
        elif opt == "-T":
            upload_file = v
        elif opt == "-g":
            globbing = False
        elif opt == "--url-query" and "=" in v:
            k, _, qv = v.partition("=")
            query_extra.append((k.lstrip("+"), qv))
    if not urls:
        return []
    body = "&".join(data)
    if json_mode:
        headers.setdefault("content-type", "application/json")
        headers.setdefault("accept", "application/json")
    elif data and not get_mode:
        headers.setdefault("content-type", "application/x-www-form-urlencoded")
    if form or upload:
        headers.setdefault("content-type", "multipart/form-data")
    if upload_file is not None:
        content = _file_content(upload_file, files, cmd.stdin)
        body = content if content is not None else body
    if method is None:
        if head:
            method = "HEAD"
        elif get_mode:
            method = "GET"
        elif upload_file is not None:
            method = "PUT"
        elif data or form or upload or json_mode:
            method = "POST"
        else:
            method = "GET"
    if get_mode and data:
        query_extra = query_extra + [p for d in data for p in parse_qsl(d, keep_blank_values=True)]
        body = ""
    elif data and not form and not json_mode and "json" not in headers.get("content-type", ""):
        for k, v in parse_qsl(body, keep_blank_values=True):
            form.setdefault(k, v)
    out: list[Request] = []
    for url in urls:
        expanded, count = _curl_globs(url) if globbing else ([url], 1)
        for u in expanded:
            # The first request takes the containers built here, later ones copies (most
            # commands send one request: no copies). Arguments by position, in field
            # order: cheaper than a keyword call.
            first = not out
            req = Request(
                method,
                normalise_url(u),
                "curl",
                headers if first else dict(headers),
                body,
                form if first else dict(form),
                upload if first else [dict(f) for f in upload],  # files
                cmd.repeat * (count if len(expanded) == 1 else 1),  # repeat
                cmd.repeat_known,
                None,  # auth_user
                None,  # auth_password
                write_out,
                include,  # include_headers
                cmd.background,
                query_extra if first else list(query_extra),
            )
            if user is not None:
                _set_user(req, user)
            out.append(req)
    return out


def _set_user(req: Request, user: str | None) -> None:
    if user is None:
        return
    name, sep, password = user.partition(":")
    req.auth_user = name
    req.auth_password = password if sep else None


def _add_header(headers: dict[str, str], line: str) -> None:
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


def _data_urlencode(v: str, files: FileLookup, stdin: str | None) -> str:
    if "=" in v:
        name, _, content = v.partition("=")
        return f"{name}={quote(content, safe='')}" if name else quote(content, safe="")
    if "@" in v:
        name, _, path = v.partition("@")
        content = _file_content(path, files, stdin) or ""
        return f"{name}={quote(content, safe='')}" if name else quote(content, safe="")
    return quote(v, safe="")


def _add_form(
    v: str,
    form: dict[str, str],
    upload: list[dict[str, str]],
    files: FileLookup,
    stdin: str | None,
    literal: bool,
) -> None:
    name, sep, value = v.partition("=")
    if not sep:
        return
    if not literal and value.startswith(("@", "<")):
        spec = value[1:]
        path = spec.split(";", 1)[0]
        fname = path.rsplit("/", 1)[-1]
        m = re.search(r";filename=\"?([^;\"]+)", spec)
        if m:
            fname = m.group(1)
        content = _file_content(path, files, stdin)
        if value.startswith("<"):  # field value read from a file
            form[name] = content if content is not None else ""
        else:
            upload.append(
                {
                    "field": name,
                    "filename": fname if path != "-" else (fname if m else "-"),
                    "content": content or "",
                    "path": path,
                }
            )
        return
    form[name] = value.split(";type=", 1)[0] if not literal else value


# --------------------------------------------------------------------------- wget

_WGET_ARG = {
    "-O",
    "--output-document",
    "-o",
    "--output-file",
    "-a",
    "--append-output",
    "-U",
    "--user-agent",
    "-t",
    "--tries",
    "-T",
    "--timeout",
    "-w",
    "--wait",
    "-P",
    "--directory-prefix",
    "-e",
    "--execute",
    "-i",
    "--input-file",
    "-B",
    "--base",
    "-Q",
    "--quota",
    "-l",
    "--level",
    "-D",
    "--domains",
    "-A",
    "--accept",
    "-R",
    "--reject",
    "-I",
    "-X",
    "--header",
    "--method",
    "--post-data",
    "--post-file",
    "--body-data",
    "--body-file",
    "--user",
    "--password",
    "--http-user",
    "--http-password",
    "--load-cookies",
    "--save-cookies",
    "--referer",
    "--bind-address",
    "--limit-rate",
    "--waitretry",
    "--ca-certificate",
    "--certificate",
    "--private-key",
    "--proxy-user",
    "--proxy-password",
}


def parse_wget(cmd: Command, files: FileLookup) -> list[Request]:
    method: str | None = None
    headers: dict[str, str] = {}
    body = ""
    urls: list[str] = []
    user = password = None
    server_response = False
    argv = cmd.argv
    i = 1
    while i < len(argv):
        a = argv[i]
        i += 1
        if not a.startswith("-") or a == "-":
            urls.append(a)
            continue
        name, eq, val = a.partition("=")
        if name.startswith("--") and eq:
            value = val
        elif name in _WGET_ARG or (len(a) > 2 and not a.startswith("--") and a[:2] in _WGET_ARG):
            if len(a) > 2 and not a.startswith("--"):
                name, value = a[:2], a[2:]
            else:
                value = argv[i] if i < len(argv) else ""
                i += 1
        else:
            if a in ("-S", "--server-response", "-d", "--debug"):
                server_response = True
            continue
        if name == "--method":
            method = value.upper()
        elif name == "--header":
            _add_header(headers, value)
        elif name in ("--post-data", "--body-data"):
            body = value
            method = method or "POST"
        elif name in ("--post-file", "--body-file"):
            body = _file_content(value, files, cmd.stdin) or ""
            method = method or "POST"
        elif name in ("--user", "--http-user"):
            user = value
        elif name in ("--password", "--http-password"):
            password = value
        elif name in ("-U", "--user-agent"):
            headers["user-agent"] = value
        elif name == "--referer":
            headers["referer"] = value
        elif name in ("-i", "--input-file"):
            content = _file_content(value, files, cmd.stdin)
            if content:
                urls.extend(u.strip() for u in content.splitlines() if u.strip())
    if body and "content-type" not in headers:
        headers["content-type"] = "application/x-www-form-urlencoded"
    out = []
    for url in urls:
        req = Request(
            method=method or "GET",
            url=normalise_url(url),
            client="wget",
            headers=dict(headers),
            body=body,
            repeat=cmd.repeat,
            repeat_known=cmd.repeat_known,
            include_headers=server_response,
            background=cmd.background,
        )
        if "x-www-form-urlencoded" in headers.get("content-type", ""):
            req.form = dict(parse_qsl(body, keep_blank_values=True))
        req.auth_user = user
        req.auth_password = password
        out.append(req)
    return out


# --------------------------------------------------------------------------- httpie

_HTTPIE_ARG = {
    "-a",
    "--auth",
    "-A",
    "--auth-type",
    "-p",
    "--print",
    "-o",
    "--output",
    "--session",
    "--session-read-only",
    "--timeout",
    "--raw",
    "--verify",
    "--cert",
    "--cert-key",
    "--proxy",
    "--pretty",
    "-s",
    "--style",
    "--max-redirects",
    "--default-scheme",
    "--format-options",
    "--response-charset",
    "--response-mime",
    "--boundary",
    "--ssl",
    "--ciphers",
    "--max-headers",
}
_HTTP_METHODS = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "CONNECT"}
_HTTPIE_ITEM = re.compile(r"^((?:[^:=@\\]|\\.)+?)(:=@|:=|==|=@|@|=|:)(.*)$", re.S)


def parse_httpie(cmd: Command, files: FileLookup) -> list[Request]:
    argv = cmd.argv
    scheme = "https" if argv[0] in ("https", "xhs") else "http"
    form_mode = False
    auth = None
    raw_body: str | None = None
    verbose = False
    positional: list[str] = []
    i = 1
    while i < len(argv):
        a = argv[i]
        i += 1
        if a.startswith("-") and len(a) > 1:
            name, eq, val = a.partition("=")
            if name in _HTTPIE_ARG:
                value = val if eq else (argv[i] if i < len(argv) else "")
                if not eq:
                    i += 1
                if name in ("-a", "--auth"):
                    auth = value
                elif name == "--raw":
                    raw_body = value
                continue
            if a in ("-f", "--form", "--multipart"):
                form_mode = True
            elif a in ("-v", "--verbose", "-h", "--headers", "--all"):
                verbose = True
            continue
        positional.append(a)
    if not positional:
        return []
    method: str | None = None
    if positional[0].upper() in _HTTP_METHODS and len(positional) > 1:
        method = positional[0].upper()
        positional = positional[1:]
    url = normalise_url(positional[0], scheme)
    headers: dict[str, str] = {}
    data: dict[str, object] = {}
    form: dict[str, str] = {}
    upload: list[dict[str, str]] = []
    query: list[tuple[str, str]] = []
    for item in positional[1:]:
        m = _HTTPIE_ITEM.match(item)
        if not m:
            continue
        key, sep, value = m.group(1).replace("\\", ""), m.group(2), m.group(3)
        if sep == ":":
            headers[key.lower()] = value
        elif sep == "==":
            query.append((key, value))
        elif sep == "=":
            data[key] = value
            form[key] = value
        elif sep == ":=":
            try:
                data[key] = json.loads(value)
            except ValueError:
                data[key] = value
        elif sep == "=@":
            content = _file_content(value, files, cmd.stdin) or ""
            data[key] = content
            form[key] = content
        elif sep == ":=@":
            content = _file_content(value, files, cmd.stdin) or ""
            try:
                data[key] = json.loads(content)
            except ValueError:
                data[key] = content
        elif sep == "@":
            content = _file_content(value.split(";", 1)[0], files, cmd.stdin) or ""
            upload.append(
                {
                    "field": key,
                    "filename": value.split(";", 1)[0].rsplit("/", 1)[-1],
                    "content": content,
                    "path": value,
                }
            )
            form_mode = True
    if (
        raw_body is None
        and cmd.stdin is not None
        and not data
        and not upload
        and cmd.piped_from is not None
    ):
        raw_body = cmd.stdin
    if raw_body is not None:
        body = raw_body
    elif form_mode:
        body = urlencode(list(form.items())) if not upload else ""
        headers.setdefault(
            "content-type", "multipart/form-data" if upload else "application/x-www-form-urlencoded"
        )
    elif data:
        body = json.dumps(data)
        headers.setdefault("content-type", "application/json")
    else:
        body = ""
    req = Request(
        method=method or ("POST" if body or upload else "GET"),
        url=url,
        client="httpie",
        headers=headers,
        body=body,
        form=form if form_mode else {},
        files=upload,
        repeat=cmd.repeat,
        repeat_known=cmd.repeat_known,
        include_headers=True,  # httpie prints the status line by default on a terminal-less run with -v/-h
        background=cmd.background,
        query_extra=query,
    )
    req.include_headers = verbose
    _set_user(req, auth)
    return [req]


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
            _add_header(headers, lines[i])
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


def parse_nc(cmd: Command) -> list[Request]:
    argv = cmd.argv
    name = argv[0]
    if name == "socat":
        target = next(
            (a for a in argv[1:] if a.upper().startswith(("TCP:", "TCP4:", "OPENSSL:", "SSL:"))),
            None,
        )
        if target is None:
            return []
        _, _, rest = target.partition(":")
        host, _, port = rest.split(",", 1)[0].rpartition(":")
        pos = [host, port]
        scheme = "https" if target.upper().startswith(("OPENSSL", "SSL")) else "http"
    else:
        if any(
            a in ("-l", "-lp", "-lvp", "-lnvp", "-nlvp", "-lvnp")
            or (a.startswith("-") and "l" in a and not a.startswith("--"))
            for a in argv[1:]
        ):
            return []
        pos = []
        skip_next = False
        for a in argv[1:]:
            if skip_next:
                skip_next = False
                continue
            if a.startswith("-"):
                if a in ("-w", "-q", "-i", "-p", "-s", "-x", "-X", "-W", "-T", "-O", "-I"):
                    skip_next = True
                continue
            pos.append(a)
        scheme = "http"
    if len(pos) < 2 or not cmd.stdin:
        return []
    host = pos[0].lower()
    port = int(pos[1]) if pos[1].isdigit() else None
    reqs = parse_raw_http(cmd.stdin, host, port, "nc", scheme)
    for r in reqs:
        r.repeat = cmd.repeat
        r.repeat_known = cmd.repeat_known
        r.background = cmd.background
    return reqs


# --------------------------------------------------------------------------- dispatch

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


@functools.cache
def _python_reader() -> Callable[..., tuple[list[Request], dict[str, str]]]:
    """:func:`monsearch.views.http_python.read_python`, imported on first use (a cycle
    at module level) and kept: an import statement costs about a microsecond per call."""
    from monsearch.views.http_python import read_python

    return read_python


def extract_requests(
    cmds: list[Command],
    files: FileLookup,
    written: dict[str, str] | None = None,
    modules: ModuleLookup | None = None,
) -> list[Request]:
    """Every HTTP request the commands of one step send, in order.

    Files that Python code writes are added to ``written`` when given;
    ``modules`` finds modules written earlier that Python code imports
    (:data:`~monsearch.views.http_python.ModuleLookup`).
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
                    py_reqs, py_written = _python_reader()(
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
