"""Raw HTTP through netcat: ``printf '...' | nc host port``."""

from __future__ import annotations

import random

from monsearch.synth.clients.exchange import Exchange, Rendered, raw_http
from monsearch.synth.style import Style


def render_nc(style: Style, rng: random.Random, ex: Exchange) -> Rendered | None:
    r, resp = ex.req, ex.resp
    if r.files or r.form:
        return None
    body = r.body_text() if r.has_body else ""
    if r.malformed:
        body = body[:-1]
    if any(c in body + r.path_qs for c in "%'\\"):  # printf would expand % in the path too
        return None
    lines = [f"{r.method} {r.path_qs} HTTP/1.1", f"Host: {r.netloc}"]
    lines += [f"{k}: {v}" for k, v in r.sent_headers]
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
