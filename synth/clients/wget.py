"""wget (out of the agent image): ``-qO-`` or its progress log on stderr."""

from __future__ import annotations

import random

from monsearch.synth.clients.exchange import Exchange, Rendered
from monsearch.synth.clients.quoting import json_text, quote, url_quote
from monsearch.synth.style import Style


def render_wget(style: Style, rng: random.Random, ex: Exchange) -> Rendered:
    r, resp = ex.req, ex.resp
    quiet = rng.random() < 0.6
    on_err = rng.random() < 0.4
    parts = ["wget", "-qO-" if quiet else "-O-"]
    if on_err:
        parts.append("--content-on-error")
    for k, v in r.sent_headers:
        parts.append("--header=" + quote(rng, f"{k}: {v}"))
    body = None
    if r.has_body:
        body = json_text(rng, r.json_body) if r.json_body is not None else (r.data or "")
        if r.malformed:
            body = body[:-1]
    if r.method == "POST" and body is not None and rng.random() < 0.7:
        parts.append("--post-data=" + quote(rng, body))
    elif r.method != "GET" or body is not None:
        parts.append("--method=" + r.method)
        if body is not None:
            parts.append("--body-data=" + quote(rng, body))
    parts.append(url_quote(rng, r.url))
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
