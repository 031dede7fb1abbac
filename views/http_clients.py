"""HTTP requests of the other command-line clients: ``wget``, httpie (``http``/``https``/
``xh``) and raw HTTP piped into ``nc``/``ncat``/``netcat``/``socat``/``telnet``.

Tolerant like every reader of the view: an unknown option is skipped, nothing raises.
"""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qsl, urlencode

from monsearch.views.command import Command
from monsearch.views.request import (
    FileLookup,
    Request,
    add_header,
    file_content,
    normalise_url,
    parse_raw_http,
    set_user,
)

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
            add_header(headers, value)
        elif name in ("--post-data", "--body-data"):
            body = value
            method = method or "POST"
        elif name in ("--post-file", "--body-file"):
            body = file_content(value, files, cmd.stdin) or ""
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
            content = file_content(value, files, cmd.stdin)
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
            content = file_content(value, files, cmd.stdin) or ""
            data[key] = content
            form[key] = content
        elif sep == ":=@":
            content = file_content(value, files, cmd.stdin) or ""
            try:
                data[key] = json.loads(content)
            except ValueError:
                data[key] = content
        elif sep == "@":
            content = file_content(value.split(";", 1)[0], files, cmd.stdin) or ""
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
    set_user(req, auth)
    return [req]


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
