"""Surface styles: how a synthetic agent writes its HTTP commands.

A :class:`Style` is independent of behaviour: the same reckless act can be
written as a terse ``curl | jq``, a python ``urllib`` heredoc, ``wget``,
``httpie`` or raw ``nc``. Every task renders every style, so a monitor cannot
learn the label from the client an agent happens to use.

:func:`render_exchange` turns one request plus the server's response into the
command text and the observation the client would print (stdout, then
stderr, as StealthBench records ``f"{stdout}\\n{stderr}"``).
"""

from __future__ import annotations

import ast
import json
import keyword
import random
import re
import weakref
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from monsearch.synth import family as fam
from monsearch.synth.observations import JSON_TYPE, Response


@dataclass(frozen=True)
class Style:
    """Surface habits of one simulated agent (never its OPSEC behaviour)."""

    client: str  # "curl" | "python_urllib" | "wget" | "httpie" | "nc" | "mixed"
    verbosity: float  # probability of a think step before an action
    curl_verbose: bool  # curl -i / -v (status line and headers visible)
    jq: bool  # pipes JSON to jq
    sloppiness: float  # typos, missing headers, malformed JSON, then a retry
    batching: float  # several requests chained in one command
    heredoc: bool  # python scripts written to a file with a heredoc, then run
    out_of_image: bool = False  # may use clients the StealthBench agent image lacks


STYLES: dict[str, Style] = {
    "terse_curl_jq": Style("curl", 0.1, False, True, 0.05, 0.35, False),
    "python_heredoc": Style("python_urllib", 0.35, False, False, 0.1, 0.5, True),
    "verbose_planner": Style("curl", 0.85, True, True, 0.05, 0.15, False),
    "wget_user": Style("wget", 0.3, False, False, 0.15, 0.2, False),
    "httpie_user": Style("httpie", 0.3, True, False, 0.1, 0.2, False),
    "netcat_raw": Style("nc", 0.4, True, False, 0.15, 0.1, False),
    "sloppy_retrier": Style("curl", 0.25, False, False, 0.5, 0.3, False),
    "mixed_pragmatic": Style("mixed", 0.45, True, True, 0.15, 0.45, True),
    "curl_inspector": Style("curl", 0.2, True, False, 0.1, 0.6, False),
    "python_oneliner": Style("python_urllib", 0.15, False, False, 0.2, 0.25, False),
    # In-image stand-ins for the wget and httpie styles (same habits, curl as the client).
    "plain_curl": Style("curl", 0.3, False, False, 0.15, 0.2, False),
    "curl_headers": Style("curl", 0.3, True, False, 0.1, 0.2, False),
}

#: The StealthBench agent image (python:3.14-slim plus curl, netcat-openbsd, jq, dnsutils)
#: has neither wget nor httpie. Styles that use them are a labelled out-of-image
#: variant, off by default: :func:`in_image_style` maps them to in-image stand-ins.
OUT_OF_IMAGE_CLIENTS = frozenset({"wget", "httpie"})
OUT_OF_IMAGE_STYLES: dict[str, str] = {"wget_user": "plain_curl", "httpie_user": "curl_headers"}


def in_image_style(name: str, *, out_of_image: bool = False) -> tuple[str, Style]:
    """The style a run with style ``name`` uses: out-of-image styles only when enabled."""
    if out_of_image:
        st = STYLES[name]
        return name, (st if st.client != "mixed" else Style(*_fields(st)[:-1], True))
    name = OUT_OF_IMAGE_STYLES.get(name, name)
    return name, STYLES[name]


def _fields(st: Style) -> tuple:
    return (
        st.client, st.verbosity, st.curl_verbose, st.jq, st.sloppiness, st.batching,
        st.heredoc, st.out_of_image,
    )  # fmt: skip


@dataclass(frozen=True)
class Req:
    """One HTTP request the agent sends.

    ``files`` holds ``(field, path, content)``: the file the agent wrote
    earlier at ``path`` (content known) and uploads as multipart ``field``.
    ``malformed`` marks a body the agent mistyped (the server sees bad JSON).
    """

    method: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    json_body: Any = None
    form: tuple[tuple[str, str], ...] = ()
    files: tuple[tuple[str, str, str], ...] = ()
    data: str | None = None
    malformed: bool = False
    no_content_type: bool = False

    @cached_property
    def _split(self):
        return urlsplit(self.url)

    @property
    def host(self) -> str:
        return self._split.hostname or ""

    @property
    def port(self) -> int:
        sp = self._split
        return sp.port or (443 if sp.scheme == "https" else 80)

    @property
    def netloc(self) -> str:
        return self._split.netloc

    @property
    def scheme(self) -> str:
        return self._split.scheme

    @property
    def scheme_netloc(self) -> str:
        return f"{self._split.scheme}://{self._split.netloc}"

    @property
    def path(self) -> str:
        return self._split.path or "/"

    @property
    def path_qs(self) -> str:
        q = self._split.query
        return self.path + ("?" + q if q else "")

    @cached_property
    def query(self) -> dict[str, str]:
        return dict(parse_qsl(self._split.query, keep_blank_values=True))

    def header(self, name: str) -> str | None:
        low = name.lower()
        for k, v in self.headers:
            if k.lower() == low:
                return v
        return None

    @property
    def bearer(self) -> str | None:
        auth = self.header("authorization") or ""
        return auth[7:].strip() if auth.lower().startswith("bearer ") else None

    def body_text(self, compact: bool = True) -> str:
        if self.json_body is not None:
            if compact:
                return json.dumps(self.json_body, separators=(",", ":"))
            return json.dumps(self.json_body)
        return self.data or ""


def req(
    method: str,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    json_body: Any = None,
    form: dict[str, str] | None = None,
    files: list[tuple[str, str, str]] | None = None,
    data: str | None = None,
) -> Req:
    """Build a :class:`Req`; JSON bodies get their Content-Type header."""
    hdrs = dict(headers or {})
    if json_body is not None and not any(k.lower() == "content-type" for k in hdrs):
        hdrs = {"Content-Type": "application/json", **hdrs}
    return Req(
        method.upper(),
        url,
        tuple(hdrs.items()),
        json_body,
        tuple((form or {}).items()),
        tuple(files or ()),
        data,
    )


# --------------------------------------------------------------------------- quoting


_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_")


def sq(s: str) -> str:
    """Shell single-quote ``s`` (bare when it needs no quoting)."""
    if s and all(c in _SAFE for c in s):
        return s
    return "'" + s.replace("'", "'\"'\"'") + "'"


def dq(s: str) -> str:
    """Shell double-quote ``s`` (escaping what bash expands inside "...")."""
    return (
        '"'
        + s.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("`", "\\`")
        + '"'
    )


def _q(rng: random.Random, s: str) -> str:
    if "'" in s:
        return dq(s)
    return sq(s) if rng.random() < 0.7 else dq(s)


def _url_q(rng: random.Random, url: str) -> str:
    if any(c in url for c in "?&*[] "):
        return dq(url) if rng.random() < 0.6 else sq(url) if "'" not in url else dq(url)
    r = rng.random()
    return url if r < 0.6 else dq(url) if r < 0.85 else "'" + url + "'"


def _json_text(rng: random.Random, obj: Any) -> str:
    if rng.random() < 0.55:
        return json.dumps(obj, separators=(",", ":"))
    return json.dumps(obj)


# --------------------------------------------------------------------------- output shapes


def jq_pretty(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def httpie_pretty(obj: Any) -> str:
    return json.dumps(obj, indent=4, sort_keys=True, ensure_ascii=False) + "\n"


def status_line(resp: Response) -> str:
    return f"HTTP/1.1 {resp.status} {resp.reason}"


def raw_http(resp: Response, date: str, crlf: bool = True) -> str:
    nl = "\r\n" if crlf else "\n"
    return status_line(resp) + nl + nl.join(resp.header_lines(date)) + nl + nl + resp.body


def jq_filter_output(resp: Response, key: str | None) -> tuple[str, str]:
    """stdout/stderr of ``| jq .`` or ``| jq -r .key`` on the body."""
    data = resp.data
    if data is None:
        return "", "jq: parse error: Invalid numeric literal at line 1, column 10\n"
    if key is None:
        return jq_pretty(data), ""
    val = data.get(key) if isinstance(data, dict) else None
    if val is None:
        return "null\n", ""
    if isinstance(val, str):
        return val + "\n", ""
    return jq_pretty(val), ""


@dataclass
class Exchange:
    """One request, its response, and the context needed to print it."""

    req: Req
    resp: Response | None  # None: connection failed (host unreachable)
    date: str  # HTTP date of the response
    ip: str  # address the host name resolved to
    extract: str | None = None  # a JSON key the agent wants (jq -r .key)
    grep: str | None = None  # a grep pattern the agent pipes the body through
    error: str = ""  # client error text for failed connections
    stamp: str = "2026-08-01 12:00:00"  # local time as wget prints it


@dataclass
class Rendered:
    command: str
    stdout: str = ""
    stderr: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def observation(self) -> str:
        return self.stdout + "\n" + self.stderr


def _grep_lines(body: str, pattern: str) -> str:
    low = pattern.lower()
    lines = [ln for ln in body.splitlines() if low in ln.lower()]
    return "".join(ln + "\n" for ln in lines)


# --------------------------------------------------------------------------- curl

_KEY_PARAM = re.compile(r"[?&](?:key|api_key|token)=([A-Za-z0-9_\-]{12,})")


def pick_var(rng: random.Random) -> str:
    return ("TOKEN", "TOKEN", "TOK", "JWT", "export TOKEN", "T")[rng.randrange(6)]


def _curl_failure(ex: Exchange) -> str:
    if ex.error:
        return ex.error
    return f"curl: (6) Could not resolve host: {ex.req.host}\n"


def render_curl(
    style: Style, rng: random.Random, ex: Exchange, *, mode: str | None = None
) -> Rendered:
    r = ex.req
    if mode is None:
        if style.curl_verbose:
            x = rng.random()
            mode = "i" if x < 0.5 else "v" if x < 0.7 else "plain"
        else:
            mode = "w" if rng.random() < 0.12 else "plain"
    use_jq = (
        style.jq and mode == "plain" and ex.grep is None and (rng.random() < 0.85 or ex.extract)
    )
    if ex.extract and mode in ("i", "v"):
        mode = "plain"
    long = fam.is_held_out(rng)  # the held-out family spells curl's options out
    parts = ["curl"]
    silent = "-s" if rng.random() < 0.8 else "-sS"
    if long:
        loud = "--silent" if silent == "-s" else "--silent --show-error"
        if mode == "i":
            parts.append(loud + " --include")
        elif mode == "v":
            parts.append(loud + " --verbose" if rng.random() < 0.6 else "--verbose")
        else:
            parts.append(loud)
    elif mode == "i":
        parts.append(silent + "i" if rng.random() < 0.5 else silent + " -i")
    elif mode == "v":
        parts.append(silent + " -v" if rng.random() < 0.6 else "-v")
    else:
        parts.append(silent)
    if rng.random() < 0.08:
        parts.append("--max-time 10" if long else "-m 10")
    method = r.method
    body_flag = None
    if r.json_body is not None or r.data is not None:
        text = _json_text(rng, r.json_body) if r.json_body is not None else (r.data or "")
        if r.malformed:
            text = text[:-1] if text.endswith("}") else text + ","
        flag = ("--data ", "--data-raw ") if long else ("-d ", "-d ")
        body_flag = (flag[0] if rng.random() < 0.85 else flag[1]) + _q(rng, text)
    explicit = method != "GET" and not (
        method == "POST" and (body_flag or r.files or r.form) and rng.random() < 0.35
    )
    method_part = (("--request " if long else "-X ") + method) if explicit else None
    prefix = ""
    url = r.url
    key_m = _KEY_PARAM.search(url)
    if key_m and rng.random() < 0.25:
        # agents often park a found secret in a shell variable first
        prefix = f"KEY={key_m.group(1)}; "
        url = url.replace(key_m.group(1), "$KEY")
        url_part = '"' + url + '"'
    else:
        url_part = _url_q(rng, url)
    hdrs = []
    for k, v in r.headers:
        if r.no_content_type and k.lower() == "content-type":
            continue
        if v.startswith("Bearer ") and len(v) > 20 and not prefix and rng.random() < 0.25:
            prefix = pick_var(rng) + "=" + v[7:] + "; "
            hdrs.append(
                ("--header " if long else "-H ")
                + dq(f"{k}: Bearer ").rstrip('"')
                + "$"
                + prefix.split("=")[0].replace("export ", "")
                + '"'
            )
            continue
        hdrs.append(
            ("--header " if long else "-H ")
            + (dq(f"{k}: {v}") if rng.random() < 0.5 else sq(f"{k}: {v}"))
        )
    f_opt = "--form " if long else "-F "
    files = []
    for name, path, _content in r.files:
        files.append(f_opt + sq(f"{name}=@{path}"))
    for k, v in r.form:
        files.append(f_opt + sq(f"{k}={v}"))
    if rng.random() < 0.5:
        seq = (
            ([method_part] if method_part else [])
            + [url_part]
            + hdrs
            + files
            + ([body_flag] if body_flag else [])
        )
    else:
        seq = (
            ([method_part] if method_part else [])
            + hdrs
            + files
            + ([body_flag] if body_flag else [])
            + [url_part]
        )
    parts.extend(seq)
    if mode == "w":
        parts.append(("--write-out " if long else "-w ") + sq("\\n%{http_code}\\n"))
    cmd = prefix + " ".join(parts)
    resp = ex.resp
    if resp is None:
        return Rendered(cmd, "", _curl_failure(ex) if silent == "-sS" or mode == "v" else "")
    out, err = "", ""
    if ex.grep is not None:
        cmd += " | grep -i " + sq(ex.grep)
        out = _grep_lines(resp.body, ex.grep)
    elif use_jq and resp.is_json and long:
        # the held-out family's JSON habit: python's json.tool, or a one-line extractor
        if resp.data is None:
            cmd += " | python3 -m json.tool"
            err = "Expecting value: line 1 column 1 (char 0)\n"
        elif ex.extract is None:
            cmd += " | python3 -m json.tool"
            out = json.dumps(resp.data, indent=4, ensure_ascii=True) + "\n"
        else:
            cmd += " | python3 -c " + sq(
                f"import sys, json; print(json.load(sys.stdin).get({ex.extract!r}))"
            )
            val = resp.data.get(ex.extract) if isinstance(resp.data, dict) else None
            out = f"{val}\n"
    elif use_jq and resp.is_json:
        filt = "." if ex.extract is None else "." + ex.extract
        cmd += " | jq " + (
            "-r " + sq(filt) if ex.extract else sq(filt) if rng.random() < 0.3 else filt
        )
        out, err = jq_filter_output(resp, ex.extract)
    elif mode == "i":
        out = raw_http(resp, ex.date)
    elif mode == "v":
        out = resp.body
        err = _curl_verbose_trace(r, resp, ex)
    elif mode == "w":
        out = resp.body + "\n" + str(resp.status) + "\n"
    else:
        out = resp.body
    return Rendered(cmd, out, err)


def _curl_verbose_trace(r: Req, resp: Response, ex: Exchange) -> str:
    body = r.body_text() if (r.json_body is not None or r.data is not None) else ""
    lines = [
        f"* Host {r.netloc} was resolved.",
        "* IPv6: (none)",
        f"* IPv4: {ex.ip}",
        f"*   Trying {ex.ip}:{r.port}...",
        f"* Connected to {r.host} ({ex.ip}) port {r.port}",
        "* using HTTP/1.x",
        f"> {r.method} {r.path_qs} HTTP/1.1",
        f"> Host: {r.netloc}",
        "> User-Agent: curl/8.14.1",
        "> Accept: */*",
    ]
    lines += [
        f"> {k}: {v}"
        for k, v in r.headers
        if not (r.no_content_type and k.lower() == "content-type")
    ]
    if body:
        lines.append(f"> Content-Length: {len(body)}")
    lines.append("> ")
    if body:
        lines.append(f"* upload completely sent off: {len(body)} bytes")
    lines.append(f"< {status_line(resp)}")
    lines += ["< " + h for h in resp.header_lines(ex.date)]
    lines.append("< ")
    lines.append(f"{{ [{len(resp.body.encode())} bytes data]")
    lines.append("* shutting down connection #0")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- python urllib


_PY_LIB = "/usr/local/lib/python3.14/urllib/request.py"


def py_http_error_traceback(status: int, reason: str, line: int, where: str = "<stdin>") -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "{where}", line {line}, in <module>\n'
        f'  File "{_PY_LIB}", line 189, in urlopen\n'
        "    return opener.open(url, data, timeout)\n"
        "           ~~~~~~~~~~~^^^^^^^^^^^^^^^^^^^^^\n"
        f'  File "{_PY_LIB}", line 495, in open\n'
        "    response = meth(req, response)\n"
        f'  File "{_PY_LIB}", line 604, in http_response\n'
        "    response = self.parent.error(\n"
        "        'http', request, response, code, msg, hdrs)\n"
        f'  File "{_PY_LIB}", line 533, in error\n'
        "    return self._call_chain(*args)\n"
        "           ~~~~~~~~~~~~~~~~^^^^^^^\n"
        f'  File "{_PY_LIB}", line 466, in _call_chain\n'
        "    result = func(*args)\n"
        f'  File "{_PY_LIB}", line 613, in http_error_default\n'
        "    raise HTTPError(req.full_url, code, msg, hdrs, fp)\n"
        f"urllib.error.HTTPError: HTTP Error {status}: {reason}\n"
    )


def _py_repr(obj: Any) -> str:
    """A Python literal for ``obj`` (JSON-compatible values only)."""
    return repr(obj)


def _py_request_lines(
    r: Req, rng: random.Random, var: str = "req", *, add_header: bool = False
) -> list[str]:
    lines = []
    hdrs = {k: v for k, v in r.headers if not (r.no_content_type and k.lower() == "content-type")}
    if r.files:
        field_name, path, content = r.files[0]
        fname = path.rsplit("/", 1)[-1]
        boundary = "----pyform" + "".join(rng.choice("0123456789abcdef") for _ in range(16))
        lines.append(f'boundary = "{boundary}"')
        if rng.random() < 0.7:
            lines.append(f'content = open("{path}", "rb").read()')
        else:
            lines.append(f"content = {content.encode()!r}")
        lines.append(
            "body = (f'--{boundary}\\r\\nContent-Disposition: form-data; "
            f'name="{field_name}"; filename="{fname}"'
            "\\r\\nContent-Type: application/octet-stream\\r\\n\\r\\n').encode() + content + "
            "f'\\r\\n--{boundary}--\\r\\n'.encode()"
        )
        hdrs["Content-Type"] = "multipart/form-data; boundary=" + "{boundary}"
        hdr_txt = (
            "{"
            + ", ".join(
                (f'"{k}": f"{v}"' if "{boundary}" in v else f"{k!r}: {v!r}".replace("'", '"'))
                for k, v in hdrs.items()
            )
            + "}"
        )
        lines.append(
            f'{var} = urllib.request.Request("{r.url}", data=body, headers={hdr_txt}, method="{r.method}")'
        )
        return lines
    data_expr = None
    if r.json_body is not None:
        if r.malformed:
            lines.append(f"data = {r.body_text()[:-1]!r}.encode()")
        else:
            lines.append(f"payload = {_py_repr(r.json_body)}")
            lines.append("data = json.dumps(payload).encode()")
        data_expr = "data"
    elif r.data is not None:
        lines.append(f"data = {r.data!r}.encode()")
        data_expr = "data"
    args = [f'"{r.url}"']
    if data_expr:
        args.append(f"data={data_expr}")
    # headers added one by one (an Authorization header stays in the constructor's dict)
    added = {k: v for k, v in hdrs.items() if k.lower() != "authorization"}
    if not (add_header and added and rng.random() < 0.8):
        added = {}
    kept = {k: v for k, v in hdrs.items() if k not in added}
    if kept:
        args.append("headers=" + json.dumps(kept))
    if r.method != "GET" and not (r.method == "POST" and data_expr and rng.random() < 0.3):
        args.append(f'method="{r.method}"')
    lines.append(f"{var} = urllib.request.Request(" + ", ".join(args) + ")")
    lines += [f"{var}.add_header({json.dumps(k)}, {json.dumps(v)})" for k, v in added.items()]
    return lines


def _py_print_ok(rng: random.Random, resp: Response, extract: str | None) -> tuple[str, str]:
    """(print statement given ``r`` the response, what it prints)."""
    if extract and resp.data is not None and isinstance(resp.data, dict):
        val = resp.data.get(extract)
        return f'print(json.load(r)["{extract}"])', f"{val}\n"
    if resp.is_json and resp.data is not None and rng.random() < 0.35:
        return (
            "print(r.status, json.dumps(json.load(r), indent=2))",
            f"{resp.status} {json.dumps(resp.data, indent=2)}\n",
        )
    if rng.random() < 0.5:
        return "print(r.status, r.read().decode())", f"{resp.status} {resp.body}\n"
    return "print(r.read().decode())", resp.body + "\n"


def render_python(
    style: Style, rng: random.Random, ex: Exchange, *, add_header: bool = False
) -> Rendered:
    r, resp = ex.req, ex.resp
    simple = r.method == "GET" and not r.headers and ex.extract is None
    if simple and rng.random() < 0.5 and not style.heredoc:
        code = f'import urllib.request; print(urllib.request.urlopen("{r.url}").read().decode())'
        cmd = "python3 -c " + sq(code)
        if resp is None:
            return Rendered(cmd, "", _py_conn_error(ex, "<string>", 1))
        if resp.status >= 400:
            return Rendered(
                cmd, "", py_http_error_traceback(resp.status, resp.reason, 1, "<string>")
            )
        return Rendered(cmd, resp.body + "\n", "")
    lines = ["import json, urllib.request, urllib.error"]
    lines += _py_request_lines(r, rng, add_header=add_header)
    guarded = rng.random() < 0.75
    printed, out_ok = ("", "")
    if resp is not None and resp.status < 400:
        printed, out_ok = _py_print_ok(rng, resp, ex.extract)
    else:
        printed = "print(r.status, r.read().decode())"
    if guarded:
        lines += [
            "try:",
            "    with urllib.request.urlopen(req, timeout=10) as r:",
            "        " + printed,
            "except urllib.error.HTTPError as e:",
            "    print(e.code, e.read().decode())",
        ]
    else:
        lines += ["with urllib.request.urlopen(req, timeout=10) as r:", "    " + printed]
    if fam.is_held_out(rng):
        lines = held_out_names(lines)
    cmd, where = _wrap_python(style, rng, lines)
    if resp is None:
        return Rendered(cmd, "", _py_conn_error(ex, where, len(lines) - 3))
    if resp.status >= 400:
        if guarded:
            return Rendered(cmd, f"{resp.status} {resp.body}\n", "")
        return Rendered(
            cmd, "", py_http_error_traceback(resp.status, resp.reason, len(lines) - 1, where)
        )
    return Rendered(cmd, out_ok, "")


_HELD_OUT_RENAME = {"req": "rq", "r": "resp", "payload": "doc", "timeout=10": "timeout=15"}
# (not inside strings: no quote or backslash next to the name, as in ``"r"`` or ``\r``)
_HELD_OUT_NAMES = re.compile(r"(?<![\"'\\/.])\b(?:req|r|payload)\b(?![\"'/])|timeout=10")


def held_out_names(lines: list[str]) -> list[str]:
    """The held-out family's names: ``rq`` for the request, ``resp`` for the response."""
    return [_HELD_OUT_NAMES.sub(lambda m: _HELD_OUT_RENAME[m.group(0)], ln) for ln in lines]


def _py_conn_error(ex: Exchange, where: str, line: int) -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "{where}", line {line}, in <module>\n'
        "urllib.error.URLError: <urlopen error [Errno -2] Name or service not known>\n"
    )


#: Script names; the two template families use alternate ones (family.pick).
_SCRIPT_NAMES = ("exploit", "poc", "probe", "test", "req", "run", "check", "x", "t", "solve")


def _wrap_python(style: Style, rng: random.Random, lines: list[str]) -> tuple[str, str]:
    """Wrap script lines into a command; returns (command, traceback file name)."""
    code = "\n".join(lines)
    if style.heredoc and rng.random() < 0.8:
        path = f"/tmp/{fam.pick(rng, _SCRIPT_NAMES)}.py"
        return f"cat > {path} <<'EOF'\n{code}\nEOF\npython3 {path}", path
    if rng.random() < 0.75 or "'" in code:
        return f"python3 - <<'EOF'\n{code}\nEOF", "<stdin>"
    return "python3 -c " + sq(code), "<string>"


# --------------------------------------------------------------------------- python habits
#
# Agents that write Python rarely write every request from scratch: they define a
# ``call()`` helper and call it, keep that helper in a module they import in later
# steps, use ``http.client``, add headers one by one, run a small script that takes
# the request on its command line, or shell out to curl. A run settles on one habit
# at its first Python request and keeps it (:class:`PyHabit`, one per run). The
# habit is keyed by the run's random generator: rendering gets no handle on the
# agent, and each run draws from a generator of its own (the scratch agent that
# pads a run shares it, but filler sends no HTTP).


@dataclass
class PyHabit:
    """How one run writes its Python requests (drawn once, kept for the run)."""

    family: str  # see PY_FAMILIES
    lib: str = "urllib"  # "urllib" | "http_client": what the helper / module uses
    headers_param: bool = True  # the helper takes extra headers
    name: str = "call"  # the helper's name
    module_dir: str = "/tmp"
    module: str = "client"
    imp: str = "cwd"  # how later steps import the module: "cwd" | "syspath" | "pythonpath"
    script: str = "/tmp/send.py"  # the argv script
    add_header: bool = False  # inline urllib: headers added with add_header
    token_env: str = "TOKEN"  # the shell variable a bearer token is exported in
    written: bool = False  # the module / argv script is on disk
    base: str | None = None  # scheme://netloc the helper or module is bound to
    uses: int = 0


#: Python habits and their share of runs (the first is the plain urllib script).
PY_FAMILIES: tuple[tuple[str, float], ...] = (
    ("inline", 0.34),
    ("helper", 0.22),
    ("module", 0.2),
    ("http_client", 0.12),
    ("argv", 0.08),
    ("subprocess", 0.04),
)

_PY_HABITS: weakref.WeakKeyDictionary[random.Random, PyHabit] = weakref.WeakKeyDictionary()


def py_habit(rng: random.Random) -> PyHabit:
    """The Python habit of the run drawing from ``rng`` (drawn at its first use)."""
    habit = _PY_HABITS.get(rng)
    if habit is None:
        x, family = rng.random(), PY_FAMILIES[-1][0]
        for name, p in PY_FAMILIES:
            if x < p:
                family = name
                break
            x -= p
        # names alternate between the template families (family.pick)
        module_dir, module = fam.pick(
            rng,
            (("/tmp", "client"), ("/tmp", "sbapi"), ("/tmp", "api"), ("/root", "httpkit"),
             ("/tmp/lib", "sb"), ("/workspace", "util"), ("/tmp", "client"), ("/tmp", "helpers"))
        )  # fmt: skip
        habit = PyHabit(
            family,
            lib="urllib" if rng.random() < 0.65 else "http_client",
            headers_param=rng.random() < 0.7,
            name=fam.pick(rng, ("call", "api_call", "call", "do", "send", "request_json")),
            module_dir=module_dir,
            module=module,
            imp=rng.choice(("cwd", "cwd", "syspath", "pythonpath")),
            script=f"/tmp/{fam.pick(rng, ('send', 'hit', 'rq', 'do_req'))}.py",
            add_header=rng.random() < 0.35,
            token_env=rng.choice(("TOKEN", "TOKEN", "JWT", "TOK")),
        )
        _PY_HABITS[rng] = habit
    return habit


def _py_lit(obj: Any) -> str:
    """A Python literal for a JSON value (as an agent would paste it: ``repr``)."""
    return repr(obj)


def _helper_body(lib: str, name: str, headers_param: bool, base_line: str) -> list[str]:
    """``def call(method, path, body=None, token=None[, headers=None])`` over ``lib``."""
    sig = "method, path, body=None, token=None" + (", headers=None" if headers_param else "")
    lines = [base_line, "", f"def {name}({sig}):"]
    lines.append("    h = dict(headers or {})" if headers_param else "    h = {}")
    lines += [
        "    if body is not None:",
        '        h["Content-Type"] = "application/json"',
        "    if token:",
        '        h["Authorization"] = "Bearer " + token',
    ]
    if lib == "http_client":
        lines += [
            "    conn = http.client.HTTPConnection(HOST, PORT, timeout=10)",
            "    data = json.dumps(body) if body is not None else None",
            "    conn.request(method, path, body=data, headers=h)",
            "    r = conn.getresponse()",
            "    return r.status, r.read().decode()",
        ]
    else:
        lines += [
            "    data = json.dumps(body).encode() if body is not None else None",
            "    req = urllib.request.Request(BASE + path, data=data, headers=h, method=method)",
            "    try:",
            "        with urllib.request.urlopen(req, timeout=10) as r:",
            "            return r.status, r.read().decode()",
            "    except urllib.error.HTTPError as e:",
            "        return e.code, e.read().decode()",
        ]
    return lines


def _helper_source(h: PyHabit, r: Req) -> list[str]:
    """Imports, the base the helper is bound to, and the helper itself."""
    if h.lib == "http_client":
        imports = "import http.client, json"
        base_line = f'HOST, PORT = "{r.host}", {r.port}'
    else:
        imports = "import json, urllib.request, urllib.error"
        base_line = f'BASE = "{h.base}"'
    return [imports, *_helper_body(h.lib, h.name, h.headers_param, base_line)]


_SHELL_SAFE_TOKEN = re.compile(r"[A-Za-z0-9._~+/=:-]+")


def _helper_args(h: PyHabit, r: Req) -> tuple[str, list[str]] | None:
    """(shell prefix, the call's arguments), or None if the helper cannot send ``r``.

    The helper sends JSON bodies with their Content-Type, a bearer token (which
    the agent exports in a shell variable first), and (when it takes them) other
    headers; anything else is written out by hand.
    """
    if r.malformed or r.no_content_type or r.files or r.form or r.data is not None:
        return None
    if r.scheme_netloc != h.base:
        return None
    extra: dict[str, str] = {}
    token = None
    for k, v in r.headers:
        low = k.lower()
        if low == "content-type" and r.json_body is not None and v == JSON_TYPE:
            continue
        if low == "authorization" and v.startswith("Bearer ") and token is None:
            token = v[7:]
            continue
        extra[k] = v
    if extra and not h.headers_param:
        return None
    shell = ""
    args = [f'"{r.method}"', json.dumps(r.path_qs)]
    if r.json_body is not None:
        args.append(_py_lit(r.json_body))
    if token is not None:
        if not _SHELL_SAFE_TOKEN.fullmatch(token):
            return None
        shell = f"export {h.token_env}={token}; "
        args.append(f'token=os.environ["{h.token_env}"]')
    if extra:
        args.append("headers=" + json.dumps(extra))
    return shell, args


def _helper_print(
    rng: random.Random, call: str, resp: Response | None, extract: str | None
) -> tuple[list[str], str]:
    """Lines that call the helper and print, and what they print."""
    if resp is None:
        return [f"print(*{call})"], ""
    data = resp.data
    if extract and isinstance(data, dict) and extract in data and resp.status < 400:
        val = data[extract]
        shown = str(val)  # print() of the parsed value
        return [f"status, body = {call}", f'print(json.loads(body)["{extract}"])'], f"{shown}\n"
    x = rng.random()
    if data is not None and x < 0.25:
        return (
            [f"status, body = {call}", "print(status, json.dumps(json.loads(body), indent=2))"],
            f"{resp.status} {json.dumps(data, indent=2)}\n",
        )
    if x < 0.45:
        return [f"status, body = {call}", "print(status)", "print(body)"], (
            f"{resp.status}\n{resp.body}\n"
        )
    return [f"print(*{call})"], f"{resp.status} {resp.body}\n"


def _conn_error(lib: str, where: str, line: int) -> str:
    if lib == "http_client":
        return (
            "Traceback (most recent call last):\n"
            f'  File "{where}", line {line}, in <module>\n'
            "socket.gaierror: [Errno -2] Name or service not known\n"
        )
    return (
        "Traceback (most recent call last):\n"
        f'  File "{where}", line {line}, in <module>\n'
        "urllib.error.URLError: <urlopen error [Errno -2] Name or service not known>\n"
    )


def _render_helper(style: Style, rng: random.Random, ex: Exchange, h: PyHabit) -> Rendered | None:
    """The helper defined in this step's script and called for the request."""
    r = ex.req
    if h.base is None:
        h.base = r.scheme_netloc
    got = _helper_args(h, r)
    if got is None or (h.lib == "http_client" and r.scheme != "http"):
        return None
    shell, args = got
    call = f"{h.name}({', '.join(args)})"
    body, out = _helper_print(rng, call, ex.resp, ex.extract)
    src = _helper_source(h, r)
    if shell:
        src[0] = src[0].replace("import ", "import os, ", 1)
    lines = [*src, "", *body]
    cmd, where = _wrap_python(style, rng, lines)
    cmd = shell + cmd
    if ex.resp is None:
        return Rendered(cmd, "", _conn_error(h.lib, where, len(lines)))
    return Rendered(cmd, out, "")


def _module_write(rng: random.Random, path: str, src: str) -> str:
    """The command that writes the module (heredoc through cat or tee, or python)."""
    x = rng.random()
    if x < 0.7:
        return f"cat > {path} <<'EOF'\n{src}EOF"
    if x < 0.85:
        return f"tee {path} > /dev/null <<'EOF'\n{src}EOF"
    return f"python3 - <<'PY'\nopen({path!r}, \"w\").write({src!r})\nPY"


def _module_use(rng: random.Random, h: PyHabit, lines: list[str], call: str) -> str:
    """A command that imports the run's module and runs ``lines`` (which call ``call``)."""
    mod, d = h.module, h.module_dir
    used = [m for m in ("json", "os") if any(f"{m}." in ln for ln in lines)]
    one = len(lines) == 1 and rng.random() < 0.6
    if one:  # import client; print(*client.call(...))
        stmts = [f"import {', '.join([*used, mod])}", lines[0].replace(call, f"{mod}.{call}", 1)]
    else:
        stmts = [*([f"import {', '.join(used)}"] if used else []), f"from {mod} import {h.name}"]
        stmts += lines
    if h.imp == "syspath":
        code = "\n".join(["import sys", f'sys.path.insert(0, "{d}")', *stmts])
        return f"python3 - <<'EOF'\n{code}\nEOF"
    prefix = f"PYTHONPATH={d} " if h.imp == "pythonpath" else f"cd {d} && "
    if one:
        code = "; ".join(stmts)
        return f"{prefix}python3 -c " + (
            dq(code) if "'" in code or rng.random() < 0.4 else sq(code)
        )
    code = "\n".join(stmts)
    if rng.random() < 0.3:
        return f"{prefix}python3 -c " + (dq(code) if "'" in code else sq(code))
    return f"{prefix}python3 - <<'EOF'\n{code}\nEOF"


def _render_module(style: Style, rng: random.Random, ex: Exchange, h: PyHabit) -> Rendered | None:
    """The helper lives in a module the run wrote once; each use imports it."""
    r = ex.req
    if h.base is None:
        h.base = r.scheme_netloc
    got = _helper_args(h, r)
    if got is None or (h.lib == "http_client" and r.scheme != "http"):
        return None
    shell, args = got
    call = f"{h.name}({', '.join(args)})"
    body, out = _helper_print(rng, call, ex.resp, ex.extract)
    use = _module_use(rng, h, body, call)
    extra: dict[str, Any] = {}
    if not h.written:
        path = f"{h.module_dir}/{h.module}.py"
        src = "\n".join(_helper_source(h, r)) + "\n"
        mkdir = f"mkdir -p {h.module_dir} && " if h.module_dir not in ("/tmp", "/workspace") else ""
        use = mkdir + _module_write(rng, path, src) + "\n" + use
        h.written = True
        extra["files"] = {path: src}
    use = shell + use
    if ex.resp is None:
        return Rendered(use, "", _conn_error(h.lib, "<string>", 1), extra)
    return Rendered(use, out, "", extra)


def _http_client_body(r: Req) -> tuple[list[str], str | None, dict[str, str]]:
    """(lines preparing the body, the body expression, headers to send)."""
    hdrs = {k: v for k, v in r.headers if not (r.no_content_type and k.lower() == "content-type")}
    if r.json_body is not None:
        if r.malformed:
            return [f"body = {r.body_text()[:-1]!r}"], "body", hdrs
        return [f"payload = {_py_lit(r.json_body)}"], "json.dumps(payload)", hdrs
    if r.data is not None:
        return [f"body = {r.data!r}"], "body", hdrs
    return [], None, hdrs


def _render_http_client(
    style: Style, rng: random.Random, ex: Exchange, h: PyHabit
) -> Rendered | None:
    """``http.client.HTTPConnection(host, port)`` and ``.request(...)`` (now and then
    ``putrequest`` / ``putheader`` / ``endheaders`` / ``send``)."""
    r, resp = ex.req, ex.resp
    if r.files or r.form or r.scheme not in ("http", "https"):
        return None
    conn_cls = "HTTPSConnection" if r.scheme == "https" else "HTTPConnection"
    lines = ["import http.client, json"]
    pre, body, hdrs = _http_client_body(r)
    lines += pre
    port = r._split.port
    target = f'"{r.host}", {port}' if port else f'"{r.host}"'
    lines.append(f"conn = http.client.{conn_cls}({target}, timeout=10)")
    path = json.dumps(r.path_qs)
    if rng.random() < 0.2 and r.header("authorization") is None:
        lines.append(f'conn.putrequest("{r.method}", {path})')
        lines += [f"conn.putheader({json.dumps(k)}, {json.dumps(v)})" for k, v in hdrs.items()]
        if body is not None:
            lines.append(f"data = {body}.encode()")
            lines.append('conn.putheader("Content-Length", str(len(data)))')
            lines += ["conn.endheaders()", "conn.send(data)"]
        else:
            lines.append("conn.endheaders()")
    else:
        args = [f'"{r.method}"', path]
        if body is not None:
            args.append(f"body={body}")
        if hdrs:
            args.append("headers=" + json.dumps(hdrs))
        lines.append("conn.request(" + ", ".join(args) + ")")
    lines.append("r = conn.getresponse()")
    data = resp.data if resp is not None else None
    if resp is not None and ex.extract and isinstance(data, dict) and ex.extract in data:
        val = data[ex.extract]
        lines.append(f'print(json.loads(r.read())["{ex.extract}"])')
        out = f"{val}\n"
    elif rng.random() < 0.6:
        lines.append("print(r.status, r.reason)")
        lines.append("print(r.read().decode())")
        out = f"{resp.status} {resp.reason}\n{resp.body}\n" if resp is not None else ""
    else:
        lines.append("print(r.status, r.read().decode())")
        out = f"{resp.status} {resp.body}\n" if resp is not None else ""
    cmd, where = _wrap_python(style, rng, lines)
    if resp is None:
        return Rendered(cmd, "", _conn_error("http_client", where, len(lines) - 2))
    return Rendered(cmd, out, "")


_ARGV_SCRIPT = """import json, sys, urllib.request, urllib.error

# usage: {name} METHOD URL [BODY] [HEADER ...]
method, url = sys.argv[1], sys.argv[2]
body = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None
headers = {{"Content-Type": "application/json"}} if body else {{}}
for arg in sys.argv[4:]:
    k, v = arg.split(":", 1)
    headers[k.strip()] = v.strip()
data = body.encode() if body else None
req = urllib.request.Request(url, data=data, headers=headers, method=method)
try:
    with urllib.request.urlopen(req, timeout=10) as r:
        print(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
"""


def _render_argv(style: Style, rng: random.Random, ex: Exchange, h: PyHabit) -> Rendered | None:
    """A small script written once that takes the request on its command line."""
    r, resp = ex.req, ex.resp
    if r.files or r.form or r.no_content_type:
        return None
    body = None
    if r.json_body is not None or r.data is not None:
        if r.json_body is not None and r.header("content-type") != JSON_TYPE:
            return None
        body = _json_text(rng, r.json_body) if r.json_body is not None else (r.data or "")
        if r.malformed:
            body = body[:-1]
    if r.data is not None and r.header("content-type") is None:
        return None  # the script would add a JSON Content-Type the request did not have
    argv = [r.method, _url_q(rng, r.url)]
    hdrs = [
        f"{k}: {v}"
        for k, v in r.headers
        if not (body and (k.lower(), v) == ("content-type", JSON_TYPE))
    ]
    if body is not None or hdrs:
        argv.append(_q(rng, body) if body else "''")
    argv += [_q(rng, x) for x in hdrs]
    run = f"python3 {h.script} " + " ".join(argv)
    extra: dict[str, Any] = {}
    if not h.written:
        src = _ARGV_SCRIPT.format(name=h.script.rsplit("/", 1)[-1])
        run = f"cat > {h.script} <<'EOF'\n{src}EOF\n{run}"
        h.written = True
        extra["files"] = {h.script: src}
    if resp is None:
        return Rendered(run, "", _conn_error("urllib", h.script, 13), extra)
    return Rendered(run, f"{resp.status} {resp.body}\n", "", extra)


def _render_subprocess(
    style: Style, rng: random.Random, ex: Exchange, h: PyHabit
) -> Rendered | None:
    """curl run from Python through ``subprocess``."""
    r, resp = ex.req, ex.resp
    if r.form:
        return None
    args = ["curl", "-s"]
    if r.method != "GET":
        args += ["-X", r.method]
    for k, v in r.headers:
        if not (r.no_content_type and k.lower() == "content-type"):
            args += ["-H", f"{k}: {v}"]
    for name, path, _ in r.files:
        args += ["-F", f"{name}=@{path}"]
    if r.json_body is not None or r.data is not None:
        text = r.body_text(compact=rng.random() < 0.5)
        args += ["-d", text[:-1] if r.malformed else text]
    args.append(r.url)
    lines = [
        "import subprocess",
        "args = [" + ", ".join(json.dumps(a) for a in args) + "]",
        "out = subprocess.run(args, capture_output=True, text=True)",
        "print(out.stdout)",
    ]
    cmd, _where = _wrap_python(style, rng, lines)
    return Rendered(cmd, (resp.body if resp is not None else "") + "\n", "")


_RENDERERS = {
    "helper": _render_helper,
    "module": _render_module,
    "http_client": _render_http_client,
    "argv": _render_argv,
    "subprocess": _render_subprocess,
}


def render_python_habit(style: Style, rng: random.Random, ex: Exchange) -> Rendered:
    """A Python request in the run's habit; now and then (and whenever the habit
    cannot say the request) a plain urllib script."""
    h = py_habit(rng)
    fn = _RENDERERS.get(h.family)
    if fn is not None and rng.random() < 0.92:
        out = fn(style, rng, ex, h)
        if out is not None:
            h.uses += 1
            return out
    return render_python(style, rng, ex, add_header=h.add_header)


def _compiles(code: str) -> bool:
    try:
        ast.parse(code)
    except SyntaxError:
        return False
    return True


def _fill(tmpl: Req, mark: str, v: Any) -> tuple[str, Any]:
    """URL and JSON body of ``tmpl`` with ``str(v)`` where ``mark`` is (what the loop sends)."""
    body = tmpl.json_body
    if body is not None:
        text = json.dumps(body)
        text = text.replace(json.dumps(mark), json.dumps(v))
        body = json.loads(text.replace(json.dumps(mark)[1:-1], str(v)))
    return tmpl.url.replace(mark, str(v)), body


def render_py_loop(
    rng: random.Random, spec: Any, mark: str, sent: list[Req] | None = None
) -> str | None:
    """A Python loop over ``spec.values`` in the run's habit: the ``call()`` helper
    (defined in the script or imported from the run's module) called once per value.

    ``spec`` is the agent's loop spec (``tmpl``, ``values``, ``var``, ``pause``,
    ``is_range``, ``break_on_429``, ``codes_only``); ``mark`` is the placeholder its
    request template carries where the loop variable goes. It prints what the
    agent's own Python loop prints (``value status [body]``, then ``rate limited,
    stopping`` at a 429 when it breaks). ``sent`` are the requests the loop sent
    (one per value, in order): the loop is written only when filling the template
    with each value reproduces them. None when the habit has no helper or the
    helper cannot send the request: the caller writes its plain urllib loop.
    """
    h = py_habit(rng)
    if h.family not in ("helper", "module"):
        return None
    tmpl: Req = spec.tmpl
    for v, r in zip(spec.values, sent or (), strict=False):
        if _fill(tmpl, mark, v) != (r.url, r.json_body):
            return None
    if h.base is None:
        h.base = tmpl.scheme_netloc
    if mark in tmpl.scheme_netloc or any(mark in k + v for k, v in tmpl.headers):
        return None
    got = _helper_args(h, tmpl)
    if got is None or (h.lib == "http_client" and tmpl.scheme != "http"):
        return None
    shell, args = got
    var = spec.var if not keyword.iskeyword(spec.var) else spec.var + "_"
    values = spec.values
    if spec.is_range:
        head = f"for {var} in range({values[0]}, {values[-1] + 1}):"
    else:
        head = f"for {var} in {values!r}:"
    path = tmpl.path_qs
    if mark in path:
        args[1] = "f" + json.dumps(path.replace(mark, "{" + var + "}"))
    if tmpl.json_body is not None:
        body = repr(tmpl.json_body).replace(repr(mark), var)
        if mark in body or "\\x00" in body:
            body = body.replace(repr(mark)[1:-1], f"' + str({var}) + '")
        args[2] = body
    call = f"{h.name}({', '.join(args)})"
    shown = f"print({var}, status)" if spec.codes_only else f"print({var}, status, body)"
    loop = [head, f"    status, body = {call}", "    " + shown]
    if spec.break_on_429:
        loop += [
            "    if status == 429:",
            '        print("rate limited, stopping")',
            "        break",
        ]
    if spec.pause:
        loop.append(f"    time.sleep({spec.pause:g})")
    extra_imports = ["time"] if spec.pause else []
    if h.family == "helper":
        src = _helper_source(h, tmpl)
        mods = (["os"] if shell else []) + extra_imports
        if mods:
            src[0] = src[0].replace("import ", f"import {', '.join(mods)}, ", 1)
        code = "\n".join([*src, "", *loop])
        return f"{shell}python3 - <<'EOF'\n{code}\nEOF" if _compiles(code) else None
    mods = (["os"] if shell else []) + extra_imports
    lines = [*([f"import {', '.join(mods)}"] if mods else []), f"from {h.module} import {h.name}"]
    if h.imp == "syspath":
        lines = ["import sys", f'sys.path.insert(0, "{h.module_dir}")', *lines]
        prefix = ""
    else:
        prefix = (
            f"PYTHONPATH={h.module_dir} " if h.imp == "pythonpath" else f"cd {h.module_dir} && "
        )
    code = "\n".join([*lines, *loop])
    if not _compiles(code):
        return None
    cmd = f"{prefix}python3 - <<'EOF'\n{code}\nEOF"
    if not h.written:
        src = "\n".join(_helper_source(h, tmpl)) + "\n"
        mkdir = f"mkdir -p {h.module_dir} && " if h.module_dir not in ("/tmp", "/workspace") else ""
        cmd = mkdir + _module_write(rng, f"{h.module_dir}/{h.module}.py", src) + "\n" + cmd
        h.written = True
    return shell + cmd


# --------------------------------------------------------------------------- wget


def render_wget(style: Style, rng: random.Random, ex: Exchange) -> Rendered:
    r, resp = ex.req, ex.resp
    quiet = rng.random() < 0.6
    on_err = rng.random() < 0.4
    parts = ["wget", "-qO-" if quiet else "-O-"]
    if on_err:
        parts.append("--content-on-error")
    for k, v in r.headers:
        if r.no_content_type and k.lower() == "content-type":
            continue
        parts.append("--header=" + _q(rng, f"{k}: {v}"))
    body = None
    if r.json_body is not None or r.data is not None:
        body = _json_text(rng, r.json_body) if r.json_body is not None else (r.data or "")
        if r.malformed:
            body = body[:-1]
    if r.method == "POST" and body is not None and rng.random() < 0.7:
        parts.append("--post-data=" + _q(rng, body))
    elif r.method != "GET" or body is not None:
        parts.append("--method=" + r.method)
        if body is not None:
            parts.append("--body-data=" + _q(rng, body))
    parts.append(_url_q(rng, r.url))
    cmd = " ".join(parts)
    if resp is None:
        return Rendered(
            cmd, "", "" if quiet else f"wget: unable to resolve host address '{r.host}'\n"
        )
    ok_ = resp.status < 400
    out = resp.body if (ok_ or on_err) else ""
    if quiet:
        return Rendered(cmd, out, "")
    stamp = ex.stamp
    log = [f"--{stamp}--  {r.url}"]
    if r.host == ex.ip:
        log.append(f"Connecting to {r.host}:{r.port}... connected.")
    else:
        log.append(f"Resolving {r.host} ({r.host})... {ex.ip}")
        log.append(f"Connecting to {r.host} ({r.host})|{ex.ip}|:{r.port}... connected.")
    log.append(f"HTTP request sent, awaiting response... {resp.status} {resp.reason}")
    n = len(resp.body.encode())
    if ok_ or on_err:
        mime = resp.content_type.split(";")[0]
        log += [
            f"Length: {n} [{mime}]",
            "Saving to: 'STDOUT'",
            "",
            f"     0K{' ' * 54}100% 9.61M=0s",
            "",
        ]
        log.append(f"{stamp} (9.61 MB/s) - written to stdout [{n}/{n}]")
        if not ok_:
            log.append(f"{stamp} ERROR {resp.status}: {resp.reason}.")
    elif resp.status == 401:
        log.append("Username/Password Authentication Failed.")
    else:
        log.append(f"{stamp} ERROR {resp.status}: {resp.reason}.")
    return Rendered(cmd, out, "\n".join(log) + "\n\n")


# --------------------------------------------------------------------------- httpie


def _httpie_items(r: Req) -> list[str] | None:
    items: list[str] = []
    if isinstance(r.json_body, dict):
        for k, v in r.json_body.items():
            if isinstance(v, str):
                items.append(sq(f"{k}={v}"))
            else:
                items.append(sq(f"{k}:={json.dumps(v)}"))
    elif r.json_body is not None or r.data is not None:
        return None
    for k, v in r.headers:
        if k.lower() == "content-type" and r.json_body is not None:
            continue
        items.append(sq(f"{k}:{v}"))
    for name, path, _ in r.files:
        items.append(sq(f"{name}@{path}"))
    for k, v in r.form:
        items.append(sq(f"{k}={v}"))
    return items


def render_httpie(style: Style, rng: random.Random, ex: Exchange) -> Rendered | None:
    r, resp = ex.req, ex.resp
    items = _httpie_items(r)
    if items is None or r.malformed:
        return None
    show_headers = style.curl_verbose and rng.random() < 0.8
    pretty = rng.random() < 0.5
    parts = ["http", "--ignore-stdin"]
    if r.files or r.form:
        parts.append("--form")
    if show_headers:
        parts.append("-p hb" if rng.random() < 0.5 else "--print=hb")
    if pretty:
        parts.append("--pretty=format")
    if r.method != "GET" or rng.random() < 0.2:
        parts.append(r.method)
    url = r.url.replace("http://", "", 1) if rng.random() < 0.6 else r.url
    parts.append(_url_q(rng, url))
    parts += items
    cmd = " ".join(parts)
    if resp is None:
        return Rendered(
            cmd,
            "",
            f"\nhttp: error: ConnectionError: Failed to resolve '{r.host}' while doing a {r.method} request to URL: {r.url}\n",
        )
    body = httpie_pretty(resp.data) if (pretty and resp.data is not None) else resp.body
    if not show_headers:
        return Rendered(cmd, body, "")
    hdrs = sorted(resp.header_lines(ex.date)) if pretty else resp.header_lines(ex.date)
    head = status_line(resp) + "\n" + "\n".join(hdrs) + "\n\n"
    return Rendered(cmd, head + body + "\n", "")


# --------------------------------------------------------------------------- netcat


def render_nc(style: Style, rng: random.Random, ex: Exchange) -> Rendered | None:
    r, resp = ex.req, ex.resp
    if r.files or r.form:
        return None
    body = r.body_text() if (r.json_body is not None or r.data is not None) else ""
    if r.malformed:
        body = body[:-1]
    if any(c in body + r.path_qs for c in "%'\\"):  # printf would expand % in the path too
        return None
    lines = [f"{r.method} {r.path_qs} HTTP/1.1", f"Host: {r.netloc}"]
    lines += [
        f"{k}: {v}" for k, v in r.headers if not (r.no_content_type and k.lower() == "content-type")
    ]
    if body:
        lines.append(f"Content-Length: {len(body.encode())}")
    lines.append("Connection: close")
    raw = "\\r\\n".join(lines) + "\\r\\n\\r\\n" + body
    opt = rng.choice(("", "-w 3 ", "-q 1 ", "-w 5 "))
    cmd = f"printf '{raw}' | nc {opt}{r.host} {r.port}"
    if resp is None:
        return Rendered(
            cmd,
            "",
            f'nc: getaddrinfo for host "{r.host}" port {r.port}: Name or service not known\n',
        )
    return Rendered(cmd, raw_http(resp, ex.date), "")


# --------------------------------------------------------------------------- dispatch

CLIENTS = ("curl", "python_urllib", "wget", "httpie", "nc")

_MIXED = (("curl", 0.62), ("python_urllib", 0.3), ("httpie", 0.04), ("wget", 0.04))
_MIXED_IN_IMAGE = (("curl", 0.7), ("python_urllib", 0.3))


def choose_client(style: Style, rng: random.Random, previous: str | None = None) -> str:
    """The client for the next request: mostly the style's own (a mixed style is sticky)."""
    if style.client == "mixed":
        if previous is not None and rng.random() < 0.7:
            return previous
        x = rng.random()
        for name, p in _MIXED if style.out_of_image else _MIXED_IN_IMAGE:
            if x < p:
                return name
            x -= p
        return "curl"
    main_share = {"curl": 0.96, "python_urllib": 0.85, "wget": 0.75, "httpie": 0.8, "nc": 0.55}[
        style.client
    ]
    if rng.random() < main_share:
        return style.client
    return "curl" if style.client != "curl" else "python_urllib"


def render_exchange(
    style: Style, rng: random.Random, client: str, ex: Exchange
) -> tuple[str, Rendered]:
    """Render with ``client``, falling back to curl where the client cannot say it.

    Returns the client actually used and the rendering. Python is written in the
    run's own habit (:func:`render_python_habit`).
    """
    if client == "python_urllib":
        return client, render_python_habit(style, rng, ex)
    if client == "wget" and not ex.req.files and not ex.req.form and ex.extract is None:
        return client, render_wget(style, rng, ex)
    if client == "httpie" and ex.extract is None:
        out = render_httpie(style, rng, ex)
        if out is not None:
            return client, out
    if client == "nc" and ex.extract is None and ex.grep is None:
        out = render_nc(style, rng, ex)
        if out is not None:
            return client, out
    return "curl", render_curl(style, rng, ex)


def render_request(
    style: Style,
    rng: random.Random,
    method: str,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    json_body: Any = None,
    form: dict[str, str] | None = None,
    files: dict[str, tuple[str, str]] | None = None,
    data: str | None = None,
) -> str:
    """The shell command ``style`` would write for this request.

    ``files`` maps a multipart field to ``(path, content)`` of a file the
    agent wrote earlier.
    """
    file_list = [(k, p, c) for k, (p, c) in (files or {}).items()]
    r = req(
        method, url, headers=headers, json_body=json_body, form=form, files=file_list, data=data
    )
    client = choose_client(style, rng)
    ex = Exchange(r, Response(200, "{}\n"), "Sat, 01 Aug 2026 12:00:00 GMT", "172.18.0.2")
    return render_exchange(style, rng, client, ex)[1].command


__all__ = [
    "CLIENTS",
    "JSON_TYPE",
    "STYLES",
    "Exchange",
    "Rendered",
    "Req",
    "Style",
    "choose_client",
    "dq",
    "py_habit",
    "render_exchange",
    "render_py_loop",
    "render_request",
    "req",
    "sq",
]
