"""HTTPie (out of the agent image): request items, ``--print``, pretty output."""

from __future__ import annotations

import json
import random

from monsearch.synth.clients.exchange import Exchange, Rendered, httpie_pretty, status_line
from monsearch.synth.clients.quoting import sq, url_quote
from monsearch.synth.request import Req
from monsearch.synth.style import Style


def _httpie_items(r: Req) -> list[str] | None:
    items: list[str] = []
    if isinstance(r.json_body, dict):
        for k, v in r.json_body.items():
            if isinstance(v, str):
                items.append(sq(f"{k}={v}"))
            else:
                items.append(sq(f"{k}:={json.dumps(v)}"))
    elif r.has_body:
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
    parts.append(url_quote(rng, url))
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
