"""``monsearch evolve`` before its loop: Ctrl-C, refusals, and how ``runs`` shows it.

Ctrl-C during start-up (building or loading the corpus, views, the sandbox) stops the
command there: a new run that recorded nothing is removed, exit 130, one line saying
so, instead of going on to score the seeds and freeze a strategy. The test makes the
start-up wait, for certain, on the default corpus's writer lock (held by the test, as
another process building that corpus would hold it), so the signal lands inside it
whatever the machine's speed. A refusal after the run folder was made leaves no empty
folder either; ``monsearch runs`` calls a run that has recorded nothing yet
``starting``, not ``unknown``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from cli_support import SB_RESULTS, run_main

from monsearch.corpora.store import corpus_lock
from monsearch.search.lineage import LineageStore
from monsearch.synth.generate import default_corpus_path

#: Only a guard against a hang: nothing here waits on the machine's speed.
HANG_GUARD_S = 300


def _evolve(runs: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "monsearch", "evolve", "--runs-dir", str(runs), "--run-id", "r",
         "--budget", "4", "--workers", "1", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )  # fmt: skip


def test_ctrl_c_during_start_up_stops_there_and_removes_the_new_run(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("MONSEARCH_CACHE", str(cache))  # default_corpus_path reads it
    env = {**os.environ, "MONSEARCH_CACHE": str(cache)}
    runs = tmp_path / "runs"
    corpus = default_corpus_path()
    with corpus_lock(corpus):  # "another process is building the default corpus"
        proc = _evolve(runs, env)
        seen = []
        assert proc.stderr is not None
        for line in proc.stderr:
            seen.append(line)
            if "default corpus" in line:
                break
        assert proc.poll() is None, "".join(seen)
        assert (runs / "r").is_dir()  # the run was made: start-up is under way
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=HANG_GUARD_S)
        # Still inside start-up: the lock was never released.
    err = "".join(seen) + err
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "stopped during start-up" in err and "removed" in err, err
    assert not (runs / "r").exists()  # nothing recorded: nothing left
    assert not (corpus / "manifest.json").exists()  # and nothing was built
    assert out == ""


def test_a_refusal_after_the_folder_was_made_leaves_no_run(tmp_path, capsys):
    # An imported corpus without train and val splits is refused when it is opened,
    # after the run's folder is made.
    corpus = tmp_path / "unsplit"
    code, _, err = run_main(capsys, "corpus", "import", str(SB_RESULTS), "--out", str(corpus),
                            "--quiet")  # fmt: skip
    assert code == 0, err
    runs = tmp_path / "runs"
    code, out, err = run_main(capsys, "evolve", "--corpus", str(corpus), "--runs-dir", str(runs),
                              "--run-id", "r", "--budget", "4", "--quiet")  # fmt: skip
    assert code == 2 and "split" in err and err.count("\n") == 1, err
    assert not (runs / "r").exists()


def test_a_refused_proposer_makes_no_run_folder(tmp_path, capsys):
    runs = tmp_path / "runs"
    code, _, err = run_main(capsys, "evolve", "--proposer", "bogus", "--runs-dir", str(runs))
    assert code == 2 and "bogus" in err and err.count("\n") == 1, err
    assert not runs.exists() or not any(runs.iterdir())


def test_runs_calls_a_run_that_recorded_nothing_starting(small_run, tmp_path, capsys):
    # What a starting run holds on disk: its config and a lineage store with nothing in it.
    run = tmp_path / "runs" / "20261205-101112-s0"
    run.mkdir(parents=True)
    shutil.copyfile(small_run[0] / "config.json", run / "config.json")
    with LineageStore(run / "lineage.sqlite"):
        pass
    code, out, err = run_main(capsys, "runs", "--runs-dir", str(run.parent), "--json")
    assert code == 0, err
    (row,) = json.loads(out)
    assert row["status"] == "starting" and row["evaluated"] == 0
    code, out, err = run_main(capsys, "runs", "--runs-dir", str(run.parent))
    assert code == 0 and "starting" in out and "unknown" not in out, out
