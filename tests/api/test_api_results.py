"""``monsearch.test`` and ``monsearch.export`` return typed records, and their errors
name the library's keyword arguments, not the command line's options.

The README's Python example, run after the quick start, sealed-tests a strategy the
quick start already tested: the refusal must say ``force=True`` (what a Python caller
writes), while ``monsearch test`` keeps saying ``--force``.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from cli_support import run_main

import monsearch
from monsearch.eval.sealed_ledger import SealedTestRefused
from monsearch.export import ExportError


@pytest.fixture
def run_dir(small_run, tmp_path) -> Path:
    # A copy: a sealed test keeps its report in the run folder.
    target = tmp_path / "runs" / "small"
    shutil.copytree(small_run[0], target)
    return target


def test_the_sealed_test_returns_a_typed_report_and_speaks_python(run_dir, ledger_file, capsys):
    report = monsearch.test(run_dir, workers=2)
    assert isinstance(report, monsearch.SealedTestReport)
    assert dataclasses.is_dataclass(report)
    doc = report.to_dict()
    assert doc["format"] == "monsearch-sealed-test"  # report.json's document, as it was
    json.dumps(doc, allow_nan=False)
    assert report.run_id == "small" == doc["run_id"]
    assert report.strategy_hash == doc["strategy"]["strategy_hash"]
    assert report.strategy_id == doc["strategy"]["id"]
    assert report.corpus == doc["corpus"]["name"]
    assert (report.opening, report.reopened) == (1, False)
    names = [row.corpus for row in report.corpora]
    assert names == [row["corpus"] for row in doc["summary"]] and "test" in names
    test_row = next(row for row in report.corpora if row.corpus == "test")
    assert isinstance(test_row, monsearch.SealedCorpusFigures)
    assert test_row.transferred_bauc == doc["summary"][names.index("test")]["transferred_bauc"]
    assert 0.0 <= test_row.recalibrated_bauc <= 1.0

    with pytest.raises(SealedTestRefused) as refused:
        monsearch.test(run_dir, workers=2)
    assert "force=True" in str(refused.value) and "--force" not in str(refused.value)
    assert refused.value.exit_code == 3

    code, _, err = run_main(capsys, "test", str(run_dir), "--workers", "2")
    assert code == 3 and "--force" in err and "force=True" not in err  # the CLI's own words

    again = monsearch.test(run_dir, workers=2, force=True)
    assert again.reopened and again.opening == 2


def test_export_returns_a_typed_monitor(small_run, tmp_path):
    out = tmp_path / "plugin"
    monitor = monsearch.export(small_run[0], out, verify=False)
    assert isinstance(monitor, monsearch.ExportedMonitor)
    assert dataclasses.is_dataclass(monitor)
    meta = monitor.to_dict()  # the plugin's MONITOR metadata
    assert monitor.folder == out
    assert monitor.package == meta["package"] and (out / "src" / monitor.package).is_dir()
    assert monitor.name == meta["name"] and monitor.run_id == meta["run_id"] == "small"
    assert monitor.strategy_hash == meta["strategy_hash"]
    assert monitor.escalation_band == meta["escalation_band"]
    assert monitor.verified is None  # verify=False
    assert monitor.install == f"pip install {out}"
    written = (out / "src" / monitor.package / "_meta.py").read_text(encoding="utf-8")
    assert monitor.strategy_hash in written


def test_export_errors_name_the_keyword(small_run, tmp_path, capsys):
    with pytest.raises(ExportError) as refused:
        monsearch.export(small_run[0], tmp_path / "a", name="Bad Name")
    assert "name='Bad Name'" in str(refused.value) and "--name" not in str(refused.value)
    code, _, err = run_main(
        capsys, "export", str(small_run[0]), "--out", str(tmp_path / "b"), "--name", "Bad Name"
    )
    assert code == 2 and "--name 'Bad Name'" in err


def test_evolve_errors_name_the_keyword(small_corpus, tmp_path, capsys):
    taken = tmp_path / "runs" / "r"
    taken.mkdir(parents=True)
    (taken / "notes.txt").write_text("someone's\n")
    with pytest.raises(monsearch.errors.MonsearchError) as refused:
        monsearch.evolve(corpus=small_corpus, runs_dir=taken.parent, run_id="r", budget=4)
    message = str(refused.value)
    assert "resume='r'" in message and "run_id=" in message and "--" not in message, message
    code, _, err = run_main(capsys, "evolve", "--corpus", str(small_corpus), "--runs-dir",
                            str(taken.parent), "--run-id", "r", "--budget", "4")  # fmt: skip
    assert code == 2 and "--resume r" in err and "--run-id" in err, err
    assert (taken / "notes.txt").is_file()  # a folder that is not ours is never removed
