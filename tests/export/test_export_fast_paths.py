"""The exported plugin's fast paths give exactly what the slow paths they skip give."""

from __future__ import annotations

import dataclasses
import importlib
import sys

import pytest
from export_support import shared_setup

re2 = pytest.importorskip("re2")


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    folder, meta = shared_setup(tmp_path_factory)["plugins"]["seed"]
    src = str(folder / "src")
    if src not in sys.path:
        sys.path.insert(0, src)
    return importlib.import_module(meta["package"])


def _doc(steps: list) -> dict:
    return {
        "atif_version": "1.7",
        "trajectory_id": "t1",
        "task": {"name": "task", "prompt": "p"},
        "outcome": "no_flag",
        "steps": steps,
    }


def _reader_steps(plugin, doc: dict) -> list[dict]:
    """The steps as the vendored reader alone reads them (no fast path)."""
    core = plugin.core
    node = core.Node(doc, "<trajectory>", "$")
    return [
        dataclasses.asdict(core._sb._read_step(n, i)) for i, n in enumerate(node.array("steps"))
    ]


GOOD_STEPS = [
    {
        "action": {"tool": "execute_command", "input": {"command": "ls"}},
        "observation": {"text": "a"},
    },
    {"action": {"tool": "think", "input": "hm"}, "index": 7, "timestamp": "2025-01-01T00:00:00Z"},
    {"action": {"tool": "x", "input": [1, 2]}, "observation": None, "latency_ms": 5},
    {"action": {"tool": "x"}, "observation": {"text": None}, "index": None},
    {"tool": "execute_command", "input": {"cmd": "id"}, "output": "uid=0"},
    {"tool": "x", "input": "raw", "output": None},
]

BAD_STEPS = [
    "not an object",
    {"action": None},
    {"action": {"tool": ""}},
    {"action": {"tool": 3}},
    {"action": {"tool": "x"}, "observation": "text"},
    {"action": {"tool": "x"}, "observation": {"text": 5}},
    {"action": {"tool": "x"}, "index": True},
    {"action": {"tool": "x"}, "latency_ms": 1.5},
    {"action": {"tool": "x"}, "timestamp": 5},
    {"tool": "x", "output": 3},
]


def test_plain_steps_read_as_the_reader_reads_them(plugin):
    doc = _doc(GOOD_STEPS)
    traj = plugin.load(doc)
    steps = traj.steps
    assert [dataclasses.asdict(s) for s in steps] == _reader_steps(plugin, doc)
    core = plugin.core
    # built through _TrajectorySlots: a real Trajectory with the constructor's defaults
    fields = {f.name: getattr(traj, f.name) for f in dataclasses.fields(traj)[:7]}
    assert type(traj) is core.Trajectory and traj == core.Trajectory(**fields)
    assert repr(traj) == repr(core.Trajectory(**fields))
    assert traj.meta == {} and traj.meta is not plugin.load(doc).meta
    for step in steps:  # built through _StepSlots: a real Step, equal to Step(...)
        assert type(step) is core.Step
        assert step == core.Step(**dataclasses.asdict(step))
        assert repr(step) == repr(core.Step(**dataclasses.asdict(step)))


@pytest.mark.parametrize("bad", BAD_STEPS)
def test_odd_steps_fail_as_the_reader_fails(plugin, bad):
    doc = _doc([GOOD_STEPS[0], bad])
    with pytest.raises(plugin.InputError) as fast:
        plugin.load(doc)
    with pytest.raises(plugin.InputError) as slow:
        _reader_steps(plugin, doc)
    assert str(fast.value) == str(slow.value)


PATTERNS = [
    r"",
    r"a*",
    r"(a)|(b)",
    r"(?P<n>[0-9]+)",
    r"/[0-9]+|/[0-9a-fA-F-]{8,}",
    r"\b",
    r"(é+)|x",
]
TEXTS = ["", "abc/123/x", "ab ab/12345678-aa é ab", "ééa", "x" * 40, "/1/22/333"]


def _match(m) -> tuple | None:
    if m is None:
        return None
    n = m.re.groups
    return (m.span(), m.groups(), m.groups(""), [m[i] for i in range(n + 1)], m.groupdict())


def test_shim_patterns_match_as_google_re2(plugin):
    shim = sys.modules[plugin.__name__ + "._vendor._re2"]
    for pattern in PATTERNS:
        ours, theirs = shim.compile(pattern), re2.compile(pattern)
        for text in TEXTS:
            assert _match(ours.search(text)) == _match(theirs.search(text))
            assert [_match(m) for m in ours.finditer(text)] == [
                _match(m) for m in theirs.finditer(text)
            ]
            assert ours.findall(text) == theirs.findall(text)
            assert ours.split(text) == theirs.split(text)
            assert ours.subn("<\\g<0>>", text) == theirs.subn("<\\g<0>>", text)
            assert ours.subn("z", text, 1) == theirs.subn("z", text, 1)


# --------------------------------------------------------------------------- instances

#: Programs with module state a run changes, each with what a fresh instance scores.
STATEFUL = {
    "SEEN = []\ndef score(traj):\n    SEEN.append(1)\n    return float(len(SEEN))\n": 1.0,
    "P = {'a': 1}\ndef score(traj):\n    P['a'] = P['a'] * 2\n    return float(P['a'])\n": 2.0,
    "def f(x, acc=[]):\n    acc.append(x)\n    return len(acc)\n"
    "def score(traj):\n    return float(f(1) + f(2))\n": 3.0,
    "A = (1, [2])\ndef score(traj):\n    A[1].append(1)\n    return float(len(A[1]))\n": 2.0,
    "def tokens(t):\n    return (1, 2, 3)\ndef score(traj):\n    return float(len(tokens('a')))\n": 3.0,
    # not rerunnable: a function binds a global, the body reads a name
    "N = 0\ndef score(traj):\n    global N\n    N += 1\n    return float(N)\n": 1.0,
    "def score(traj):\n    global Z\n    Z = 1\n    return 1.0\n": 1.0,
    "X = len((1, 2))\ndef score(traj):\n    return float(X)\n": 2.0,
    "try:\n    X\nexcept NameError:\n    X = 0\nX = X + 1\ndef score(traj):\n    return float(X)\n": 1.0,
}


def test_rerunnable_only_for_bodies_that_bind_constants_and_functions(plugin):
    core = plugin.core
    answers = [core.rerunnable(core.compile_program(src).code) for src in STATEFUL]
    assert answers == [True] * 5 + [False] * 4


def test_a_spare_namespace_gives_what_a_fresh_instance_gives(plugin, monkeypatch):
    """evaluate() may run the next instance in a finished one's namespace: module state
    the last run changed is bound afresh, exactly as in a new namespace."""
    core = plugin.core
    doc = _doc(GOOD_STEPS)
    monkeypatch.setattr(core, "LIMITS", core.Limits(isolation="none"))  # where _CODE is ours
    try:
        for source, fresh in STATEFUL.items():
            code = core.compile_program(source).code
            monkeypatch.setattr(core, "_CODE", code)
            monkeypatch.setattr(core, "_RERUNNABLE", core.rerunnable(code))
            core.clear_caches()
            scores = [plugin.score(doc) for _ in range(4)]
            assert scores == [fresh] * 4, source
            assert len(core._SPARE) == (1 if core._RERUNNABLE else 0)
            assert core._SPARE == [] or core._SPARE[0]["oracle"] is None
    finally:
        core.clear_caches()  # no spare of these programs for the frozen one
    assert core._SPARE == []
