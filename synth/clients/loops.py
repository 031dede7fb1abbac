"""A loop over values in one command: the shell's ``for`` around curl, or a plain
Python ``urllib`` loop (a run's helper in a loop: :mod:`.python_loop`)."""

from __future__ import annotations

import json
import keyword
import random
import re
from dataclasses import dataclass
from typing import Any

from monsearch.synth import family as fam
from monsearch.synth.clients.curl import CURL_LONG
from monsearch.synth.clients.python_script import held_out_names
from monsearch.synth.clients.quoting import dq, sq
from monsearch.synth.request import Req

#: A placeholder a loop's request template carries where the loop variable goes.
VAR = "\x00V\x00"


@dataclass(frozen=True)
class LoopSpec:
    """What one looping command does, for rendering it as shell or python."""

    tmpl: Req  # the request with :data:`VAR` where the loop variable goes
    values: list[Any]
    var: str
    pause: float
    numeric: bool
    break_on_429: bool
    codes_only: bool

    @property
    def is_range(self) -> bool:
        """Consecutive integers, long enough to be written as a range."""
        v = self.values
        return self.numeric and v == list(range(v[0], v[0] + len(v))) and len(v) > 3


def shell_loop(lp: LoopSpec, rng: random.Random) -> str:
    tmpl, values, var = lp.tmpl, lp.values, lp.var
    if lp.is_range:
        head = (
            f"for {var} in $(seq {values[0]} {values[-1]})"
            if rng.random() < 0.6
            else f"for {var} in {{{values[0]}..{values[-1]}}}"
        )
    else:
        head = f"for {var} in " + " ".join(sq(str(v)) for v in values)
    url = tmpl.url.replace(VAR, "$" + var)
    long = fam.is_held_out(rng)  # the held-out family spells curl's options out
    o = CURL_LONG if long else {k: k for k in CURL_LONG}
    parts = ["curl " + o["-s"]]
    if tmpl.method != "GET":
        parts.append(o["-X"] + " " + tmpl.method)
    for k, v in tmpl.headers:
        parts.append(o["-H"] + " " + dq(f"{k}: {v}"))
    if tmpl.json_body is not None:
        body = json.dumps(tmpl.json_body).replace(
            json.dumps(VAR), "$" + var if lp.numeric else '"$' + var + '"'
        )
        body = body.replace(VAR, "$" + var)
        # the placeholder inside a longer string value comes out JSON-escaped
        body = body.replace(json.dumps(VAR)[1:-1], "$" + var)
        # Inside "...": backslashes and quotes escaped (a JSON string's own \" included),
        # and every $ but the loop variable's.
        esc = body.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`")
        esc = re.sub(r"\$(?!" + re.escape(var) + r"\b)", r"\\$", esc)
        parts.append(o["-d"] + ' "' + esc + '"')
    if lp.codes_only or lp.break_on_429:
        parts.append(o["-o"] + (" /dev/null" if not lp.break_on_429 else " /tmp/r.txt"))
        parts.append(o["-w"] + f' "{"%{http_code}"}"')
    parts.append('"' + url + '"')
    curl = " ".join(parts)
    if lp.break_on_429:
        body = f'code=$({curl}); echo "${var} $code"; [ "$code" = 429 ] && {{ echo "rate limited, stopping"; break; }}'
    elif lp.codes_only:
        body = f'echo "${var} $({curl})"'
    elif long:
        body = f"printf '## %s\\n' \"${var}\"; {curl}; echo"
    else:
        body = f'echo "== ${var}"; {curl}; echo'
    if lp.pause:
        body += f"; sleep {lp.pause:g}"
    return f"{head}; do {body}; done"


def python_loop(lp: LoopSpec, held_out: bool = False) -> str:
    tmpl, values, var = lp.tmpl, lp.values, lp.var
    if keyword.iskeyword(var):  # fine in a shell loop (`for pass in ...`), not in Python
        var += "_"
    if lp.is_range:
        head = f"for {var} in range({values[0]}, {values[-1] + 1}):"
    else:
        head = f"for {var} in {values!r}:"
    url = 'f"' + tmpl.url.replace(VAR, "{" + var + "}") + '"'
    lines = ["import json, time, urllib.request, urllib.error", head]
    data = "None"
    if tmpl.json_body is not None:
        body = repr(tmpl.json_body).replace(repr(VAR), var)
        # the placeholder inside a longer string value: concatenate the loop variable
        # (repr quotes with ' unless the value holds one)
        body = body.replace("\\x00V\\x00", f"' + str({var}) + '")
        lines.append(f"    payload = {body}")
        data = "json.dumps(payload).encode()"
    hdrs = dict(tmpl.headers)
    args = [url, f"data={data}"]
    if hdrs:
        args.append("headers=" + json.dumps(hdrs))
    if tmpl.method != "GET":
        args.append(f'method="{tmpl.method}"')
    lines.append("    req = urllib.request.Request(" + ", ".join(args) + ")")
    shown = (
        f"print({var}, r.status)" if lp.codes_only else f"print({var}, r.status, r.read().decode())"
    )
    shown_e = (
        f"print({var}, e.code)" if lp.codes_only else f"print({var}, e.code, e.read().decode())"
    )
    lines += [
        "    try:",
        "        with urllib.request.urlopen(req, timeout=10) as r:",
        "            " + shown,
        "    except urllib.error.HTTPError as e:",
        "        " + shown_e,
    ]
    if lp.break_on_429:
        lines += [
            "        if e.code == 429:",
            '            print("rate limited, stopping")',
            "            break",
        ]
    if lp.pause:
        lines.append(f"    time.sleep({lp.pause:g})")
    if held_out:
        code = "\n".join(held_out_names(lines))
        return f"python3 - <<'PY'\n{code}\nPY"
    code = "\n".join(lines)
    return f"python3 - <<'EOF'\n{code}\nEOF"
