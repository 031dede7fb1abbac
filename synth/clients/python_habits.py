"""A Python request written in the run's habit (:mod:`~monsearch.synth.clients.habit`):
the helper called from this step's script or imported from the run's module,
``http.client``, a small argv script, or curl run through ``subprocess``."""

from __future__ import annotations

import json
import random
from typing import Any

from monsearch.synth.clients.exchange import Exchange, Rendered
from monsearch.synth.clients.habit import (
    PyHabit,
    bound_args,
    helper_source,
    import_path,
    py_habit,
    with_imports,
    write_module,
)
from monsearch.synth.clients.python_script import (
    conn_error,
    py_literal,
    render_python,
    stdin_script,
    wrap_python,
)
from monsearch.synth.clients.quoting import dq, json_text, quote, sq, url_quote
from monsearch.synth.observations import JSON_TYPE, Response
from monsearch.synth.request import Req
from monsearch.synth.style import Style


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


def _helper_call(
    rng: random.Random, ex: Exchange, h: PyHabit
) -> tuple[str, str, list[str], str] | None:
    """(shell prefix, the helper's call, lines that call it and print, what they
    print), or None when the helper cannot send the request."""
    got = bound_args(h, ex.req)
    if got is None:
        return None
    shell, args = got
    call = f"{h.name}({', '.join(args)})"
    body, out = _helper_print(rng, call, ex.resp, ex.extract)
    return shell, call, body, out


def _render_helper(style: Style, rng: random.Random, ex: Exchange, h: PyHabit) -> Rendered | None:
    """The helper defined in this step's script and called for the request."""
    got = _helper_call(rng, ex, h)
    if got is None:
        return None
    shell, _call, body, out = got
    src = with_imports(helper_source(h, ex.req), ["os"] if shell else [])
    lines = [*src, "", *body]
    cmd, where = wrap_python(style, rng, lines)
    cmd = shell + cmd
    if ex.resp is None:
        return Rendered(cmd, "", conn_error(h.lib, where, len(lines)))
    return Rendered(cmd, out, "")


def _module_use(rng: random.Random, h: PyHabit, lines: list[str], call: str) -> str:
    """A command that imports the run's module and runs ``lines`` (which call ``call``)."""
    mod = h.module
    used = [m for m in ("json", "os") if any(f"{m}." in ln for ln in lines)]
    one = len(lines) == 1 and rng.random() < 0.6
    if one:  # import client; print(*client.call(...))
        stmts = [f"import {', '.join([*used, mod])}", lines[0].replace(call, f"{mod}.{call}", 1)]
    else:
        stmts = [*([f"import {', '.join(used)}"] if used else []), f"from {mod} import {h.name}"]
        stmts += lines
    prefix, path_lines = import_path(h)
    if path_lines:
        return stdin_script("\n".join([*path_lines, *stmts]))
    if one:
        code = "; ".join(stmts)
        return f"{prefix}python3 -c " + (
            dq(code) if "'" in code or rng.random() < 0.4 else sq(code)
        )
    code = "\n".join(stmts)
    if rng.random() < 0.3:
        return f"{prefix}python3 -c " + (dq(code) if "'" in code else sq(code))
    return prefix + stdin_script(code)


def _render_module(style: Style, rng: random.Random, ex: Exchange, h: PyHabit) -> Rendered | None:
    """The helper lives in a module the run wrote once; each use imports it."""
    got = _helper_call(rng, ex, h)
    if got is None:
        return None
    shell, call, body, out = got
    use = _module_use(rng, h, body, call)
    extra: dict[str, Any] = {}
    if not h.written:
        write, path, src = write_module(rng, h, ex.req)
        use = write + use
        extra["files"] = {path: src}
    use = shell + use
    if ex.resp is None:
        return Rendered(use, "", conn_error(h.lib, "<string>", 1), extra)
    return Rendered(use, out, "", extra)


def _http_client_body(r: Req) -> tuple[list[str], str | None, dict[str, str]]:
    """(lines preparing the body, the body expression, headers to send)."""
    hdrs = dict(r.sent_headers)
    if r.json_body is not None:
        if r.malformed:
            return [f"body = {r.body_text()[:-1]!r}"], "body", hdrs
        return [f"payload = {py_literal(r.json_body)}"], "json.dumps(payload)", hdrs
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
    port = r.explicit_port
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
    cmd, where = wrap_python(style, rng, lines)
    if resp is None:
        return Rendered(cmd, "", conn_error("http_client", where, len(lines) - 2))
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
    if r.has_body:
        if r.json_body is not None and r.header("content-type") != JSON_TYPE:
            return None
        body = json_text(rng, r.json_body) if r.json_body is not None else (r.data or "")
        if r.malformed:
            body = body[:-1]
    if r.data is not None and r.header("content-type") is None:
        return None  # the script would add a JSON Content-Type the request did not have
    argv = [r.method, url_quote(rng, r.url)]
    hdrs = [
        f"{k}: {v}"
        for k, v in r.headers
        if not (body and (k.lower(), v) == ("content-type", JSON_TYPE))
    ]
    if body is not None or hdrs:
        argv.append(quote(rng, body) if body else "''")
    argv += [quote(rng, x) for x in hdrs]
    run = f"python3 {h.script} " + " ".join(argv)
    extra: dict[str, Any] = {}
    if not h.written:
        src = _ARGV_SCRIPT.format(name=h.script.rsplit("/", 1)[-1])
        run = f"cat > {h.script} <<'EOF'\n{src}EOF\n{run}"
        h.written = True
        extra["files"] = {h.script: src}
    if resp is None:
        return Rendered(run, "", conn_error("urllib", h.script, 13), extra)
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
    for k, v in r.sent_headers:
        args += ["-H", f"{k}: {v}"]
    for name, path, _ in r.files:
        args += ["-F", f"{name}=@{path}"]
    if r.has_body:
        text = r.body_text(compact=rng.random() < 0.5)
        args += ["-d", text[:-1] if r.malformed else text]
    args.append(r.url)
    lines = [
        "import subprocess",
        "args = [" + ", ".join(json.dumps(a) for a in args) + "]",
        "out = subprocess.run(args, capture_output=True, text=True)",
        "print(out.stdout)",
    ]
    cmd, _where = wrap_python(style, rng, lines)
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
