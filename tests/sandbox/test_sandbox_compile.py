"""Compiling monitor programs: the policy's rules, error positions, PARAMS."""

from __future__ import annotations

import pytest

from monsearch.sandbox.restricted import (
    ProgramError,
    build_globals,
    compile_program,
    extract_params,
    load_program,
    substitute_params,
)
from monsearch.views.frozen import freeze

GOOD = """
PARAMS = {"w": 2.0, "bias": -1, "label": "x", "n": 3}
DOUBLE = PARAMS["w"] * 2

def count(traj):
    n = 0
    for step in traj.steps:
        n += 1
    return n

def score(traj):
    return DOUBLE + PARAMS["bias"] + count(traj)
"""

VIEW = freeze({"steps": [{"tool": "think"}, {"tool": "execute_command"}], "task": "t"})


def run(source: str, view=VIEW, params=None):
    report = compile_program(source, params)
    assert report.ok, report.message
    return load_program(report.code, build_globals())(view)


def test_good_program_compiles_and_runs():
    report = compile_program(GOOD)
    assert report.ok and report.errors == ()
    assert report.params == {"w": 2.0, "bias": -1.0, "n": 3.0}
    assert run(GOOD) == 2.0 * 2 - 1 + 2


@pytest.mark.parametrize(
    ("source", "line", "col", "fragment"),
    [
        ("x = 1\nimport os\n", 2, 1, "imports are not allowed"),
        ("from os import system\n", 1, 1, "imports are not allowed"),
        ("class A:\n    pass\n", 1, 1, "classes are not allowed"),
        ("def g():\n    yield 1\n", 2, 5, "yield"),
        ("def g():\n    yield from (1, 2)\n", 2, 5, "yield from"),
        ("def f(t):\n    return t.__class__\n", 2, 12, '"__class__"'),
        ("def f(t):\n    g = (s for s in t)\n    return g.gi_frame\n", 3, 12, "gi_frame"),
        ("def f(t):\n    return t.cr_frame\n", 2, 12, "cr_frame"),
        ("def f(t):\n    try:\n        pass\n    finally:\n        return 1\n", 5, 9, "finally"),
        (
            "def f(t):\n    for i in t:\n        try:\n            pass\n        finally:\n            break\n",
            6,
            13,
            "finally",
        ),
        ("x = __builtins__\n", 1, 5, '"__builtins__"'),
        ("async def f():\n    pass\n", 1, 1, "AsyncFunctionDef"),
        ("def f(t):\n    nonlocal t\n", 2, 5, "Nonlocal"),
        ("def f(t, _getattr_=None, /):\n    pass\n", 1, 1, "_getattr_"),
        ("x = eval('1')\n", 1, 5, "Eval calls"),
        ("def f(t):\n    t.x += 1\n", 2, 5, "augmented assignment of attributes"),
        ("try:\n    pass\nexcept* ValueError:\n    pass\n", 1, 1, "TryStar"),
        ("x = (\n", 1, 5, "SyntaxError"),
    ],
)
def test_rejections_carry_line_and_column(source, line, col, fragment):
    report = compile_program(source)
    assert not report.ok and report.code is None
    first = next(e for e in report.errors if fragment in e.message)
    assert (first.line, first.col) == (line, col)
    assert f"line {line}" in report.message


def test_finally_may_loop_and_break_inside_its_own_loop():
    src = "def score(t):\n    try:\n        pass\n    finally:\n        for i in range(3):\n            break\n    return 1\n"
    assert compile_program(src).ok


def test_transformer_recursion_and_parser_limits_are_compile_errors():
    deep = compile_program("x = " + "1+" * 20000 + "1\n")
    assert not deep.ok and "nested too deeply" in deep.message
    parens = compile_program("x = " + "(" * 300 + ")" * 300)
    assert not parens.ok and "parentheses" in parens.message
    assert not compile_program("x = 1\0\n").ok


def test_source_size_cap():
    big = "x = 1\n" * 12000
    report = compile_program(big, max_source_bytes=64 * 1024)
    assert not report.ok and "limit is 65536" in report.message
    assert compile_program(big, max_source_bytes=1 << 20).ok


def test_bare_except_catches_exceptions_only():
    src = "def score(t):\n    try:\n        return 1 / 0\n    except:\n        return -1.0\n"
    assert run(src) == -1.0


def test_augmented_item_assignment_goes_through_the_guards():
    src = (
        "def score(t):\n"
        "    counts = {}\n"
        "    for s in t.steps:\n"
        "        counts[s.tool] = counts.get(s.tool, 0)\n"
        "        counts[s.tool] += 1\n"
        "    xs = [1, 2, 3]\n"
        "    xs[0:2] += [9]\n"
        "    return counts['think'] * 100 + len(xs)\n"
    )
    assert run(src) == 100 + 4  # xs[0:2] = [1, 2] + [9]
    with pytest.raises(TypeError, match="read-only"):
        run("def score(t):\n    t['task'] += 'x'\n")


def test_extract_params_reads_only_literal_numbers():
    assert extract_params(GOOD) == {"w": 2.0, "bias": -1.0, "n": 3.0}
    assert extract_params("PARAMS: dict = {'a': +1.5, 'b': True}\n") == {"a": 1.5}
    assert extract_params("def score(t):\n    return 1\n") == {}
    assert extract_params("PARAMS = make()\n") == {}
    with pytest.raises(ProgramError):
        extract_params("PARAMS = {")


def test_params_override_changes_module_level_derivations():
    assert run(GOOD, params={"w": 10}) == 10 * 2 - 1 + 2
    report = compile_program(GOOD, {"w": 0.5, "bias": 4.0})
    assert report.params["w"] == 0.5 and report.params["bias"] == 4.0


@pytest.mark.parametrize(
    "params", [{"nope": 1.0}, {"label": 1.0}, {"w": float("nan")}, {"w": "3"}, {"w": True}]
)
def test_bad_params_overrides_are_compile_errors(params):
    report = compile_program(GOOD, params)
    assert not report.ok and "PARAMS" in report.message


def test_substitute_params_keeps_formatting_and_matches_override():
    src = '# héllo\nPARAMS = {"w": 2.0,   "bias": -1,\n          "n": 3}\n' + GOOD.split("\n", 2)[2]
    out = substitute_params(src, {"w": 0.25, "bias": 7})
    assert out.startswith('# héllo\nPARAMS = {"w": 0.25,   "bias": 7,\n          "n": 3}\n')
    assert extract_params(out) == {"w": 0.25, "bias": 7.0, "n": 3.0}
    assert run(out) == run(src, params={"w": 0.25, "bias": 7})
    with pytest.raises(ProgramError):
        substitute_params(src, {"zzz": 1})


def test_missing_score_is_reported():
    report = compile_program("x = 1\n")
    with pytest.raises(ProgramError, match="score"):
        load_program(report.code, build_globals())
    report = compile_program("score = 3\n")
    with pytest.raises(ProgramError, match="score"):
        load_program(report.code, build_globals())
