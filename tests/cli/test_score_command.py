"""``monsearch score --monitor DIR|RUN FILE_OR_DIR...``: one result per trajectory."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from export_support import shared_setup
from paths import FIXTURES

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
    assert proc.returncode == 2
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
    assert proc.returncode == 2 and b"no file matches" in proc.stderr


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


# --------------------------------------------------------------------------- messages


def _skipped(proc) -> list[str]:
    return [ln for ln in proc.stderr.decode().splitlines() if ln.startswith("skipped ")]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "{}",
            "$: expected a StealthBench trajectory (atif_version), canonical ATIF "
            "(schema_version) or a monsearch trajectory record, got an empty object",
        ),
        (
            '{"trajectory": {"steps": []}, "model": "m"}',
            "$: expected a StealthBench trajectory (atif_version), canonical ATIF "
            '(schema_version) or a monsearch trajectory record, got an object with the keys '
            '"trajectory", "model"',
        ),
        (
            '{"atif_version": "1.7"}',
            "trajectory_id: expected a string, got nothing (field missing)",
        ),
        (
            '"a string"',
            "$: expected a JSON object (a StealthBench, ATIF or monsearch trajectory), "
            'got a string ("a string")',
        ),
        ("", "expected a JSON document, got an empty file"),
    ],
)
def test_unreadable_file_named_once_with_what_it_holds(setup, tmp_path, content, message):
    folder = setup["plugins"]["seed"][0]
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    proc = score_cli("--monitor", str(folder), str(bad))
    # Nothing scored: nothing on stdout (no empty table), the reason on stderr, exit 2.
    assert proc.returncode == 2 and proc.stdout == b""
    assert _skipped(proc) == [f"skipped {bad}: {message}"]
    assert "1 input(s) could not be read; none scored" in proc.stderr.decode()
    proc = score_cli("--monitor", str(folder), str(bad), "--json")
    assert _records(proc) == [{"input": str(bad), "error": message}]


def test_every_input_failing_prints_no_table(setup, tmp_path):
    folder = setup["plugins"]["seed"][0]
    (tmp_path / "a.json").write_text("[]")
    proc = score_cli("--monitor", str(folder), str(tmp_path / "a.json"), str(tmp_path / "none.json"))
    assert proc.returncode == 2 and proc.stdout == b""
    assert len(_skipped(proc)) == 2
    # One readable input among them: its table, and still exit 2 for the others.
    proc = score_cli("--monitor", str(folder), str(tmp_path / "a.json"), str(ATIF_FILE))
    assert proc.returncode == 2 and b"trajectory" in proc.stdout and len(_skipped(proc)) == 1
    assert "1 input(s) could not be read; 1 scored" in proc.stderr.decode()


@pytest.mark.parametrize("content", [b"", b"\n  \n\n"])
@pytest.mark.parametrize("compressed", [False, True])
def test_a_jsonl_without_trajectories_is_unreadable(setup, tmp_path, content, compressed):
    import zstandard

    folder = setup["plugins"]["seed"][0]
    path = tmp_path / ("empty.jsonl.zst" if compressed else "empty.jsonl")
    path.write_bytes(zstandard.ZstdCompressor().compress(content) if compressed else content)
    proc = score_cli("--monitor", str(folder), str(path))
    assert proc.returncode == 2 and proc.stdout == b""
    assert _skipped(proc) == [
        f"skipped {path}: expected at least one trajectory (a JSON document per line), "
        "got none (the file is empty or blank)"
    ]


def test_corpus_parts_are_read_compressed(setup, plugin, tmp_path):
    """A corpus part (.jsonl.zst, as the store writes it) and a folder holding one."""
    folder = setup["plugins"]["seed"][0]
    part = setup["corpus"] / "val.jsonl.zst"
    proc = score_cli("--monitor", str(folder), str(part), "--json")
    assert proc.returncode == 0, proc.stderr.decode()
    recs = _records(proc)
    val = setup["val"]
    assert [r["input"] for r in recs] == [f"{part}:{i}" for i in range(1, len(val) + 1)]
    assert [r["trajectory_id"] for r in recs] == [t.id for t in val]
    assert [r["score"] for r in recs] == [plugin.score(t) for t in val]
    # A corpus folder: its parts, not its manifest.
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("manifest.json", "val.jsonl.zst"):
        shutil.copyfile(setup["corpus"] / name, corpus / name)
    proc = score_cli("--monitor", str(folder), str(corpus), "--json")
    assert proc.returncode == 0 and proc.stderr == b""
    assert len(_records(proc)) == len(val)


def test_compressed_single_file_and_its_limits(setup, plugin, tmp_path):
    import zstandard

    folder = setup["plugins"]["seed"][0]
    packed = tmp_path / "run.json.zst"
    packed.write_bytes(zstandard.ZstdCompressor().compress(SB_FILES[0].read_bytes()))
    proc = score_cli("--monitor", str(folder), str(packed), "--json")
    assert proc.returncode == 0, proc.stderr.decode()
    [rec] = _records(proc)
    assert rec["score"] == plugin.score(SB_FILES[0])

    from monsearch.commands.score import MAX_MB

    DEFAULT_MAX_BYTES = MAX_MB * 1024 * 1024  # score's cap, not the readers' (50 MB)
    # A few KB that decompress past the size cap are refused, never held in memory.
    bomb = zstandard.ZstdCompressor().compress(b" " * (DEFAULT_MAX_BYTES + 10))
    assert len(bomb) < 100_000
    good = zstandard.ZstdCompressor().compress(SB_FILES[0].read_bytes())
    files = {
        "bomb.json.zst": bomb,
        "bomb.jsonl.zst": bomb,
        "cut.jsonl.zst": good[: len(good) // 2],
        "flipped.json.zst": good[:8] + bytes(b ^ 0xFF for b in good[8:40]) + good[40:],
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    proc = score_cli("--monitor", str(folder), *(str(tmp_path / n) for n in files))
    assert proc.returncode == 2 and proc.stdout == b""
    skipped = _skipped(proc)
    assert skipped[:3] == [
        f"skipped {tmp_path / 'bomb.json.zst'}: expected a document of at most "
        f"{DEFAULT_MAX_BYTES} bytes once decompressed, got more",
        f"skipped {tmp_path / 'bomb.jsonl.zst'}:1: expected a line of at most "
        f"{DEFAULT_MAX_BYTES} bytes, got {DEFAULT_MAX_BYTES + 10} bytes",
        f"skipped {tmp_path / 'cut.jsonl.zst'}: expected zstandard-compressed data, "
        "got a file cut short inside a frame",
    ]
    assert skipped[3].startswith(
        f"skipped {tmp_path / 'flipped.json.zst'}: expected zstandard-compressed data, "
        "got corrupt data ("
    )
    assert len(skipped) == 4
