"""A plain Python ``urllib`` script for one request (a one-liner, ``python3 -`` or a
heredoc file), what it prints, and the tracebacks Python 3.14 prints when it fails."""

from __future__ import annotations

import json
import random
import re
from typing import Any

from monsearch.synth import family as fam
from monsearch.synth.clients.exchange import Exchange, Rendered
from monsearch.synth.clients.quoting import sq
from monsearch.synth.observations import Response
from monsearch.synth.request import Req
from monsearch.synth.style import Style

_PY_LIB = "/usr/local/lib/python3.14/urllib/request.py"


def py_http_error_traceback(status: int, reason: str, line: int, where: str = "<stdin>") -> str:
    """What an unguarded ``urlopen`` prints on an HTTP error status."""
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


def conn_error(lib: str, where: str, line: int) -> str:
    """The traceback of a request to a host that does not resolve (``urllib`` or ``http.client``)."""
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


def py_literal(obj: Any) -> str:
    """A Python literal for a JSON value (as an agent would paste it: ``repr``)."""
    return repr(obj)


def _py_request_lines(
    r: Req, rng: random.Random, var: str = "req", *, add_header: bool = False
) -> list[str]:
    lines = []
    hdrs = dict(r.sent_headers)
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
            lines.append(f"payload = {py_literal(r.json_body)}")
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
            return Rendered(cmd, "", conn_error("urllib", "<string>", 1))
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
    cmd, where = wrap_python(style, rng, lines)
    if resp is None:
        return Rendered(cmd, "", conn_error("urllib", where, len(lines) - 3))
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


#: Script names; the two template families use alternate ones (family.pick).
_SCRIPT_NAMES = ("exploit", "poc", "probe", "test", "req", "run", "check", "x", "t", "solve")


def wrap_python(style: Style, rng: random.Random, lines: list[str]) -> tuple[str, str]:
    """Wrap script lines into a command; returns (command, traceback file name)."""
    code = "\n".join(lines)
    if style.heredoc and rng.random() < 0.8:
        path = f"/tmp/{fam.pick(rng, _SCRIPT_NAMES)}.py"
        return f"cat > {path} <<'EOF'\n{code}\nEOF\npython3 {path}", path
    if rng.random() < 0.75 or "'" in code:
        return stdin_script(code), "<stdin>"
    return "python3 -c " + sq(code), "<string>"


def stdin_script(code: str) -> str:
    """``python3 -`` with ``code`` in a heredoc."""
    return f"python3 - <<'EOF'\n{code}\nEOF"
