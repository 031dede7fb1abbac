"""What identifies a run cannot be chosen by whoever edits its folder (issue 33, class 2).

A run folder used to vouch for itself: the ledger was looked up by the run id stored in
the folder, so a backdoored strategy under a new run id with the chain recomputed was
exported, and so was a forged candidate appended and frozen on top of the real history.
Now the chain's head carries a seal made with a key kept outside the folder (the user's
run key), and the ledger binds each folder it saw to the run it held. Runs here are real
ones: copies of the session's evolve run (``small_run``) and contract runs
(``sealed_support.make_run``), forged with the public recipe (:mod:`run_forgery`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli_support import run_main
from run_forgery import (
    BACKDOOR,
    append_forged_freezing,
    backdoor_everywhere,
    copy_run,
    new_run_uid,
    selected,
    unseal,
)
from sealed_support import OTHER_MONITOR, fake_scorer, make_run, shared_corpus

from monsearch.sandbox.examples.seed_monitor import SEED_MONITOR


@pytest.fixture(autouse=True)
def fast_sealed_test(monkeypatch):
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


def _export(capsys, run: Path, tmp_path: Path) -> tuple[int, str]:
    out = tmp_path / "plugin"
    code, _, err = run_main(capsys, "export", str(run), "--out", str(out), "--no-verify")
    if code != 0:
        assert not out.exists()
    else:
        shutil.rmtree(out)
    return code, err


# --------------------------------------------------------------------------- forgeries


def test_a_backdoor_under_a_new_run_id_with_the_chain_recomputed_is_refused(
    run_copy, capsys, tmp_path
):
    # The case: the ledger saw the run under its old id; the folder now names
    # another, and nothing about the new id was ever recorded.
    new_run_uid(run_copy)
    backdoor_everywhere(run_copy, selected(run_copy)["source"] + BACKDOOR)
    code, err = _export(capsys, run_copy, tmp_path)
    assert code == 2, err
    assert "seal" in err and "rewritten" in err and err.count("\n") == 1
    assert _refused(capsys, "test", str(run_copy)) == err


def test_the_same_forgery_in_a_folder_the_ledger_saw_names_the_run_it_recorded(
    tmp_path, capsys, ledger_file
):
    run = make_run(tmp_path / "runs", shared_corpus())  # frozen here: the ledger saw it
    new_run_uid(run.dir)
    backdoor_everywhere(run.dir, SEED_MONITOR + BACKDOOR)
    code, err = _export(capsys, run.dir, tmp_path)
    assert code == 2
    assert "the ledger recorded" in err and "f" * 12 in err and "another run" in err


def test_a_forged_candidate_appended_and_frozen_is_refused(run_copy, capsys, tmp_path):
    # The chain still extends every head the ledger recorded: only the seal tells.
    forged = append_forged_freezing(run_copy, selected(run_copy)["source"] + BACKDOOR)
    assert selected(run_copy)["id"] == forged
    code, err = _export(capsys, run_copy, tmp_path)
    assert code == 2, err
    assert "seal does not match" in err and "rewritten" in err
    code, err = run_main(capsys, "test", str(run_copy))[0::2]
    assert code == 2 and "seal does not match" in err


def test_a_wholesale_rewrite_is_refused_without_any_ledger(run_copy, capsys, tmp_path, ledger_file):
    # The limit earlier documented ("a ledger that never saw the run gives nothing to
    # compare with") is gone: the seal is checked against the user's key, not the ledger.
    backdoor_everywhere(run_copy, selected(run_copy)["source"] + BACKDOOR)
    code, err = _export(capsys, run_copy, tmp_path)
    assert code == 2 and "seal does not match" in err


def test_another_run_moved_into_a_folder_the_ledger_saw_is_refused(tmp_path, capsys, ledger_file):
    # Both runs are genuine and sealed with this user's key; the folder of the first
    # now holds the second (a swap), which the ledger's record of the folder tells.
    corpus = shared_corpus()
    first = make_run(tmp_path / "a", corpus, sources=(SEED_MONITOR,))
    second = make_run(tmp_path / "b", corpus, sources=(OTHER_MONITOR,))
    shutil.rmtree(first.dir)
    shutil.copytree(second.dir, first.dir)
    code, err = _export(capsys, first.dir, tmp_path)
    assert code == 2 and "another run" in err and "the ledger recorded" in err
    code, err = _export(capsys, second.dir, tmp_path)
    assert code == 0, err


def test_an_untouched_copy_elsewhere_is_still_the_run(run_copy, capsys, tmp_path, ledger_file):
    code, err = _export(capsys, run_copy, tmp_path)
    assert code == 0, err


# --------------------------------------------------------------------------- unsealed runs


def test_a_run_without_a_seal_is_refused_until_trusted(run_copy, capsys, tmp_path, ledger_file):
    # As a run made before runs were sealed reads, on a ledger that never saw it sealed.
    unseal(run_copy)
    err = _refused(capsys, "export", str(run_copy), "--out", str(tmp_path / "p"), "--no-verify")
    assert "no seal" in err and "monsearch trust" in err
    assert "no seal" in _refused(capsys, "test", str(run_copy))
    code, out, err = run_main(capsys, "trust", str(run_copy))
    assert code == 0, err
    assert "no seal" in out and "sealed with your run key" in out
    code, err = _export(capsys, run_copy, tmp_path)
    assert code == 0, err


def test_a_run_sealed_under_another_key_is_refused_until_trusted(
    tmp_path, capsys, ledger_file, monkeypatch
):
    monkeypatch.setenv("MONSEARCH_RUN_KEY", str(tmp_path / "their-key"))
    run = make_run(tmp_path / "theirs", shared_corpus(), sources=(SEED_MONITOR,))
    monkeypatch.setenv("MONSEARCH_RUN_KEY", str(tmp_path / "my-key"))
    err = _refused(capsys, "test", str(run.dir))
    assert "another monsearch key" in err and "monsearch trust" in err
    code, out, err = run_main(capsys, "trust", str(run.dir))
    assert code == 0, err
    code, out, err = run_main(capsys, "test", str(run.dir))
    assert code == 0, err


def test_trust_does_not_adopt_a_run_whose_seal_was_stripped(run_copy, capsys):
    # The session's ledger saw this run sealed with this user's key when it froze: a
    # missing seal now is a forgery made to look old (here a freezing appended on top
    # of the real history, which still extends every head the ledger recorded).
    append_forged_freezing(run_copy, selected(run_copy)["source"] + BACKDOOR)
    unseal(run_copy)
    assert "no seal" in _refused(capsys, "export", str(run_copy), "--out", "p", "--no-verify")
    err = _refused(capsys, "trust", str(run_copy))
    assert "sealed with your run key" in err and "seal is now missing" in err


def test_trust_does_not_adopt_a_rewritten_run_of_this_user(run_copy, capsys):
    append_forged_freezing(run_copy, selected(run_copy)["source"] + BACKDOOR)
    err = _refused(capsys, "trust", str(run_copy))
    assert "seal does not match" in err


def test_trust_still_checks_the_chain(run_copy, capsys):
    from run_forgery import edit_source

    unseal(run_copy)
    edit_source(run_copy, selected(run_copy)["id"], selected(run_copy)["source"] + BACKDOOR)
    err = _refused(capsys, "trust", str(run_copy))
    assert "edited" in err
