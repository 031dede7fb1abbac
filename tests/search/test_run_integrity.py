"""Run folders are verified, not trusted (issue 25, item 3).

Every case forges a copy of the session's real run (``small_run``) the way a red
team would (:mod:`run_forgery`) and checks that ``monsearch test``, ``export``,
``score --monitor RUN`` and ``evolve --resume`` refuse it with exit 2 and one line
naming what differs, or, for ``score``, never import what was planted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import run_main
from paths import FIXTURES
from run_fixtures import evolve
from run_forgery import (
    BACKDOOR,
    copy_run,
    edit_frozen_record,
    edit_source,
    make_unchained,
    rechain,
    rewrite_selected,
    selected,
    sql,
)
from sealed_support import fake_scorer

from monsearch.search.lineage import LineageStore

ATIF_FILE = FIXTURES / "atif" / "good" / "v14_labelled.json"


@pytest.fixture(autouse=True)
def fast_sealed_test(monkeypatch):
    # The refusals come before any scoring; the fake scorer keeps accepted tests fast.
    monkeypatch.setattr(
        "monsearch.eval.sealed.sandbox_scorer", lambda config, opts, progress=None: fake_scorer
    )
    monkeypatch.setattr("monsearch.eval.sealed.ESCALATION_GRID", 20)


@pytest.fixture
def run_copy(small_run, tmp_path):
    return copy_run(small_run[0], tmp_path / "runs" / "forged")


def _refused(capsys, *args: str) -> str:
    code, out, err = run_main(capsys, *args)
    assert code == 2, (code, out, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def _test(capsys, run: Path, *args: str) -> str:
    return _refused(capsys, "test", str(run), *args)


def _export(capsys, run: Path, tmp_path: Path, *args: str) -> str:
    out = tmp_path / "plugin"
    err = _refused(capsys, "export", str(run), "--out", str(out), "--no-verify", *args)
    assert not out.exists()
    return err


def _score(run: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "monsearch", "score", "--monitor", str(run), str(ATIF_FILE),
         "--json"],
        capture_output=True, text=True, cwd=cwd, check=False,
    )  # fmt: skip


def _candidates(run: Path):
    with LineageStore(run / "lineage.sqlite", readonly=True) as store:
        return store.records()


# --------------------------------------------------------------------------- selected.json


def test_a_rewritten_selected_json_with_its_hash_recomputed_is_refused(
    run_copy, capsys, tmp_path, ledger_file
):
    py_only = copy_run(run_copy, tmp_path / "py-only")
    backdoored = selected(run_copy)["source"] + BACKDOOR
    rewrite_selected(run_copy, backdoored)
    err = _test(capsys, run_copy)
    assert "selected.json differs from the strategy" in err and "source" in err
    assert not ledger_file.exists()  # refused before anything was opened
    assert "selected.json differs" in _export(capsys, run_copy, tmp_path)
    # selected.py alone, too.
    (py_only / "selected.py").write_text(backdoored)
    assert "selected.py differs" in _test(capsys, py_only)


def test_a_freezing_pointed_at_another_program_is_refused(run_copy, capsys, tmp_path):
    # lineage.sqlite's freezing record, selected.json and selected.py all agree on a
    # backdoored program; only the chain digests were left alone.
    backdoored = selected(run_copy)["source"] + BACKDOOR
    edit_frozen_record(run_copy, backdoored)
    rewrite_selected(run_copy, backdoored)
    err = _export(capsys, run_copy, tmp_path)
    assert "the freezing of strategy" in err and "chain entry" in err


# --------------------------------------------------------------------------- lineage.sqlite


def test_a_backdoored_source_edited_into_the_lineage_is_refused(
    run_copy, capsys, tmp_path, ledger_file
):
    chosen = selected(run_copy)["id"]
    edit_source(run_copy, chosen, selected(run_copy)["source"] + BACKDOOR)
    err = _export(capsys, run_copy, tmp_path)
    assert f"candidate {chosen}" in err and "lineage.sqlite" in err and "edited" in err
    assert f"candidate {chosen}" in _test(capsys, run_copy)
    proc = _score(run_copy, tmp_path)
    assert proc.returncode == 2 and f"candidate {chosen}" in proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stdout == ""
    assert not ledger_file.exists()


def test_a_program_of_the_lineage_is_checked_too(run_copy, capsys, tmp_path):
    other = next(r for r in _candidates(run_copy) if r.ok and r.id != selected(run_copy)["id"])
    edit_source(run_copy, other.id, other.source + BACKDOOR)
    assert f"candidate {other.id}" in _export(capsys, run_copy, tmp_path, "--program", other.id)


def test_inserted_and_deleted_rows_are_refused(run_copy, capsys, tmp_path):
    deleted = copy_run(run_copy, tmp_path / "deleted")
    sql(deleted, "DELETE FROM candidates WHERE seq = 3")
    err = _export(capsys, deleted, tmp_path)
    assert "seq 3" in err and "its row is gone (deleted)" in err
    sql(run_copy, "INSERT INTO candidates SELECT 99, 'c00099', parent_ids, generation, island, "
        "proposer, operator, description, source, source_hash, diff, status, sandbox_status, "
        "0.99, fitness_json, artifacts_json, spend_json, timings_json FROM candidates "
        "WHERE seq = 0")  # fmt: skip
    err = _export(capsys, run_copy, tmp_path)
    assert "candidate c00099 (seq 99) has no chain entry" in err


def test_a_truncated_lineage_is_refused(run_copy, capsys, tmp_path):
    # The last candidate and its chain entry removed together: the head no longer matches.
    last = max(r.seq for r in _candidates(run_copy))
    sql(run_copy, "DELETE FROM candidates WHERE seq = ?", last)
    sql(run_copy, "DELETE FROM chain WHERE kind = 'candidate' AND seq = ?", last)
    sql(run_copy, "DELETE FROM chain WHERE pos > (SELECT MAX(pos) FROM chain WHERE seq < ?)",
        last)  # fmt: skip
    assert "does not match its chain" in _export(capsys, run_copy, tmp_path)


def test_config_json_must_agree_with_the_freezing(run_copy, capsys, tmp_path, ledger_file):
    config = json.loads((run_copy / "config.json").read_text())
    config["evaluation"]["b_lo"] = 0.05
    (run_copy / "config.json").write_text(json.dumps(config))
    err = _test(capsys, run_copy)
    assert "config.json's evaluation options differ" in err and "b_lo" in err


def test_a_malformed_evaluation_record_is_refused_naming_it(run_copy, capsys, tmp_path):
    config = json.loads((run_copy / "config.json").read_text())
    recorded = config["evaluation"]
    config["evaluation"] = ["b_lo", 0.05]
    (run_copy / "config.json").write_text(json.dumps(config))
    err = _export(capsys, run_copy, tmp_path)
    assert "config.json: evaluation: expected an object, got list" in err
    config["evaluation"] = {**recorded, "cells": 5}
    (run_copy / "config.json").write_text(json.dumps(config))
    assert "evaluation.cells: expected a list" in _test(capsys, run_copy)


# --------------------------------------------------------------------------- --resume


def test_resume_refuses_a_forged_row_and_changes_nothing(run_copy, small_corpus):
    weak = min((r for r in _candidates(run_copy) if r.ok), key=lambda r: r.fitness)
    forged = {**(weak.fitness_json or {}), "fitness": 0.99}
    sql(run_copy, "UPDATE candidates SET fitness = 0.99, fitness_json = ? WHERE id = ?",
        json.dumps(forged), weak.id)  # fmt: skip
    files = ("config.json", "lineage.sqlite", "selected.json", "selected.py")
    before = {f: (run_copy / f).read_bytes() for f in files}
    proc = evolve(run_copy.parent, small_corpus, "--resume", str(run_copy), budget=13,
                  check=False)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert f"candidate {weak.id}" in proc.stderr and "edited" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert {f: (run_copy / f).read_bytes() for f in files} == before


# --------------------------------------------------------------------------- score --monitor


def test_score_never_imports_code_planted_in_a_run_folder(run_copy, small_run, tmp_path):
    marker = tmp_path / "planted-code-ran"
    package = run_copy / "src" / "evil"
    package.mkdir(parents=True)
    code = f"open({str(marker)!r}, 'w').write('ran')\n"
    (package / "__init__.py").write_text(code)
    (package / "_meta.py").write_text(code + "PROGRAM = ''\nMONITOR = {}\n")
    proc = _score(run_copy, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    # The scores are the run's own strategy's, built by monsearch.
    clean = _score(small_run[0], tmp_path)
    assert clean.returncode == 0
    assert json.loads(proc.stdout)["score"] == json.loads(clean.stdout)["score"]


# --------------------------------------------------------------------------- wholesale


def test_a_run_rewritten_wholesale_is_caught_by_the_ledger(run_copy, capsys, tmp_path):
    # Source, freezing, selected files and the whole chain rewritten consistently: the
    # folder alone cannot tell. The user's ledger (the session's) recorded the run's
    # chain head when it froze, and the forged chain does not extend it.
    chosen = selected(run_copy)["id"]
    backdoored = selected(run_copy)["source"] + BACKDOOR
    edit_source(run_copy, chosen, backdoored)
    edit_frozen_record(run_copy, backdoored)
    rewrite_selected(run_copy, backdoored)
    rechain(run_copy)
    err = _export(capsys, run_copy, tmp_path)
    assert "rewritten after the fact" in err and "ledger" in err
    assert "rewritten after the fact" in _test(capsys, run_copy)


def test_a_rewrite_sealed_with_the_users_own_key_passes(run_copy, capsys, tmp_path, ledger_file):
    # The documented limit: whoever holds the run key (the user, or anyone who can read
    # the user's data folder) can seal anything; a ledger that never saw the run has
    # nothing else to compare with. Without the key the same rewrite is refused
    # (tests/search/test_run_identity.py).
    backdoored = selected(run_copy)["source"] + BACKDOOR
    edit_source(run_copy, selected(run_copy)["id"], backdoored)
    edit_frozen_record(run_copy, backdoored)
    rewrite_selected(run_copy, backdoored)
    rechain(run_copy)
    code, _, err = run_main(
        capsys, "export", str(run_copy), "--out", str(tmp_path / "p"), "--no-verify"
    )
    assert code == 2 and "seal does not match" in err
    with LineageStore(run_copy / "lineage.sqlite") as store:  # the user's key
        store.reseal()
    code, _, err = run_main(
        capsys, "export", str(run_copy), "--out", str(tmp_path / "p"), "--no-verify"
    )
    assert code == 0, err


# --------------------------------------------------------------------------- old runs


def test_a_run_without_a_chain_is_refused_but_still_shown(run_copy, capsys, tmp_path, small_corpus):
    make_unchained(run_copy)
    err = _export(capsys, run_copy, tmp_path)
    assert "made before runs carried an integrity chain" in err
    assert "integrity chain" in _test(capsys, run_copy)
    proc = evolve(run_copy.parent, small_corpus, "--resume", str(run_copy), budget=13,
                  check=False)  # fmt: skip
    assert proc.returncode == 2 and "integrity chain" in proc.stderr
    code, out, err = run_main(capsys, "show", str(run_copy), "selected")
    assert code == 0, err


def test_an_untouched_copy_is_accepted(run_copy, capsys, tmp_path, ledger_file):
    code, out, err = run_main(capsys, "test", str(run_copy))
    assert code == 0, err
    code, out, err = run_main(
        capsys, "export", str(run_copy), "--out", str(tmp_path / "p"), "--no-verify"
    )
    assert code == 0, err


def test_two_copies_resumed_apart_are_both_accepted(small_run, tmp_path, capsys, small_corpus):
    # A copy of a run shares its uid; resumed apart, the two histories diverge after the
    # copy. Neither is a rewrite: each folder's own recorded growth vouches for it.
    first = copy_run(small_run[0], tmp_path / "runs" / "first")
    second = copy_run(small_run[0], tmp_path / "runs" / "second")
    evolve(second.parent, small_corpus, "--resume", str(second), budget=14)
    evolve(first.parent, small_corpus, "--resume", str(first), budget=15)
    for run in (first, second):
        code, _, err = run_main(
            capsys, "export", str(run), "--out", str(tmp_path / f"p-{run.name}"), "--no-verify"
        )
        assert code == 0, err


def test_a_run_rewritten_after_its_sealed_test_is_caught(run_copy, capsys, tmp_path, ledger_file):
    # A ledger that never saw the run freeze still saw its sealed test, and the chain head.
    code, _, err = run_main(capsys, "test", str(run_copy))
    assert code == 0, err
    other = next(r for r in _candidates(run_copy) if r.ok and r.id != selected(run_copy)["id"])
    edit_source(run_copy, other.id, other.source + BACKDOOR)
    rechain(run_copy)
    err = _export(capsys, run_copy, tmp_path, "--program", other.id)
    assert "rewritten after the fact" in err and "sealed-tested" in err
