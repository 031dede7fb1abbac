"""The evolution loop end to end, through the real ``monsearch evolve`` command.

Reproducibility (two runs, one lineage), resume after SIGKILL (same lineage as a
run never killed), hostile candidates recorded with their status while the run
goes on, bad options refused before any work.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from run_fixtures import _env, evolve

from monsearch.search.lineage import LineageStore
from monsearch.search.runs import resolve_run


def _hash(runs, run_id):
    with LineageStore(runs / run_id / "lineage.sqlite", readonly=True) as store:
        return store.content_hash(), len(store)


def test_same_seed_same_lineage_bit_for_bit(tmp_path, small_corpus):
    # Under two different string hash seeds: nothing in the search may follow them.
    runs = tmp_path / "runs"
    evolve(runs, small_corpus, run_id="a", budget=10, env=_env(PYTHONHASHSEED="1"))
    evolve(runs, small_corpus, run_id="b", budget=10, env=_env(PYTHONHASHSEED="4242"))
    (ha, na), (hb, nb) = _hash(runs, "a"), _hash(runs, "b")
    assert na == nb == 10
    assert ha == hb
    config = json.loads((runs / "a" / "config.json").read_text())
    assert "python_hash_seed" not in config
    assert config["seed"] == 0 and config["budget"] == 10
    assert config["corpus"]["content_hash"]
    # A different seed gives a different search.
    evolve(runs, small_corpus, "--seed", "7", run_id="c", budget=10)
    assert _hash(runs, "c")[0] != ha


def _rows(path):
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            return db.execute("SELECT COUNT(*) FROM candidates").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_sigkill_then_resume_equals_an_uninterrupted_run(tmp_path, small_corpus):
    runs = tmp_path / "runs"
    budget = 20
    cmd = [
        sys.executable, "-m", "monsearch", "evolve", "--corpus", str(small_corpus),
        "--runs-dir", str(runs), "--budget", str(budget), "--quiet", "--json",
        "--workers", "2", "--optuna-trials", "3", "--run-id", "killed",
    ]
    proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    lineage = runs / "killed" / "lineage.sqlite"
    deadline = time.monotonic() + 300
    while _rows(lineage) < 6 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = _rows(lineage)
    assert 6 <= killed_at < budget
    out = evolve(runs, small_corpus, "--resume", "killed", budget=budget)
    outcome = json.loads(out.stdout)
    assert outcome["status"] == "finished"
    assert outcome["replayed"] == killed_at
    assert outcome["evaluated"] == budget - killed_at
    evolve(runs, small_corpus, run_id="whole", budget=budget)
    assert _hash(runs, "killed") == _hash(runs, "whole")
    selected = json.loads((runs / "killed" / "selected.json").read_text())
    assert selected["id"] == json.loads((runs / "whole" / "selected.json").read_text())["id"]


HOSTILE = {
    "hang.py": "def score(traj):\n    while True:\n        pass\n",
    "membomb.py": "def score(traj):\n    return len('a' * 10**10)\n",
    "raises.py": "def score(traj):\n    return 1.0 / 0\n",
}


def test_hostile_candidates_are_recorded_and_the_run_goes_on(tmp_path, small_corpus):
    runs = tmp_path / "runs"
    args = []
    for name, source in HOSTILE.items():
        path = tmp_path / name
        path.write_text(source)
        args += ["--seed-program", str(path)]
    out = evolve(runs, small_corpus, *args, run_id="hostile", budget=10)
    outcome = json.loads(out.stdout)
    assert outcome["status"] == "finished"
    run = resolve_run("hostile", runs)
    with run.store() as store:
        records = {r.operator: r for r in store.records()}
        assert len(store) == 10
    hang = records["seed:hang.py"]
    assert hang.status == "failed" and hang.sandbox_status == "timeout"
    assert records["seed:membomb.py"].sandbox_status in ("memory", "error")
    raises = records["seed:raises.py"]
    assert raises.sandbox_status == "error"
    assert "ZeroDivisionError" in json.dumps(raises.artifacts)
    assert all(r.fitness == 0.0 for r in (hang, raises))
    # The search went on from the healthy seeds and froze a strategy.
    assert outcome["selected"] is not None
    assert records["seed:stronger"].ok


def test_bad_options_fail_before_any_work(tmp_path, small_corpus):
    runs = tmp_path / "runs"
    proc = evolve(runs, small_corpus, "--seed-program", str(tmp_path / "nope.py"), check=False)
    assert proc.returncode == 2
    assert "nope.py" in proc.stderr and "Traceback" not in proc.stderr
    assert not (runs / "r").exists()
    proc = evolve(runs, small_corpus, "--proposer", "magic", check=False)
    assert proc.returncode == 2 and "magic" in proc.stderr
    proc = evolve(runs, tmp_path / "no-corpus", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_an_existing_run_is_not_overwritten(tmp_path, small_corpus):
    runs = tmp_path / "runs"
    evolve(runs, small_corpus, run_id="once", budget=3)
    proc = evolve(runs, small_corpus, run_id="once", budget=3, check=False)
    assert proc.returncode == 2
    assert "--resume once" in proc.stderr


def test_resume_with_a_smaller_budget_is_refused_and_changes_nothing(tmp_path, small_corpus):
    runs = tmp_path / "runs"
    evolve(runs, small_corpus, run_id="done", budget=6)
    files = ("selected.json", "selected.py", "config.json", "lineage.sqlite")
    before = {f: (runs / "done" / f).read_bytes() for f in files}
    proc = evolve(runs, small_corpus, "--resume", "done", budget=3, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "already recorded 6" in proc.stderr and "--budget 3" in proc.stderr
    assert {f: (runs / "done" / f).read_bytes() for f in files} == before
    # The same total is a no-op that keeps the frozen strategy.
    again = json.loads(evolve(runs, small_corpus, "--resume", "done", budget=6).stdout)
    assert again["replayed"] == 6 and again["evaluated"] == 0
    assert (runs / "done" / "selected.py").read_bytes() == before["selected.py"]


@pytest.mark.parametrize("budget", [1, 2])
def test_budget_is_a_hard_stop(tmp_path, small_corpus, budget):
    runs = tmp_path / "runs"
    outcome = json.loads(evolve(runs, small_corpus, run_id="b", budget=budget).stdout)
    assert outcome["evaluated"] == budget
    assert _hash(runs, "b")[1] == budget


def test_ctrl_c_stops_cleanly_and_the_run_resumes(tmp_path, small_corpus):
    runs = tmp_path / "runs"
    cmd = [
        sys.executable, "-m", "monsearch", "evolve", "--corpus", str(small_corpus),
        "--runs-dir", str(runs), "--budget", "40", "--quiet", "--json",
        "--workers", "2", "--optuna-trials", "3", "--run-id", "ctrlc",
    ]
    proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lineage = runs / "ctrlc" / "lineage.sqlite"
    deadline = time.monotonic() + 300
    while _rows(lineage) < 4 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    outcome = json.loads(out)
    assert outcome["status"] == "interrupted"
    # Hints are typed as this run was started (python -m monsearch), with the run's path
    # (it is not under ./runs), and never the once-only sealed test of an unfinished run.
    prog, _, rest = outcome["next"][0].partition(" evolve ")
    assert prog.endswith(" -m monsearch") and rest == f"--resume {runs / 'ctrlc'}"
    assert not any(" test " in line for line in outcome["next"])
    stopped_at = _rows(lineage)
    assert stopped_at == outcome["evaluated"] < 40
    with LineageStore(lineage, readonly=True) as store:
        assert store.get_meta("status") == "interrupted"
    total = max(stopped_at, 12)
    resumed = json.loads(evolve(runs, small_corpus, "--resume", "ctrlc", budget=total).stdout)
    assert resumed["replayed"] == stopped_at
    assert _rows(lineage) == total
