"""The Dask backend: val evaluations on a two-worker LocalCluster, same lineage as local.

Both tests kill a Dask worker process while it is evaluating a candidate: the
candidate must be re-queued (not lost, not recorded twice) and the run must go on
with the same results a local run gives.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
from run_fixtures import _env, evolve

from monsearch.search.lineage import LineageStore

#: Busy for a few milliseconds per trajectory (a few seconds per candidate), so a
#: worker can be caught mid-evaluation; deterministic like any seed.
SLOW_SEED = '''"""A slow seed: counts steps after a busy loop."""


def score(traj):
    acc = 0
    for i in range(40000):
        acc = (acc + i) % 7
    return float(len(traj.steps)) + acc * 0.0
'''


def _busy(k: int, loops: int) -> str:
    return (
        "def score(traj):\n"
        "    acc = 0\n"
        f"    for i in range({loops}):\n"
        "        acc = (acc + i) % 7\n"
        f"    return {k}.0 + acc * 0.0\n"
    )


def _dask_workers(root: psutil.Process) -> list[psutil.Process]:
    """Dask worker processes under ``root`` (a LocalCluster's nanny spawns them)."""
    out = []
    for p in root.children(recursive=True):
        try:
            if any("spawn_main" in part for part in p.cmdline()):
                out.append(p)
        except psutil.Error:
            continue
    return out


def _evaluating(worker: psutil.Process) -> bool:
    """A candidate child is alive under the worker's sandbox worker (mid-evaluation)."""
    try:
        return any(len(c.children()) > 0 for c in worker.children())
    except psutil.Error:
        return False


def _kill_one_mid_evaluation(root: psutil.Process, stop: threading.Event, out: dict) -> None:
    while not stop.is_set():
        for w in _dask_workers(root):
            if _evaluating(w):
                try:
                    os.kill(w.pid, signal.SIGKILL)
                except ProcessLookupError:
                    continue
                out["killed"] = w.pid
                return
        time.sleep(0.02)


def _content(runs: Path, run_id: str) -> tuple[str, list[int]]:
    with LineageStore(runs / run_id / "lineage.sqlite", readonly=True) as store:
        return store.content_hash(), [r.seq for r in store.records()]


def test_dask_local_lineage_equals_local_despite_a_killed_worker(tmp_path, small_corpus):
    seed = tmp_path / "slow_seed.py"
    seed.write_text(SLOW_SEED)
    args = ("--seed", "3", "--seed-program", str(seed), "--optuna-trials", "0")
    budget = 6
    runs = tmp_path / "runs"
    evolve(runs, small_corpus, *args, run_id="local", budget=budget, timeout=240)

    cmd = [
        sys.executable, "-m", "monsearch", "evolve", "--corpus", str(small_corpus),
        "--runs-dir", str(runs), "--budget", str(budget), "--quiet", "--json",
        "--workers", "2", "--run-id", "dask", "--backend", "dask-local", *args,
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env())
    stop, killed = threading.Event(), {}
    killer = threading.Thread(
        target=_kill_one_mid_evaluation, args=(psutil.Process(proc.pid), stop, killed)
    )
    killer.start()
    try:
        stdout, stderr = proc.communicate(timeout=240)
    finally:
        stop.set()
        killer.join()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    assert "killed" in killed, "no Dask worker was caught mid-evaluation"
    assert json.loads(stdout)["evaluated"] == budget

    local_hash, local_seqs = _content(runs, "local")
    dask_hash, dask_seqs = _content(runs, "dask")
    assert dask_seqs == local_seqs == list(range(budget))  # none lost, none twice
    assert dask_hash == local_hash
    config = json.loads((runs / "dask" / "config.json").read_text())
    assert config["backend"] == "dask-local"


def test_pool_requeues_the_candidate_of_a_killed_worker(small_corpus):
    """The pool API on an existing scheduler (--backend dask): order, values, restart."""
    import logging

    import distributed

    from monsearch.corpora.store import load_corpus
    from monsearch.sandbox.evaluate import SandboxLimits
    from monsearch.search.config import EvolveConfig
    from monsearch.search.dask_backend import dask_pool_factory

    trajs = load_corpus(small_corpus, ["val"]).split("val")[:40]
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=None, silence_logs=logging.ERROR,
    ) as cluster:
        cfg = EvolveConfig(backend="dask", scheduler=cluster.scheduler_address)
        factory = dask_pool_factory(cfg, small_corpus)
        pool = factory(trajs, workers=2, limits=SandboxLimits(wall_s=60))
        try:
            _kill_and_check(pool)
        finally:
            pool.close()


def _kill_and_check(pool) -> None:
    """Kill one worker mid-evaluation: every candidate comes back once, in order, right."""
    before = pool.client.run(os.getpid)
    assert len(before) == 2
    # Each candidate is busy for about a second; the results say which one ran.
    sources = [_busy(k, 120_000) for k in range(4)] + ["def score(traj):\n    return (\n"]
    killed: dict = {}
    stop = threading.Event()
    killer = threading.Thread(
        target=_kill_one_mid_evaluation, args=(psutil.Process(), stop, killed)
    )
    killer.start()
    try:
        results = pool.evaluate_many(sources)
    finally:
        stop.set()
        killer.join()
    assert killed.get("killed") in before.values()
    assert [r.status for r in results] == ["ok"] * 4 + ["error"]
    for k, r in enumerate(results[:4]):
        assert r.scores is not None and set(r.scores.tolist()) == {float(k)}, k
    # The nanny restarts the killed process; the plugin reaches the newcomer.
    pool.client.wait_for_workers(2, timeout=60)
    after = pool.client.run(os.getpid)
    assert killed["killed"] not in after.values()
    again = pool.evaluate_many([_busy(7, 10)] * 2)
    assert [r.status for r in again] == ["ok", "ok"]
