"""``bench/llm_proposer.py`` against a scripted OpenAI-compatible stub (no model): it
compares the mixed search with offline alone at equal evaluations and at equal wall
time, records the load, runs ``python -m monsearch`` of its own interpreter from any
folder, and prints what it has when it is stopped."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time

from llm_stub_server import Reply, StubLLMServer
from paths import REPO
from run_fixtures import _env

DELETES = '''```python
def detect_deletes(traj):
    n = 0
    for r in traj.requests:
        if r.method == "DELETE":
            n += r.repeat
    return min(n, 5)
```'''


def _bench(server, small_corpus, runs, *args: str) -> list[str]:
    return [
        sys.executable, str(REPO / "bench" / "llm_proposer.py"), "--base-url", server.base_url,
        "--served-model", "stub", "--seeds", "4", "--corpus", str(small_corpus),
        "--runs-dir", str(runs), *args,
    ]  # fmt: skip


def test_the_bench_compares_at_equal_evaluations_and_at_equal_wall_time(tmp_path, small_corpus):
    with StubLLMServer(default=Reply.text(DELETES)) as server:
        proc = subprocess.run(
            _bench(server, small_corpus, tmp_path / "runs", "--budget", "6",
                   "--wall-budget", "400", "--mix", "offline:0.5,llm:0.5", "--json"),
            cwd=REPO, capture_output=True, text=True, env=_env(), timeout=900,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["partial"] is False and out["seeds"] == [4]
    runs = out["runs"]["4"]
    assert set(runs) == {"offline", "mixed", "mixed-wall"}
    off, mix, wall = runs["offline"], runs["mixed"], runs["mixed-wall"]
    assert off["status"] == mix["status"] == "finished"
    assert off["evaluations"] == mix["evaluations"] == 6
    # The equal-wall run was stopped by the bench once it had run as long as offline.
    assert wall["status"] == "interrupted" and wall["stopped_at_s"] == off["wall_s"]
    assert 2 <= wall["evaluations"] < 400  # how many depends on the machine
    for r in runs.values():
        assert r["load"]["n"] >= 1 and r["load"]["min"] <= r["load"]["max"]
        assert r["selected"] is not None
    assert mix["llm_lane"]["asked"] >= 1 and off["llm_lane"] is None
    (seed,) = out["per_seed"]
    ee, ew = seed["equal_evaluations"], seed["equal_wall"]
    assert ee["complete"] and ee["evaluations"] == 6
    assert ee["mixed_at_least_offline"] == (mix["selected_fitness"] >= off["selected_fitness"])
    assert ew["complete"] and ew["wall_s"] == off["wall_s"]
    assert ew["mixed_at_least_offline"] == (wall["selected_fitness"] >= off["selected_fitness"])
    assert ew["evaluations_by_wall"][0] == 6
    summary = out["summary"]
    assert summary["equal_wall"]["seeds"] == summary["equal_evaluations"]["seeds"] == 1
    assert summary["load"]["min"] <= summary["load"]["max"]


def _rows(path) -> int:
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            return db.execute("SELECT COUNT(*) FROM candidates").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_a_stopped_bench_prints_the_figures_it_has(tmp_path, small_corpus):
    runs = tmp_path / "runs"
    with StubLLMServer(default=Reply.text(DELETES)) as server:
        proc = subprocess.Popen(
            _bench(server, small_corpus, runs, "--budget", "400"),
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
        )  # fmt: skip
        lineage = runs / "offline-s4-n400" / "lineage.sqlite"
        deadline = time.monotonic() + 300
        while _rows(lineage) < 3 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=600)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err
    lines = out.splitlines()
    assert lines[0] == "PARTIAL: stopped by SIGTERM; the figures gathered so far"
    (offline,) = [ln for ln in lines if ln.startswith("seed 4 offline")]
    assert "interrupted" in offline and "evaluations in" in offline and "selected c0" in offline
    assert not any(ln.startswith("seed 4 mixed") for ln in lines)  # never started
    assert "mixed >= offline alone at equal wall time: 0 of 0 seeds" in out


def test_a_server_that_cannot_be_reached_is_refused_before_any_run(tmp_path, small_corpus):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again on leaving: nothing listens there
    server = type("Gone", (), {"base_url": f"http://127.0.0.1:{port}/v1"})()
    proc = subprocess.run(
        _bench(server, small_corpus, tmp_path / "runs", "--budget", "4"),
        cwd=tmp_path, capture_output=True, text=True, env=_env(), timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: cannot reach the LLM proposer's endpoint (stub): connection refused at "
        f"{server.base_url}"
    ]
    assert not any((tmp_path / "runs").iterdir())  # no run was started
