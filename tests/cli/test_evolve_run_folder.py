"""Where ``evolve`` writes a run: one writer per run id, and one-line refusals for a
run id or ``--runs-dir`` that cannot be a run folder (issue 33, class 5).

Two ``evolve`` calls with one run id both started and the loser marked the winner's
run failed; a run id naming a file and a ``--runs-dir`` inside a run ended in
tracebacks. The lock tests hold the run's real lock (the one ``evolve`` takes) the
way a first ``evolve`` holds it between its check and its first write.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from run_fixtures import _env, evolve
from run_forgery import copy_run

from monsearch.files import exclusive_lock
from monsearch.search.runs import RUN_LOCK


def _refused(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_second_evolve_with_a_run_id_in_use_is_refused_and_writes_nothing(
    tmp_path, small_corpus
):
    runs = tmp_path / "runs"
    (runs / "r").mkdir(parents=True)
    with exclusive_lock(runs / "r" / RUN_LOCK):
        err = _refused(evolve(runs, small_corpus, run_id="r", check=False))
        assert "run 'r' is in use" in err
        assert sorted(p.name for p in (runs / "r").iterdir()) == [RUN_LOCK]


def test_a_resume_of_a_run_in_use_is_refused_and_changes_nothing(
    small_run, tmp_path, small_corpus
):
    run = copy_run(small_run[0], tmp_path / "runs" / "busy")
    before = _files(run)
    with exclusive_lock(run / RUN_LOCK):
        proc = evolve(run.parent, small_corpus, "--resume", str(run), budget=13, check=False)
        assert "is in use" in _refused(proc)
    assert _files(run) == before


def _status(run: Path) -> str | None:
    try:
        db = sqlite3.connect(f"file:{run / 'lineage.sqlite'}?mode=ro", uri=True)
        try:
            row = db.execute("SELECT value FROM meta WHERE key = 'status'").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return None
    return None if row is None else row[0]


def test_the_loser_of_two_evolves_leaves_the_winners_run_alone(tmp_path, small_corpus):
    runs = tmp_path / "runs"
    cmd = [sys.executable, "-m", "monsearch", "evolve", "--corpus", str(small_corpus),
           "--runs-dir", str(runs), "--budget", "8", "--quiet", "--json", "--workers", "1",
           "--optuna-trials", "2", "--run-id", "r"]  # fmt: skip
    first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=_env())  # fmt: skip
    try:
        deadline = time.monotonic() + 600  # a generous margin: only the event matters
        while _status(runs / "r") != "running" and first.poll() is None:
            assert time.monotonic() < deadline, "the first evolve never started its run"
            time.sleep(0.2)
        second = evolve(runs, small_corpus, run_id="r", check=False)
        err = _refused(second)
        # In use while the first runs; already there if it finished in between.
        assert "is in use" in err or "already exists" in err
    finally:
        out, err = first.communicate(timeout=900)
    assert first.returncode == 0, err
    assert json.loads(out)["status"] == "finished"
    assert _status(runs / "r") == "finished"


def test_a_run_id_that_names_a_file_is_refused_in_one_line(tmp_path, small_corpus):
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "notes").write_text("mine")
    err = _refused(evolve(runs, small_corpus, run_id="notes", check=False))
    assert "notes" in err and "is a file" in err
    assert (runs / "notes").read_text() == "mine"


def test_runs_dir_inside_a_run_is_refused_in_one_line(small_run, tmp_path, small_corpus):
    run = copy_run(small_run[0], tmp_path / "runs" / "outer")
    before = _files(run)
    for inside in (run, run / "test", run / "deeper" / "still"):
        err = _refused(evolve(inside, small_corpus, run_id="inner", check=False))
        assert "inside run folder" in err, err
    assert _files(run) == before
