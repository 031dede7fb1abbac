"""``monsearch score --monitor DIR|RUN FILE_OR_DIR...``: one result per trajectory."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from export_support import shared_setup

FIXTURES = Path(__file__).parent / "fixtures"
SB_ROOT = FIXTURES / "stealthbench" / "results"
SB_FILES = sorted((SB_ROOT / "trajectories").rglob("trajectory.atif.json"))
ATIF_FILE = FIXTURES / "atif" / "good" / "v14_labelled.json"
ATIF_BATCH = FIXTURES / "atif" / "good" / "batch_v18.jsonl"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return shared_setup(tmp_path_factory)


@pytest.fixture(scope="module")
def plugin(setup):
    import importlib

    folder, meta = setup["plugins"]["seed"]
    src = str(folder / "src")
    if src not in sys.path:
        sys.path.insert(0, src)
    return importlib.import_module(meta["package"])


def score_cli(*args: str, stdin: bytes | None = None, cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, "-m", "monsearch", "score", *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        check=False,
    )


def _records(proc) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.decode().splitlines() if line.strip()]


def test_files_folders_and_json(setup, plugin):
    folder = setup["plugins"]["seed"][0]
    proc = score_cli("--monitor", str(folder), str(SB_ROOT), str(ATIF_FILE), "--json")
    assert proc.returncode == 0, proc.stderr.decode()
    recs = _records(proc)
    # The StealthBench tree gives its trajectory files only (not verdicts or metadata).
    assert [r["input"] for r in recs] == [*map(str, SB_FILES), str(ATIF_FILE)]
    for r in recs:
        assert r["score"] == plugin.score(r["input"])
        d = plugin.decide(r["score"], 0.05)
        assert (r["decision"], r["budget"], r["threshold"]) == (d["decision"], 0.05, d["tau"])
        assert isinstance(r["findings"], list) and len(r["findings"]) <= 3


def test_budget_changes_the_threshold(setup, plugin):
    folder = setup["plugins"]["seed"][0]
    proc = score_cli("--monitor", str(folder), str(ATIF_FILE), "--json", "--budget", "0.01")
    [rec] = _records(proc)
    assert rec["budget"] == 0.01 and rec["threshold"] == plugin.threshold(0.01)["tau"]


def test_unreadable_inputs_are_named_and_skipped(setup, tmp_path):
    folder = setup["plugins"]["seed"][0]
    bad = tmp_path / "bad.json"
    bad.write_text('{"atif_version": "1.7", "trajectory_id": ')
    proc = score_cli(
        "--monitor",
        str(folder),
        str(bad),
        str(ATIF_FILE),
        str(tmp_path / "missing.json"),
        "--json",
    )
    assert proc.returncode == 1
    recs = _records(proc)
    assert [r["input"] for r in recs] == [str(bad), str(ATIF_FILE), str(tmp_path / "missing.json")]
    assert "error" in recs[0] and "score" in recs[1] and recs[2]["error"] == "no such file"
    err = proc.stderr.decode()
    assert f"skipped {bad}" in err and "2 input(s) could not be read" in err


def test_globs_jsonl_and_stdin(setup, tmp_path, plugin):
    folder = setup["plugins"]["seed"][0]
    for i, f in enumerate(SB_FILES[:2]):
        shutil.copyfile(f, tmp_path / f"run{i}.json")
    proc = score_cli("--monitor", str(folder), str(tmp_path / "run*.json"), "--json")
    assert proc.returncode == 0
    assert [r["input"] for r in _records(proc)] == [str(tmp_path / f"run{i}.json") for i in (0, 1)]
    proc = score_cli("--monitor", str(folder), str(ATIF_BATCH), "--json")
    recs = _records(proc)
    assert proc.returncode == 0 and len(recs) >= 2
    assert all(r["input"].startswith(f"{ATIF_BATCH}:") for r in recs)
    proc = score_cli("--monitor", str(folder), "-", "--json", stdin=SB_FILES[0].read_bytes())
    [rec] = _records(proc)
    assert proc.returncode == 0 and rec["input"] == "-"
    assert rec["score"] == plugin.score(SB_FILES[0])
    proc = score_cli("--monitor", str(folder), str(tmp_path / "nothing*.json"))
    assert proc.returncode == 1 and b"no file matches" in proc.stderr


def test_run_as_monitor_gives_the_plugin_scores(setup, plugin):
    run = setup["run"]
    proc = score_cli("--monitor", str(run.dir), str(ATIF_FILE), SB_FILES[0].as_posix(), "--json")
    assert proc.returncode == 0, proc.stderr.decode()
    recs = _records(proc)
    assert [r["score"] for r in recs] == [plugin.score(ATIF_FILE), plugin.score(SB_FILES[0])]


def test_table_output_and_bad_monitor(setup, tmp_path):
    folder = setup["plugins"]["seed"][0]
    proc = score_cli("--monitor", str(folder), str(SB_FILES[0]))
    assert proc.returncode == 0
    out = proc.stdout.decode()
    assert "score" in out and "decision" in out
    proc = score_cli("--monitor", str(tmp_path / "nowhere"), str(ATIF_FILE))
    assert proc.returncode == 2 and b"neither an exported plugin folder" in proc.stderr
