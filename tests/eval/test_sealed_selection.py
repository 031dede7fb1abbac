"""Selection on test: one run's programs are not tried on its sealed test in turn
(issue 33, class 6).

Opening every candidate of a run with ``--program`` gave each an exit 0, and no report
said the others had been opened: a user who then kept the best by test BAUC selected
on test without a word. Now the second and later programs of one run on one corpus
are refused unless ``--force``, and every report (terminal, JSON, Markdown, HTML)
names the programs of the run already opened there. Runs are contract runs of two
real programs (``sealed_support.make_run``); the sealed splits are scored by the fast
stand-in scorer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import run_main
from sealed_support import fake_scorer, make_run, shared_corpus


@pytest.fixture(autouse=True)
def fast_sealed_test(monkeypatch):
    monkeypatch.setattr(
        "monsearch.eval.sealed.sandbox_scorer", lambda config, opts, progress=None: fake_scorer
    )
    monkeypatch.setattr("monsearch.eval.sealed.ESCALATION_GRID", 20)


@pytest.fixture
def run(tmp_path, ledger_file):
    return make_run(tmp_path / "runs", shared_corpus())  # c0000 selected, c0001 another


def _newest(run) -> Path:
    return sorted((run.dir / "test").iterdir())[-1]


def test_a_second_program_of_the_run_is_refused_without_force(run, capsys):
    code, out, err = run_main(capsys, "test", str(run.dir))
    assert code == 0, err
    code, out, err = run_main(capsys, "test", str(run.dir), "--program", "c0001")
    assert code == 3, (code, err)
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "c0000" in err and "--force" in err and "selecting on test" in err
    assert len(list((run.dir / "test").iterdir())) == 1  # nothing opened


def test_a_program_first_then_the_selected_strategy_is_refused_too(run, capsys):
    code, _, err = run_main(capsys, "test", str(run.dir), "--program", "c0001")
    assert code == 0, err
    code, _, err = run_main(capsys, "test", str(run.dir))
    assert code == 3 and "c0001" in err and "selecting on test" in err


def test_every_report_lists_the_programs_already_opened(run, capsys):
    code, out, err = run_main(capsys, "test", str(run.dir))
    assert code == 0, err
    assert "other programs" not in out
    first = json.loads((_newest(run) / "report.json").read_text())
    assert first["ledger"]["other_programs"] == []

    code, out, err = run_main(capsys, "test", str(run.dir), "--program", "c0001", "--force")
    assert code == 0, err
    folder = _newest(run)
    report = json.loads((folder / "report.json").read_text())
    (other,) = report["ledger"]["other_programs"]
    assert other["program_id"] == "c0000" and other["opened_at"]
    assert report["reopened"]
    line = next(ln for ln in out.splitlines() if "other programs" in ln)
    assert "c0000" in line
    for name in ("report.md", "report.html"):
        text = (folder / name).read_text()
        assert "other programs of this run already opened on this corpus" in text.lower()
        assert "c0000" in text

    # JSON on stdout says it too.
    code, out, err = run_main(capsys, "test", str(run.dir), "--force", "--json")
    assert code == 0, err
    ids = [o["program_id"] for o in json.loads(out)["ledger"]["other_programs"]]
    assert ids == ["c0001"]  # the selected strategy's own earlier opening is not "other"
