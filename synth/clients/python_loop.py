"""A loop over values written with the run's Python helper (its ``call()``, defined
in the script or imported from the run's module)."""

from __future__ import annotations

import ast
import json
import keyword
import random
from typing import Any

from monsearch.synth.clients import habit
from monsearch.synth.clients.python_script import stdin_script
from monsearch.synth.request import Req


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
    h = habit.py_habit(rng)
    if h.family not in ("helper", "module"):
        return None
    tmpl: Req = spec.tmpl
    for v, r in zip(spec.values, sent or (), strict=False):
        if _fill(tmpl, mark, v) != (r.url, r.json_body):
            return None
    got = habit.bound_args(h, tmpl)
    if mark in tmpl.scheme_netloc or any(mark in k + v for k, v in tmpl.headers):
        return None
    if got is None:
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
    mods = (["os"] if shell else []) + (["time"] if spec.pause else [])
    if h.family == "helper":
        code = "\n".join([*habit.with_imports(habit.helper_source(h, tmpl), mods), "", *loop])
        return shell + stdin_script(code) if _compiles(code) else None
    lines = [*([f"import {', '.join(mods)}"] if mods else []), f"from {h.module} import {h.name}"]
    prefix, path_lines = habit.import_path(h)
    code = "\n".join([*path_lines, *lines, *loop])
    if not _compiles(code):
        return None
    cmd = prefix + stdin_script(code)
    if not h.written:
        # (the module written here is not recorded among the run's files)
        cmd = habit.write_module(rng, h, tmpl)[0] + cmd
    return shell + cmd
