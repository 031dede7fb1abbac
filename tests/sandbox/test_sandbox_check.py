"""``sandbox check``'s static checks: programs that compile but cannot run or be tuned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from monsearch.cli import cli
from monsearch.sandbox.check import check_program
from monsearch.sandbox.examples.seed_monitor import SEED_MONITOR
from monsearch.sandbox.restricted import build_globals, load_program

BODY = "    return 1.0\n"


@pytest.mark.parametrize(
    ("source", "line", "col", "fragment"),
    [
        # no score at all
        ("", 1, 1, "the program is empty"),
        ("# only a comment\n\n", 1, 1, "the program is empty"),
        ("def Score(traj):\n" + BODY, 1, 1, "no score function"),
        ("x = 1\n\ndef helper(t):\n" + BODY, 1, 1, "(functions defined: helper)"),
        # score that is not a function
        ("score = 1\n", 1, 1, "score must be a function"),
        ("x = 2\nscore = 'high'\n", 2, 1, "the constant 'high'"),
        ("score = [1, 2]\n", 1, 1, "a list"),
        ("def score(traj):\n" + BODY + "score = 0.5\n", 3, 1, "score must be a function"),
        # score that cannot be called as score(traj)
        ("def score(traj, extra):\n" + BODY, 1, 17, "give 'extra' a default"),
        ("def score(a, b, c=1):\n" + BODY, 1, 14, "needs 2 arguments"),
        ("def score():\n" + BODY, 1, 1, "takes no argument"),
        ("def score(traj, *, mode):\n" + BODY, 1, 20, "keyword-only argument 'mode'"),
        ("score = lambda: 1.0\n", 1, 1, "takes no argument"),
        ("def two(a, b):\n" + BODY + "score = two\n", 1, 12, "score (= two) needs 2"),
        # PARAMS a tuner cannot use
        ('PARAMS = {"w": "high"}\ndef score(t):\n' + BODY, 1, 16, "PARAMS['w'] must be a finite"),
        ('PARAMS = {"w": [1]}\ndef score(t):\n' + BODY, 1, 16, "got [1]"),
        ('PARAMS = {"w": True}\ndef score(t):\n' + BODY, 1, 16, "a boolean True"),
        ('PARAMS = {"w": 1e999}\ndef score(t):\n' + BODY, 1, 16, "non-finite"),
        ('PARAMS = {"w": float("inf")}\ndef score(t):\n' + BODY, 1, 16, "float('inf')"),
        ('PARAMS = {"w": 2 * 3}\ndef score(t):\n' + BODY, 1, 16, "got 2 * 3"),
        ('PARAMS = {"w": 1e400000 - 1}\ndef score(t):\n' + BODY, 1, 16, "PARAMS['w']"),
        ("PARAMS = {1: 1.0}\ndef score(t):\n" + BODY, 1, 11, "keys must be string literals"),
        ('PARAMS = {"a": 1, "a": 2}\ndef score(t):\n' + BODY, 1, 19, "given twice"),
        ("BASE = {}\nPARAMS = {**BASE}\ndef score(t):\n" + BODY, 2, 13, "cannot unpack"),
        ("PARAMS = dict(w=1.0)\ndef score(t):\n" + BODY, 1, 10, "must be a dict literal"),
        ("PARAMS = [1.0]\ndef score(t):\n" + BODY, 1, 10, "must be a dict literal"),
        (
            'PARAMS = {"w": 1}\nPARAMS = {"w": 2}\ndef score(t):\n' + BODY,
            2,
            1,
            "assigned again (first at line 1)",
        ),
        ("PARAMS, X = {}, 1\ndef score(t):\n" + BODY, 1, 1, "assigned once as a dict literal"),
    ],
)
def test_each_violation_has_its_line_and_column(source, line, col, fragment):
    report = check_program(source)
    assert not report.ok and report.code is None
    hits = [e for e in report.errors if fragment in e.message]
    assert hits, report.message
    assert (hits[0].line, hits[0].col) == (line, col), report.message


@pytest.mark.parametrize(
    "source",
    [
        SEED_MONITOR,
        "def score(traj):\n" + BODY,
        "def score(traj, weight=2.0, *, mode='x'):\n" + BODY,
        "def score(*args):\n" + BODY,
        "def score(traj, /):\n" + BODY,
        "score = lambda traj: 1.0\n",
        "def one(traj):\n" + BODY + "score = one\n",
        "def make():\n    return None\nscore = make()\n",  # decided at run time
        'PARAMS = {"w": -0.5, "n": 3, "z": +1}\nPARAMS["w"] = 1.0\ndef score(t):\n' + BODY,
        "if True:\n    def score(traj):\n" + "    " + BODY,
    ],
)
def test_programs_the_sandbox_can_run_pass(source):
    report = check_program(source)
    assert report.ok, report.message
    assert report.code is not None


def test_the_checked_programs_really_fail_at_run_time():
    """What the check refuses is what the sandbox cannot run: the reason for each check."""
    for source in ("", "score = 1\n", "def score(traj, extra):\n" + BODY):
        report = check_program(source)
        assert not report.ok
    # Compiled without the check (the old `sandbox check`), these fail only when run.
    from monsearch.sandbox.restricted import ProgramError, compile_program

    for source in ("", "score = 1\n"):
        with pytest.raises(ProgramError, match="score"):
            load_program(compile_program(source).code, build_globals())
    two = load_program(compile_program("def score(traj, extra):\n" + BODY).code, build_globals())
    with pytest.raises(TypeError, match="extra"):
        two({})


def test_compile_errors_and_static_violations_are_reported_together():
    source = "import os\n\nPARAMS = {'w': 'x'}\n\ndef score(a, b):\n" + BODY
    report = check_program(source)
    assert [(e.line, e.col) for e in report.errors] == [(1, 1), (3, 16), (5, 14)]
    assert "imports are not allowed" in report.errors[0].message


def test_params_of_a_passing_program_are_its_numbers():
    report = check_program('PARAMS = {"w": 2.0, "n": -3}\ndef score(t):\n' + BODY)
    assert report.ok and report.params == {"w": 2.0, "n": -3.0}


def _check_cli(path: Path, *extra: str):
    return CliRunner().invoke(cli, ["sandbox", "check", str(path), *extra])


def test_cli_check_reports_each_violation_with_line_and_column(tmp_path: Path) -> None:
    prog = tmp_path / "p.py"
    prog.write_text('PARAMS = {"w": "high", "b": False}\n\ndef score(traj, extra):\n' + BODY)
    result = _check_cli(prog, "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False
    assert [(e["line"], e["column"]) for e in report["errors"]] == [(1, 16), (1, 29), (3, 17)]
    result = _check_cli(prog)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{prog}:1:16: PARAMS['w']")
    assert lines[2].startswith(f"{prog}:3:17: score needs 2 arguments")


def test_cli_check_refuses_an_empty_file(tmp_path: Path) -> None:
    prog = tmp_path / "empty.py"
    prog.write_text("")
    result = _check_cli(prog)
    assert result.exit_code == 1
    assert f"{prog}:1:1: the program is empty" in result.stdout
