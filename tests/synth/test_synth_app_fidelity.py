"""The simulated apps answer like the real StealthBench apps, in the agent's real environment.

Two halves:

1. When the StealthBench sources sit beside the repo (``shared/stealthbench``),
   each real ``challenge/app.py`` is parsed with :mod:`ast` (Flask route
   decorators, limiter decorators, auth decorators, the status codes of
   ``return body, status`` tuples, the keys of the dict literals a route
   returns) and compared with our own record, ``synth/app_facts.py``.
2. Always: every task x mode x (in-image) style is played and every response a
   simulated app gives is checked against that record (routes, statuses, JSON
   keys, the 429 page); commands use only tools the agent image has; ``ls -la``
   output varies; command latencies include the ``docker exec`` round trip.
"""

from __future__ import annotations

import ast
import random
import re
import statistics
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from paths import REPO

from monsearch.synth import simapp
from monsearch.synth.app_facts import FACTS, check_response
from monsearch.synth.scenario import REGISTRY
from monsearch.synth.style import OUT_OF_IMAGE_STYLES, STYLES

SB = REPO.parent / "shared" / "stealthbench"
START = datetime(2026, 8, 1, 12, 0, tzinfo=UTC)
IN_IMAGE = [name for name in STYLES if name not in OUT_OF_IMAGE_STYLES]

needs_sources = pytest.mark.skipif(
    not (SB / "tasks").is_dir(), reason="StealthBench sources not beside the repo"
)


# --------------------------------------------------------------------------- 1. real route tables


def _str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _limit_text(spec: str) -> str:
    """flask-limiter's "5/30second" as its 429 description, "5 per 30 second"."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d*)\s*([a-z]+?)s?\s*", spec)
    assert m, spec
    return f"{m.group(1)} per {m.group(2) or 1} {m.group(3)}"


def _dict_keys(node: ast.AST) -> set[str]:
    return {k for k in (_str(x) for x in getattr(node, "keys", ()) if x is not None) if k}


class _Route:
    def __init__(self, fn: ast.FunctionDef, method: str, rule: str) -> None:
        self.fn, self.method, self.rule = fn, method, rule
        self.limit: str | None = None
        self.auth = False


def _routes(tree: ast.Module) -> list[_Route]:
    out = []
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        found: list[_Route] = []
        limit, auth = None, False
        for dec in fn.decorator_list:
            if isinstance(dec, ast.Name) and dec.id == "require_auth":
                auth = True
            if not (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute)):
                continue
            owner = dec.func.value
            attr = dec.func.attr
            if isinstance(owner, ast.Name) and owner.id == "limiter" and attr == "limit":
                limit = _limit_text(_str(dec.args[0]) or "")
            if isinstance(owner, ast.Name) and owner.id == "app":
                rule = _str(dec.args[0]) if dec.args else None
                if rule is None:
                    continue
                if attr in ("get", "post", "put", "patch", "delete"):
                    found.append(_Route(fn, attr.upper(), rule))
                elif attr == "route":
                    methods = ["GET"]
                    for kw in dec.keywords:
                        if kw.arg == "methods" and isinstance(kw.value, ast.List | ast.Tuple):
                            methods = [_str(e) or "" for e in kw.value.elts]
                    found += [_Route(fn, m.upper(), rule) for m in methods]
        for r in found:
            r.limit, r.auth = limit, auth
        out += found
    return out


def _helpers(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}


def _statuses(fn: ast.FunctionDef, helpers: dict[str, ast.FunctionDef]) -> set[int]:
    out: set[int] = set()
    from_helper = {
        t.id
        for n in ast.walk(fn)
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
        and isinstance(n.value.func, ast.Name) and n.value.func.id in helpers
        for t in n.targets
        if isinstance(t, ast.Name)
    }  # fmt: skip
    called = {
        n.func.id
        for n in ast.walk(fn)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in helpers
    }
    for f in [fn, *(helpers[c] for c in called)]:
        for n in ast.walk(f):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "abort":
                out.add(n.args[0].value)  # type: ignore[attr-defined]
            if not isinstance(n, ast.Return) or n.value is None:
                continue
            v = n.value
            if (
                isinstance(v, ast.Tuple)
                and len(v.elts) == 2
                and isinstance(v.elts[1], ast.Constant)
            ):
                out.add(int(v.elts[1].value))
            elif f is fn and not (isinstance(v, ast.Name) and v.id in from_helper):
                out.add(200)
    return out


def _returned_keys(fn: ast.FunctionDef) -> set[str] | None:
    """Keys of the dict literals the route returns (None when it returns no literal dict)."""
    assigned: dict[str, list[ast.AST]] = {}
    stored: dict[str, set[str]] = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign | ast.AnnAssign):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for t in targets:
                if isinstance(t, ast.Name) and n.value is not None:
                    vals = (
                        [n.value.body, n.value.orelse]
                        if isinstance(n.value, ast.IfExp)
                        else [n.value]
                    )
                    assigned.setdefault(t.id, []).extend(vals)
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                    k = _str(t.slice)
                    if k:
                        stored.setdefault(t.value.id, set()).add(k)
    keys: set[str] = set()
    seen = False
    for n in ast.walk(fn):
        if not isinstance(n, ast.Return) or n.value is None:
            continue
        v = n.value.elts[0] if isinstance(n.value, ast.Tuple) else n.value
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "jsonify":
            v = v.args[0] if v.args else v
        cands = [v]
        if isinstance(v, ast.Name):
            cands = assigned.get(v.id, [])
            keys |= stored.get(v.id, set())
        for c in cands:
            if isinstance(c, ast.Dict):
                keys |= _dict_keys(c)
                seen = True
    return keys if seen else None


def _module_keys(tree: ast.Module, src: str) -> set[str]:
    keys: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Dict):
            keys |= _dict_keys(n)
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store):
            k = _str(n.slice)
            if k:
                keys.add(k)
    # columns of the sqlite tables the apps build
    for cols in re.findall(r"CREATE TABLE \w+\(([^)]*)\)", src):
        keys |= {c.split()[0] for c in cols.split(",") if c.strip()}
    return keys


def _parse(task: str) -> tuple[ast.Module, str]:
    src = (SB / "tasks" / task / "challenge" / "app.py").read_text()
    return ast.parse(src), src


@needs_sources
def test_facts_cover_every_task() -> None:
    real = sorted(
        p.name for p in (SB / "tasks").iterdir() if (p / "challenge" / "app.py").is_file()
    )
    assert real == sorted(FACTS) == sorted(REGISTRY)


@needs_sources
@pytest.mark.parametrize("task", sorted(FACTS))
def test_facts_match_the_real_route_table(task: str) -> None:
    tree, src = _parse(task)
    helpers = _helpers(tree)
    real = {(r.method, r.rule): r for r in _routes(tree)}
    facts = {(rt.method, rt.rule): rt for rt in FACTS[task].routes}
    assert sorted(facts) == sorted(real), f"{task}: routes differ"
    module_keys = _module_keys(tree, src)
    for key, r in real.items():
        rt = facts[key]
        where = f"{task} {key[0]} {key[1]}"
        assert rt.limit == r.limit, where
        assert rt.auth == r.auth, where
        if not rt.runtime:
            ours = set(rt.statuses) - {429}
            theirs = _statuses(r.fn, helpers) | ({401} if r.auth else set())
            assert ours | ({401} if rt.auth else set()) == theirs, where
        returned = _returned_keys(r.fn)
        if returned is not None:
            ours_keys = set().union(*(s.keys | s.optional for s in rt.shapes if s.kind == "object"))
            # every key a literal the route returns is in our record (the rest of our
            # keys come from rows and seeded records, checked against the module below)
            assert returned <= ours_keys, f"{where}: {sorted(returned - ours_keys)}"
        for s in rt.shapes:
            mentioned = s.keys | s.optional | (s.item_keys or frozenset())
            assert mentioned <= module_keys, f"{where}: {sorted(mentioned - module_keys)}"


@needs_sources
def test_agent_image_tools() -> None:
    text = (SB / "agent" / "Dockerfile").read_text()
    assert "python:3.14-slim" in text
    m = re.search(r"apt-get install -y --no-install-recommends(.*?)&&", text, re.S)
    assert m is not None
    pkgs = set(m.group(1).replace("\\", " ").split())
    assert pkgs == APT_PACKAGES


# --------------------------------------------------------------------------- 2. simulated runs


def _words(text: str) -> set[str]:
    return set(text.split())


#: apt packages the agent image installs on top of python:3.14-slim, and what they bring.
APT_PACKAGES = {"curl", "netcat-openbsd", "jq", "dnsutils"}
IMAGE_TOOLS = frozenset(
    # from the apt packages
    {"curl", "nc", "jq", "dig", "nslookup", "host"}
    # python:3.14-slim
    | {"python3", "python", "pip", "pip3", "openssl"}
    # debian base: coreutils, grep, sed, mawk, findutils, debianutils, hostname, bash
    | _words(
        "cat ls head tail wc sort uniq tee cut tr mkdir rm cp mv touch chmod date env id whoami "
        "uname base64 md5sum sha256sum seq sleep timeout nohup stat du df dirname basename "
        "realpath printenv yes od tac nl paste expr mktemp readlink ln fold shuf true false "
        "grep egrep sed awk find xargs which hostname getent tar gzip zcat"
    )
    # bash builtins and keywords
    | _words(
        "echo printf cd export kill wait read set source . test [ [[ break continue exit jobs "
        "type command unset local return eval exec trap declare let shift pwd : time"
    )
)


def _tools(cmd: str) -> set[str]:
    """The programs a bash command line runs (heredoc bodies and quoted text skipped)."""
    text = re.sub(r"<<-?\s*(['\"]?)(\w+)\1[^\n]*\n.*?\n\2(?=\n|$)", " ", cmd, flags=re.S)
    text = re.sub(r"'[^']*'", "''", text)
    subs = re.findall(r"\$\(([^()]*)\)", text)
    text = re.sub(r"\$\(([^()]*)\)", "X", text)
    out: set[str] = set()
    for part in [text, *subs]:
        part = re.sub(r'"(?:[^"\\]|\\.)*"', '""', part)
        for seg in re.split(r"\|\||&&|[;|&\n(){}]|\bdo\b|\bthen\b|\belse\b", part):
            words = seg.split()
            while words and (
                re.fullmatch(r"\w+=\S*", words[0]) or words[0] in ("!", "nohup", "time")
            ):
                words = words[1:]
            if words and words[0] == "timeout":
                words = words[2:]
            if not words or words[0] in ("for", "while", "if", "done", "fi", "in", "esac"):
                continue
            w = words[0]
            if not re.fullmatch(r"[A-Za-z_./\[:][\w.\-/\[]*", w):
                continue  # redirections and the remains of nested quoting
            out.add(w)
            if w in ("pip", "pip3") and len(words) > 1 and words[1] == "install":
                out.add("pip install")
    return out


def _play_all() -> tuple[list[str], list[tuple[str, str]], list[int]]:
    """Play every task x mode x in-image style; check every simulated response on the way."""
    bad: Counter[str] = Counter()
    current = {"task": ""}
    orig = simapp.SimApp.handle

    def handle(self, r, t, source=None):  # noqa: ANN001, ANN202
        resp = orig(self, r, t, source)
        kind = "json" if resp.is_json else ("html" if "html" in resp.content_type else "text")
        body = resp.data if kind == "json" else resp.body
        why = check_response(current["task"], r.method, r.path, resp.status, body, kind)
        if why:
            bad[re.sub(r"/\d+", "/N", why)] += 1
        return resp

    commands: list[tuple[str, str]] = []
    latencies: list[int] = []
    simapp.SimApp.handle = handle  # type: ignore[method-assign]
    try:
        for task, sc in sorted(REGISTRY.items()):
            current["task"] = task
            for k, m in enumerate(sc.modes):
                for j, style in enumerate(IN_IMAGE):
                    start = START + timedelta(days=k, minutes=37 * j)
                    ep = sc.build(m.name, STYLES[style], random.Random(1000 * k + j), start)
                    for s in ep.steps:
                        if s.tool == "execute_command":
                            commands.append((s.text, s.observation))
                            latencies.append(s.latency_ms or 0)
    finally:
        simapp.SimApp.handle = orig  # type: ignore[method-assign]
    return [f"{v} x {k}" for k, v in bad.most_common()], commands, latencies


@pytest.fixture(scope="module")
def played() -> tuple[list[str], list[tuple[str, str]], list[int]]:
    return _play_all()


def test_simulated_responses_match_the_real_apps(played) -> None:  # noqa: ANN001
    bad, commands, _ = played
    assert len(commands) > 5000
    assert not bad, "\n".join(bad[:30])


def test_no_statuses_the_real_apps_never_give(played) -> None:  # noqa: ANN001
    _, commands, _ = played
    for cmd, obs in commands:
        assert "415" not in re.findall(r"\b\d{3}\b", obs) or "UNSUPPORTED" not in obs
        assert "HTTP/1.1 415" not in obs and "HTTP Error 415" not in obs, cmd
        assert not re.search(r"(?m)^(\S+ )?000$", obs), cmd


def test_commands_use_only_tools_in_the_agent_image(played) -> None:  # noqa: ANN001
    _, commands, _ = played
    used: Counter[str] = Counter()
    for cmd, obs in commands:
        # trying a missing tool and reading "command not found" is what real agents do
        used.update(t for t in _tools(cmd) if f"{t}: command not found" not in obs)
    foreign = {t: n for t, n in used.items() if t not in IMAGE_TOOLS}
    assert not foreign, foreign


def test_out_of_image_styles_are_off_by_default() -> None:
    from monsearch.synth.generate import OUT_OF_IMAGE_DEFAULT, build_trajectory, plan

    assert OUT_OF_IMAGE_DEFAULT is False
    items = plan(300, 3)
    styles = {build_trajectory(3, n, g, t).meta["style"] for n, (g, t) in enumerate(items)}
    assert not styles & set(OUT_OF_IMAGE_STYLES)
    on = [build_trajectory(3, n, g, t, out_of_image=True) for n, (g, t) in enumerate(items)]
    assert {t.meta["style"] for t in on} & set(OUT_OF_IMAGE_STYLES)
    assert all(t.meta["out_of_image"] for t in on)


def test_ls_la_output_varies(played) -> None:  # noqa: ANN001
    _, commands, _ = played
    outs = [obs for cmd, obs in commands if cmd.startswith("ls -la")]
    assert len(outs) > 50
    assert len(set(outs)) > len(outs) // 2
    assert len({ln.split()[-2] for o in outs for ln in o.splitlines() if ln.count(":") == 1}) > 20


def test_command_latency_includes_the_exec_round_trip(played) -> None:  # noqa: ANN001
    _, _, latencies = played
    assert statistics.median(latencies) >= 80
    assert min(latencies) >= 30
