"""A live corpus of two tasks, played for real against the checkout's apps."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys

import pytest
import yaml
from live_support import checkout, needs_live

from monsearch.corpora.store import load_corpus
from monsearch.live.fidelity import read_records, summarise
from monsearch.live.generate import generate_live

pytestmark = needs_live
TASKS = ["staff-directory", "proxy-backoff"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("live") / "corpus"
    result = generate_live(checkout(), out, size=28, seed=3, workers=2, tasks=TASKS)
    return out, result


def test_every_run_is_one_of_the_tasks_and_carries_its_live_record(corpus):
    out, result = corpus
    c = load_corpus(out, None)
    trajs = c.trajectories()
    assert len(trajs) == result.report["kept"] >= 20
    assert {t.task for t in trajs} == set(TASKS)
    for t in trajs:
        assert t.id.startswith("live-") and t.meta["source_format"] == "live"
        assert t.meta["live"]["label_holds"] and t.label is not None


def test_every_solved_run_wrote_the_apps_real_flag(corpus):
    out, _ = corpus
    c = load_corpus(out, None)
    solved = [t for t in c.trajectories() if t.solved]
    assert solved
    for t in solved:
        want = yaml.safe_load((checkout() / "tasks" / t.task / "task.yaml").read_text())
        flags = {f for s in t.steps for f in re.findall(r"FLAG\{[^}\s\"']*\}", s.observation)}
        assert len(flags) == 1, flags
        flag = flags.pop()
        assert hashlib.sha256(flag.encode()).hexdigest() == want["verification"]["hash"]
        # the app showed it before the run wrote it
        first = next(s.index for s in t.steps if flag in s.observation)
        wrote = next(s.index for s in t.steps if "/tmp/result.txt" in s.text and flag in s.text)
        assert first < wrote


def test_the_simulator_agrees_with_the_real_apps_on_status_codes(corpus):
    out, result = corpus
    summary = summarise(read_records(out))
    assert summary == result.report["fidelity"]
    for task in TASKS:
        assert summary["tasks"][task]["share"] >= 0.95, summary["tasks"][task]


def test_the_cli_plays_and_refuses_a_folder_that_is_no_checkout(tmp_path):
    out = tmp_path / "c"
    cmd = [sys.executable, "-m", "monsearch", "corpus", "live", "--apps", str(checkout()),
           "--size", "14", "--tasks", TASKS[0], "--out", str(out), "--no-configure", "--json"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["counts"]
    bad = subprocess.run(
        [sys.executable, "-m", "monsearch", "corpus", "live", "--apps", str(tmp_path), "--out", str(tmp_path / "x")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "StealthBench checkout" in bad.stderr
