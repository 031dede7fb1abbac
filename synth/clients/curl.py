"""curl: short or long options (the held-out family spells them out), headers, bodies,
``-i`` / ``-v`` / ``-w``, and what it prints, piped through jq or grep or not."""

from __future__ import annotations

import json
import random
import re

from monsearch.synth import family as fam
from monsearch.synth.clients.exchange import (
    Exchange,
    Rendered,
    grep_lines,
    jq_filter_output,
    raw_http,
    status_line,
)
from monsearch.synth.clients.quoting import dq, json_text, quote, sq, url_quote
from monsearch.synth.observations import Response
from monsearch.synth.request import Req
from monsearch.synth.style import Style

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
    if r.has_body:
        text = json_text(rng, r.json_body) if r.json_body is not None else (r.data or "")
        if r.malformed:
            text = text[:-1] if text.endswith("}") else text + ","
        flag = ("--data ", "--data-raw ") if long else ("-d ", "-d ")
        body_flag = (flag[0] if rng.random() < 0.85 else flag[1]) + quote(rng, text)
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
        url_part = url_quote(rng, url)
    hdrs = []
    for k, v in r.sent_headers:
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
        out = grep_lines(resp.body, ex.grep)
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
    body = r.body_text() if r.has_body else ""
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
    lines += [f"> {k}: {v}" for k, v in r.sent_headers]
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


#: Short curl options and how the held-out family spells them.
CURL_LONG = {
    "-s": "--silent", "-sS": "--silent --show-error", "-sv": "--silent --verbose",
    "-si": "--silent --include", "-X": "--request", "-d": "--data", "-o": "--output",
    "-H": "--header", "-m": "--max-time", "-F": "--form", "-w": "--write-out",
    "-i": "--include", "-v": "--verbose",
}  # fmt: skip
_CURL_SEGMENT = re.compile(r"\bcurl [^|;&\n]*")
_CURL_SHORT = re.compile(r"(?<=\s)(-sS|-sv|-si|-[sXdoHmFwiv])(?=\s)")


def _long_opt(m: re.Match[str]) -> str:
    return CURL_LONG[m.group(0)]


def spell_out_curl(cmd: str) -> str:
    """``cmd`` with the short options of its curl commands spelt out (the held-out
    family's habit, for commands a scenario wrote out itself)."""
    return _CURL_SEGMENT.sub(lambda m: _CURL_SHORT.sub(_long_opt, m.group(0)), cmd)
