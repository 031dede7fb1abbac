"""The synthetic generator writes the Python shapes agents use (issue 8, item 8).

A run that writes Python settles on a habit (:func:`~monsearch.synth.clients.habit.py_habit`):
a ``call(method, path, body=None, token=None)`` helper over urllib or
``http.client`` defined in its scripts, a client module written once and
imported in later steps (``cd DIR``, ``sys.path.insert``, ``PYTHONPATH``),
``http.client`` connections (now and then ``putrequest`` / ``putheader``),
urllib ``Request`` objects with ``add_header``, a script that takes the request
on its command line, or curl through ``subprocess``. Here: every family occurs
in a generated corpus, every Python snippet the generator emits is valid Python,
the view recovers what these shapes sent (headers and bodies too), and the
unparsed-HTTP share stays under 2 % on every style.
"""

from __future__ import annotations

import ast
import json
import random
import re
from collections import Counter
from datetime import UTC, datetime

import pytest

from monsearch.corpora.model import Trajectory
from monsearch.synth import agent as agent_module
from monsearch.synth.clients.dispatch import render_exchange
from monsearch.synth.clients.exchange import Exchange
from monsearch.synth.clients.habit import py_habit
from monsearch.synth.generate import generate
from monsearch.synth.observations import Response
from monsearch.synth.request import req
from monsearch.synth.scenario import REGISTRY
from monsearch.synth.style import STYLES
from monsearch.views.build import build_view
from monsearch.views.coverage import corpus_coverage
from monsearch.views.http_extract import python_invocation
from monsearch.views.shell import run_script

START = datetime(2026, 8, 1, 12, 0, tzinfo=UTC)
PY_STYLES = ("mixed_pragmatic", "python_heredoc", "python_oneliner")

_HELPER = r"def (?:call|api|send)\(method, path, body=None, token=None"
_MODULE = r"(?:client|api|helpers|sb)"
#: Shape families and how a step that uses one reads.
FAMILIES: dict[str, re.Pattern[str]] = {
    "helper_urllib": re.compile(_HELPER + r".*\n(?:.*\n)*?.*urllib\.request\.Request\(BASE \+ path"),
    "helper_http_client": re.compile(_HELPER + r".*\n(?:.*\n)*?.*HTTPConnection\(HOST, PORT"),
    "module_written": re.compile(
        rf"(?:cat >|tee) /\S+/{_MODULE}\.py[^\n]*<<'EOF'\n|open\('/\S+/{_MODULE}\.py', \"w\"\)"
    ),
    "module_import_cwd": re.compile(rf"cd /\S+ && python3 .*(?:import (?:\w+, )*{_MODULE}\b|\nfrom {_MODULE} import)"),
    "module_import_sys_path": re.compile(rf"sys\.path\.insert\(0, \"/\S+\"\)\n(?:.*\n)*from {_MODULE} import"),
    "module_import_pythonpath": re.compile(r"PYTHONPATH=/\S+ python3 "),
    "http_client_request": re.compile(r"conn = http\.client\.HTTPS?Connection\(\"[^\n]*\n(?:.*\n)*?conn\.request\("),
    "http_client_putrequest": re.compile(r"conn\.putrequest\((?:.*\n)*?conn\.endheaders\(\)"),
    "urllib_add_header": re.compile(r"req\.add_header\("),
    "argv_script": re.compile(r"python3 /tmp/(?:send|hit|rq|do_req)\.py (?:GET|POST|PUT|PATCH|DELETE) "),
    "subprocess_curl": re.compile(r"subprocess\.run\(args"),
}  # fmt: skip
_IMPORTS_MODULE = re.compile(rf"import (?:\w+, )*{_MODULE}\b|from {_MODULE} import")
#: A step written in one of the new shapes (for the exact comparison below).
NEW_SHAPE = re.compile(
    rf"{_HELPER}|import (?:\w+, )*{_MODULE}\b|from {_MODULE} import|http\.client\.HTTPS?Connection\(\""
    r"|add_header\(|python3 /tmp/(?:send|hit|rq|do_req)\.py [A-Z]|subprocess\.run\(args"
)


@pytest.fixture(scope="module")
def corpus() -> list[Trajectory]:
    return generate(1600, 0)


def family_counts(trajs: list[Trajectory]) -> tuple[Counter, Counter]:
    """(steps, runs) per shape family."""
    steps: Counter = Counter()
    runs: Counter = Counter()
    for t in trajs:
        seen = set()
        for s in t.steps:
            for name, rx in FAMILIES.items():
                if s.tool == "execute_command" and rx.search(s.text):
                    steps[name] += 1
                    seen.add(name)
            if _IMPORTS_MODULE.search(s.text) and not FAMILIES["module_written"].search(s.text):
                steps["module_used_later"] += 1
        runs.update(seen)
    return steps, runs


def test_every_python_shape_family_occurs(corpus):
    steps, runs = family_counts(corpus)
    for name in FAMILIES:
        assert steps[name] >= 10 and runs[name] >= 5, (name, dict(steps))
    # A run that writes a helper or a module keeps using it.
    assert steps["module_used_later"] > runs["module_written"]
    assert steps["helper_urllib"] + steps["helper_http_client"] > 1.5 * (
        runs["helper_urllib"] + runs["helper_http_client"]
    )


def test_unparsed_http_share_under_two_percent_on_every_style(corpus):
    cov = corpus_coverage(corpus, examples=5)
    assert cov["kinds"]["python"]["http_steps"] > 1000
    for style, block in cov["styles"].items():
        assert block["http_steps"] > 100, style
        assert block["share"] < 0.02, (style, block, cov["examples"])


def _python_sources(steps) -> list[tuple[int, str]]:
    """Every Python program a run's commands hold: code given to python3 and .py files written."""
    files: dict[str, str] = {}
    out = []
    for s in steps:
        if s.tool != "execute_command":
            continue
        cmds, written = run_script(s.text, files.get)
        out += [(s.index, content) for path, content in written.items() if path.endswith(".py")]
        for cmd in cmds:
            inv = python_invocation(cmd, lambda p, w=written: w.get(p) or files.get(p))
            if inv is not None and inv[0]:
                out.append((s.index, inv[0]))
        files.update(written)
    return out


def _builds(seeds: int = 1):
    for task, scenario in sorted(REGISTRY.items()):
        for mode in scenario.modes:
            for style_name in PY_STYLES:
                for seed in range(seeds):
                    rng = random.Random(f"{task}/{mode.name}/{style_name}/{seed}")
                    yield task, scenario, mode, style_name, rng


def test_every_emitted_python_snippet_is_valid_python():
    n = 0
    bad = []
    for task, scenario, mode, style_name, rng in _builds():
        ep = scenario.build(mode.name, STYLES[style_name], rng, START)
        for step, code in _python_sources(ep.steps):
            n += 1
            try:
                ast.parse(code)
            except SyntaxError as e:
                bad.append(f"{task} {mode.name} {style_name} step {step}: {e}\n{code}")
    assert n > 2000
    assert not bad, "\n\n".join(bad[:3])


def _mismatches(r, got) -> list[str]:
    out = []
    if (got.method, got.url) != (r.method, r.url):
        out.append(f"sent {r.method} {r.url}, view {got.method} {got.url}")
    for k, v in r.headers:
        skip = r.no_content_type and k.lower() == "content-type"
        if not skip and got.headers.get(k.lower()) != v:
            out.append(f"header {k}: sent {v!r}, view {got.headers.get(k.lower())!r}")
    if r.json_body is not None and not r.malformed:
        try:
            same = json.loads(got.body) == r.json_body
        except ValueError:
            same = False
        if not same:
            out.append(f"body: sent {r.json_body!r}, view {got.body!r}")
    elif r.data is not None and got.body != r.data:
        out.append(f"body: sent {r.data!r}, view {got.body!r}")
    return out


def test_view_recovers_what_the_new_shapes_sent(recorded):
    """Method, URL, every header and the body of each request sent in a new shape."""
    checked = 0
    problems: list[str] = []
    for task, scenario, mode, style_name, rng in _builds(2):
        recorded.clear()
        ep = scenario.build(mode.name, STYLES[style_name], rng, START)
        traj = Trajectory(
            id="s",
            task=task,
            generator="g",
            prompt=scenario.prompt,
            steps=tuple(ep.steps),
            outcome=ep.outcome,
            solved=ep.solved,
        )
        view = build_view(traj)
        sent: dict[int, list] = {}
        for _t, r, _status, step in recorded[0].requests:
            sent.setdefault(step, []).append(r)
        for step, reqs in sent.items():
            text = ep.steps[step].text
            if not NEW_SHAPE.search(text):
                continue
            got = [q for q in view.requests if q.step == step]
            checked += len(reqs)
            where = f"{task} {mode.name} {style_name} step {step}"
            if len(got) != len(reqs):
                problems.append(f"{where}: sent {len(reqs)} requests, view {len(got)}\n{text}")
                continue
            for r, q in zip(reqs, got, strict=True):
                problems += [f"{where}: {p}\n{text}" for p in _mismatches(r, q)]
    assert checked > 2000
    assert not problems, "\n\n".join(problems[:3])


# --------------------------------------------------------------------------- one exchange


def test_module_is_written_once_then_imported():
    rng = random.Random(1)
    h = py_habit(rng)
    h.family, h.imp, h.module_dir, h.module = "module", "syspath", "/tmp", "client"
    r = req("POST", "http://app:5000/api/login", json_body={"u": "a"})
    outs = []
    for _ in range(3):
        ex = Exchange(r, Response(200, '{"ok":true}\n'), "d", "172.18.0.2")
        outs.append(render_exchange(STYLES["python_heredoc"], rng, "python_urllib", ex)[1])
    assert h.written
    assert sum("/tmp/client.py" in o.command for o in outs) <= 1
    assert all("from client import call" in o.command or "import client" in o.command for o in outs)
    assert outs[0].extra["files"]["/tmp/client.py"].startswith("import ")
    assert all(o.stdout.startswith("200") and '{"ok":true}' in o.stdout for o in outs)


def test_habit_is_drawn_once_per_run():
    rng = random.Random(7)
    assert py_habit(rng) is py_habit(rng)
    assert py_habit(random.Random(7)).family == py_habit(random.Random(7)).family


# --------------------------------------------------------------------------- loops


@pytest.mark.parametrize("family", ["helper", "module"])
@pytest.mark.parametrize("imp", ["cwd", "syspath", "pythonpath"])
def test_helper_loop_sends_one_request_per_value(family, imp):
    """:func:`render_py_loop` (for the agent's Python loops): the helper in a loop."""
    from monsearch.synth.clients.loops import VAR, LoopSpec
    from monsearch.synth.clients.python_loop import render_py_loop

    cases = [
        (req("GET", f"http://app:5000/api/projects/{VAR}", headers={"Authorization": "Bearer t.k-1"}), list(range(1, 9))),
        (req("POST", "http://app:5000/auth/login", json_body={"username": "alice", "password": VAR}), ["a", "b", "c"]),
        (req("POST", "http://app:5000/api/search", json_body={"q": f"x{VAR}"}, headers={"X-Api-Key": "k"}), [1, 2]),
    ]  # fmt: skip
    for k, (tmpl, values) in enumerate(cases):
        rng = random.Random(k)
        h = py_habit(rng)
        h.family, h.imp, h.headers_param = family, imp, True
        spec = LoopSpec(tmpl, values, "pass", 0.5, isinstance(values[0], int), k == 1, k == 0)
        cmd = render_py_loop(rng, spec, VAR)
        assert cmd is not None
        view = build_view(Trajectory(id="l", task="t", generator="g", prompt="", steps=(
            agent_module.Step(0, "execute_command", cmd, "", {"command": cmd}, START.isoformat(), 5),
        ), outcome="no_flag", solved=None))  # fmt: skip
        got = [(q.method, q.url, q.repeat) for q in view.requests]
        want = []
        for v in values:
            url = tmpl.url.replace(VAR, str(v))
            want.append((tmpl.method, url, 1))
        if spec.is_range and len(got) == 1:  # a long range: one request with its count
            assert got[0][2] == len(values) and got[0][0] == tmpl.method
            continue
        assert got == want, cmd
        for q, v in zip(view.requests, values, strict=True):
            for name, value in tmpl.headers:
                assert q.headers.get(name.lower()) == value, cmd
            if tmpl.json_body is not None:
                body = (
                    json.dumps(tmpl.json_body)
                    .replace(VAR, str(v))
                    .replace(json.dumps(VAR)[1:-1], str(v))
                )
                assert json.loads(q.body) == json.loads(body), cmd
