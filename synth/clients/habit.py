"""Python habits: the one way a run writes its Python requests, and the helper it defines.

Agents that write Python rarely write every request from scratch: they define a
``call()`` helper and call it, keep that helper in a module they import in later
steps, use ``http.client``, add headers one by one, run a small script that takes
the request on its command line, or shell out to curl. A run settles on one habit
at its first Python request and keeps it (:class:`PyHabit`, one per run). The
habit is keyed by the run's random generator: rendering gets no handle on the
agent, and each run draws from a generator of its own (the scratch agent that
pads a run shares it, but filler sends no HTTP).
"""

from __future__ import annotations

import json
import random
import re
import weakref
from dataclasses import dataclass

from monsearch.synth import family as fam
from monsearch.synth.clients.python_script import py_literal
from monsearch.synth.observations import JSON_TYPE
from monsearch.synth.request import Req


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


def helper_body(lib: str, name: str, headers_param: bool, base_line: str) -> list[str]:
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


def helper_source(h: PyHabit, r: Req) -> list[str]:
    """Imports, the base the helper is bound to, and the helper itself."""
    if h.lib == "http_client":
        imports = "import http.client, json"
        base_line = f'HOST, PORT = "{r.host}", {r.port}'
    else:
        imports = "import json, urllib.request, urllib.error"
        base_line = f'BASE = "{h.base}"'
    return [imports, *helper_body(h.lib, h.name, h.headers_param, base_line)]


_SHELL_SAFE_TOKEN = re.compile(r"[A-Za-z0-9._~+/=:-]+")


def helper_args(h: PyHabit, r: Req) -> tuple[str, list[str]] | None:
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
        args.append(py_literal(r.json_body))
    if token is not None:
        if not _SHELL_SAFE_TOKEN.fullmatch(token):
            return None
        shell = f"export {h.token_env}={token}; "
        args.append(f'token=os.environ["{h.token_env}"]')
    if extra:
        args.append("headers=" + json.dumps(extra))
    return shell, args


def with_imports(src: list[str], mods: list[str]) -> list[str]:
    """``src`` (whose first line imports) importing ``mods`` as well."""
    if mods:
        src[0] = src[0].replace("import ", f"import {', '.join(mods)}, ", 1)
    return src


def bound_args(h: PyHabit, r: Req) -> tuple[str, list[str]] | None:
    """:func:`helper_args` for ``r`` once the helper is bound to a base (the first
    request the run sends through it binds it), or None when it cannot send ``r``."""
    if h.base is None:
        h.base = r.scheme_netloc
    got = helper_args(h, r)
    if got is None or (h.lib == "http_client" and r.scheme != "http"):
        return None
    return got


def _module_write(rng: random.Random, path: str, src: str) -> str:
    """The command that writes the module (heredoc through cat or tee, or python)."""
    x = rng.random()
    if x < 0.7:
        return f"cat > {path} <<'EOF'\n{src}EOF"
    if x < 0.85:
        return f"tee {path} > /dev/null <<'EOF'\n{src}EOF"
    return f"python3 - <<'PY'\nopen({path!r}, \"w\").write({src!r})\nPY"


def write_module(rng: random.Random, h: PyHabit, r: Req) -> tuple[str, str, str]:
    """The command (ending in a newline) that writes the run's module, its path and
    source; the module counts as written from here on."""
    path = f"{h.module_dir}/{h.module}.py"
    src = "\n".join(helper_source(h, r)) + "\n"
    mkdir = f"mkdir -p {h.module_dir} && " if h.module_dir not in ("/tmp", "/workspace") else ""
    h.written = True
    return mkdir + _module_write(rng, path, src) + "\n", path, src


def import_path(h: PyHabit) -> tuple[str, list[str]]:
    """How a script finds the run's module: (shell prefix, first lines of the script)."""
    if h.imp == "syspath":
        return "", ["import sys", f'sys.path.insert(0, "{h.module_dir}")']
    return (
        f"PYTHONPATH={h.module_dir} " if h.imp == "pythonpath" else f"cd {h.module_dir} && "
    ), []
