"""The sealed test cannot be reopened unmarked (issue 25, item 4).

Three ways used to reopen ``monsearch test`` with no mark: one added newline in the
program, a fresh ``MONSEARCH_LEDGER`` (the old report was overwritten), and
``--program`` on each candidate in turn. Each now is refused or marked, and every
report says which opening of its run it is. Runs are copies of the session's real
run (``small_run``) or contract runs (``sealed_support``); sealed splits are scored
by the fast stand-in scorer (the ledger does not depend on the scores).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import run_main
from run_forgery import copy_run
from sealed_support import fake_scorer, make_run, shared_corpus

from monsearch.api.sealed_test import run_sealed_test
from monsearch.eval.sealed_ledger import Ledger, LedgerKey, SealedTestRefused
from monsearch.sandbox.examples.seed_monitor import SEED_MONITOR
from monsearch.search.lineage import LineageStore
from monsearch.search.program_key import program_hash


@pytest.fixture(autouse=True)
def fast_sealed_test(monkeypatch):
    monkeypatch.setattr(
        "monsearch.eval.sealed.sandbox_scorer", lambda config, opts, progress=None: fake_scorer
    )
    monkeypatch.setattr("monsearch.eval.sealed.ESCALATION_GRID", 20)


@pytest.fixture
def run_copy(small_run, tmp_path):
    return copy_run(small_run[0], tmp_path / "runs" / "copy")


def _test(capsys, run: Path, *args: str) -> tuple[int, str, str]:
    return run_main(capsys, "test", str(run), *args)


def _report(folder: Path) -> dict:
    return json.loads((folder / "report.json").read_text())


# --------------------------------------------------------------------------- the key


def test_the_program_hash_ignores_what_is_not_the_program():
    base = program_hash(SEED_MONITOR)
    assert program_hash(SEED_MONITOR + "\n") == base
    assert program_hash("# a comment\n\n" + SEED_MONITOR.replace("\n\n", "\n\n\n")) == base
    assert program_hash('"""A docstring."""\n' + SEED_MONITOR) == base
    assert program_hash(SEED_MONITOR.replace('"bias": 0.0', '"bias": 0.00')) == base
    assert program_hash(SEED_MONITOR.replace('"w_delete"', "'w_delete'")) == base
    # What the parser keeps is a change: a constant, a name, a statement.
    assert program_hash(SEED_MONITOR.replace('"bias": 0.0', '"bias": 0.5')) != base
    assert program_hash(SEED_MONITOR.replace('"bias": 0.0', '"bias": 0')) != base
    assert program_hash(SEED_MONITOR + "\nx = 1\n") != base
    assert program_hash("def score(t):\n    return 1\n") != program_hash(
        "def score(t):\n    return True\n"
    )


def test_a_copy_with_one_added_newline_is_the_same_sealed_test(tmp_path, ledger_file):
    # Two runs; the second froze the first's program with one newline added (another
    # strategy hash). Testing it after the first is refused like a second test.
    corpus = shared_corpus()
    first = make_run(tmp_path / "a", corpus, sources=(SEED_MONITOR,))
    second = make_run(tmp_path / "b", corpus, sources=(SEED_MONITOR + "\n",))
    assert first.selected().strategy_hash != second.selected().strategy_hash
    run_sealed_test(first, scorer=fake_scorer)
    with pytest.raises(SealedTestRefused, match="already opened") as refused:
        run_sealed_test(second, scorer=fake_scorer)
    assert refused.value.exit_code == 3
    again = run_sealed_test(second, scorer=fake_scorer, force=True)
    assert again["reopened"] and again["ledger"]["opening"] == 2


def test_entries_written_before_the_normalised_hash_still_match(tmp_path):
    path = tmp_path / "ledger.json"
    old = {"strategy_hash": "s" * 64, "content_hash": "c" * 64, "assignment_hash": "a",
           "run_id": "r", "opened_at": "2026-01-01T00:00:00Z"}  # fmt: skip
    path.write_text(json.dumps({"format": "monsearch-sealed-ledger", "version": 1,
                                "entries": [old]}))  # fmt: skip
    with pytest.raises(SealedTestRefused):
        Ledger(path).check(LedgerKey("s" * 64, "c" * 64, "a", "p" * 64))


# --------------------------------------------------------------------------- a fresh ledger


def test_a_fresh_ledger_neither_overwrites_nor_unmarks(run_copy, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("MONSEARCH_LEDGER", str(tmp_path / "first.json"))
    code, out, err = _test(capsys, run_copy)
    assert code == 0, err
    assert "1st opening of run copy's sealed test" in out and "RE-OPENED" not in out
    first = run_copy / "test" / "001"
    kept = {p.name: p.read_bytes() for p in first.iterdir()}
    assert not _report(first)["reopened"]

    monkeypatch.setenv("MONSEARCH_LEDGER", str(tmp_path / "fresh.json"))
    code, out, err = _test(capsys, run_copy)
    assert code == 0, err
    assert {p.name: p.read_bytes() for p in first.iterdir()} == kept  # never overwritten
    second = _report(run_copy / "test" / "002")
    assert second["reopened"] and second["ledger"]["run_opening"] == 2
    assert "holds 1 earlier report" in second["ledger"]["reasons"][0]
    assert "RE-OPENED" in out and "2nd opening of run copy's sealed test" in out
    assert "RE-OPENED" in (run_copy / "test" / "002" / "report.html").read_text()
    assert "opening 2 of this run's sealed test" in (run_copy / "test" / "002" / "report.md").read_text()


def test_a_report_of_the_old_layout_counts_as_an_earlier_opening(run_copy, capsys, ledger_file):
    (run_copy / "test").mkdir()
    (run_copy / "test" / "report.json").write_text("{}")
    code, out, err = _test(capsys, run_copy)
    assert code == 0, err
    report = _report(run_copy / "test" / "002")
    assert report["reopened"] and report["ledger"]["run_opening"] == 2
    assert (run_copy / "test" / "report.json").read_text() == "{}"


# --------------------------------------------------------------------------- --program


def test_every_program_opening_counts_against_the_run(
    small_run, run_copy, capsys, tmp_path, ledger_file
):
    with LineageStore(run_copy / "lineage.sqlite", readonly=True) as store:
        programs = []
        for r in store.records():
            if r.ok and r.source and program_hash(r.source) not in {p for _, p in programs}:
                programs.append((r.id, program_hash(r.source)))
    programs = programs[:5]
    assert len(programs) == 5
    for n, (cid, _) in enumerate(programs, start=1):
        if n > 1:  # another program of the run on this corpus: selecting on test (issue 33)
            code, out, err = _test(capsys, run_copy, "--program", cid)
            assert code == 3 and "selecting on test" in err, err
        code, out, err = _test(capsys, run_copy, "--program", cid, *(["--force"] * (n > 1)))
        assert code == 0, err  # with --force it is opened...
        report = _report(sorted((run_copy / "test").iterdir())[-1])
        assert report["strategy"]["id"] == cid
        assert report["ledger"]["run_opening"] == n  # ...but counted
        assert report["reopened"] == (n > 1)
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(n, "th")
        assert f"{n}{suffix} opening of run copy's sealed test" in out
        if n > 1:
            assert "RE-OPENED" in out and "already opened with other programs" in out
    # A copy of the run folder is the same run (its uid): the count goes on.
    elsewhere = copy_run(small_run[0], tmp_path / "moved" / "renamed")
    code, out, err = _test(capsys, elsewhere, "--force")
    assert code == 0, err
    report = _report(elsewhere / "test" / "006")
    assert report["reopened"] and report["ledger"]["run_opening"] == 6
    assert "6th opening of run renamed's sealed test" in out


def test_ledger_counts_openings_per_run(tmp_path):
    from monsearch.eval.sealed_ledger import RunRef

    ledger = Ledger(tmp_path / "ledger.json")
    run = RunRef("r", "uid-1")
    e1, _ = ledger.record(LedgerKey("a" * 64, "c", "x", "pa"), {"program_id": "c1"}, run=run)
    with pytest.raises(SealedTestRefused, match="selecting on test"):
        ledger.record(LedgerKey("b" * 64, "c", "x", "pb"), {"program_id": "c2"}, run=run)
    e2, _ = ledger.record(
        LedgerKey("b" * 64, "c", "x", "pb"), {"program_id": "c2"}, run=run, force=True
    )
    assert [o["program_id"] for o in e2["other_programs"]] == ["c1"]
    other, _ = ledger.record(LedgerKey("d" * 64, "c", "x", "pd"), {}, run=RunRef("s", "uid-2"))
    assert (e1["run_opening"], e1["reopened"]) == (1, False)
    assert (e2["run_opening"], e2["reopened"]) == (2, True)
    assert (other["run_opening"], other["reopened"]) == (1, False)
    e3, _ = ledger.record(
        LedgerKey("e" * 64, "c", "x", "pe"), {}, run=run, earlier_reports=7, force=True
    )
    assert e3["run_opening"] == 8 and "holds 7 earlier reports" in e3["reasons"][-1]


# --------------------------------------------------------------------------- --out


def test_out_never_replaces_a_report_and_the_run_keeps_one(run_copy, capsys, tmp_path, ledger_file):
    out = tmp_path / "out"
    code, _, err = _test(capsys, run_copy, "--out", str(out))
    assert code == 0, err
    assert (out / "report.html").is_file()
    assert _report(run_copy / "test" / "001") == _report(out)  # the run's record of it
    code, _, err = _test(capsys, run_copy, "--out", str(out), "--force")
    assert code == 2 and "already holds a sealed-test report" in err
    assert err.count("\n") == 1
    assert not (run_copy / "test" / "002").exists()  # refused before opening
