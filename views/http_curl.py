"""HTTP requests of a ``curl`` command line: options, globs, data, forms, files.

Tolerant like every reader of the view: an unknown option is skipped, nothing raises.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, quote

from monsearch.views.command import Command
from monsearch.views.request import (
    FileLookup,
    Request,
    _looks_like_url,
    add_header,
    file_content,
    normalise_url,
    set_user,
)

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
                content = file_content(v[1:], files, cmd.stdin) or ""
                for line in content.splitlines():
                    add_header(headers, line)
            else:
                add_header(headers, v)
        elif opt == "-d" or opt == "--data-binary" or opt == "--data-raw" or opt == "--json":
            if opt == "--json":
                json_mode = True
            if v.startswith("@") and opt != "--data-raw":
                content = file_content(v[1:], files, cmd.stdin)
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
        content = file_content(upload_file, files, cmd.stdin)
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
                set_user(req, user)
            out.append(req)
    return out


def _data_urlencode(v: str, files: FileLookup, stdin: str | None) -> str:
    if "=" in v:
        name, _, content = v.partition("=")
        return f"{name}={quote(content, safe='')}" if name else quote(content, safe="")
    if "@" in v:
        name, _, path = v.partition("@")
        content = file_content(path, files, stdin) or ""
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
        content = file_content(path, files, stdin)
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
