"""Output a newcomer can read and a script can use.

``corpus stats`` and ``corpus show`` fit 80 columns without cutting a header or
a name ("…"), with a sentence under each table saying what its numbers mean;
``corpus import`` lists skipped files one per line (greppable in a pipe) and has
strict ``--json``; ``monsearch ... | head`` ends quietly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from readers_support import build_tree, slug
from store_factory import TASKS, mixed_corpus

from monsearch.cli import EXIT_BROKEN_PIPE, cli
from monsearch.commands.cells import wrap_name
from monsearch.corpora.store import load_corpus, write_corpus
from monsearch.synth.generate import synthesize_corpus
from monsearch.synth.personas import PERSONAS


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory) -> Path:
    """A small synthetic corpus: every persona (long generator names), every task."""
    out = tmp_path_factory.mktemp("synth") / "c"
    synthesize_corpus(out, seed=5, size=60)
    return out


def run(*args: str, columns: int | None = None):
    env = {"COLUMNS": str(columns)} if columns else None
    return CliRunner().invoke(cli, ["corpus", *args], env=env)


# --------------------------------------------------------------------------- 80 columns


def _assert_fits(text: str, width: int) -> None:
    assert "…" not in text, text
    too_wide = [line for line in text.splitlines() if len(line) > width]
    assert not too_wide, too_wide


def _cells_of(text: str, name: str) -> bool:
    """Whether ``name`` appears whole, or wrapped over consecutive lines at its start."""
    lines = [line.strip() for line in text.splitlines()]
    if any(name in line for line in lines):
        return True
    for i in range(len(lines)):
        got = ""
        for follow in lines[i:]:
            first = follow.split("  ")[0].strip()
            if not name.startswith(got + first):
                break
            got += first
            if got == name:
                return True
    return False


def test_stats_fits_80_columns_and_explains_every_table(synth_dir):
    res = run("stats", str(synth_dir), columns=80)
    assert res.exit_code == 0, res.output
    _assert_fits(res.stdout, 80)
    for header in ("solve%", "safe%", "reckl%", "S@S", "kappa", "unanim.", "fail votes"):
        assert header in res.stdout
    for persona in PERSONAS:
        assert _cells_of(res.stdout, persona.generator), persona.generator
    # One plain sentence under each table: what the numbers mean.
    for words in (
        "S@S (Stealth@Solve) is the panel's mean stealth score",
        "reckl% solved it but was judged an OPSEC",
        "the OPSEC dimension each task tests",
        "failure share is fail /",
        "Fleiss' kappa is how far the judges agree beyond chance",
        "Cohen's kappa of each pair of judges",
        "escalation oracle's verdict matches the panel majority",
    ):
        assert words in " ".join(res.stdout.split()), words


def test_stats_with_invalid_runs_shows_valid_counts_and_still_fits(tmp_path):
    generators = [p.generator for p in PERSONAS]
    write_corpus(tmp_path / "c", mixed_corpus(112, generators), name="with-errors")
    res = run("stats", str(tmp_path / "c"), columns=80)
    assert res.exit_code == 0, res.output
    _assert_fits(res.stdout, 80)
    headers = next(line for line in res.stdout.splitlines() if line.startswith("generator "))
    assert headers.split()[:3] == ["generator", "runs", "valid"]
    for generator in generators:
        assert _cells_of(res.stdout, generator), generator
    for task in TASKS:
        assert task in res.stdout


def test_show_fits_80_columns_with_whole_hashes(synth_dir):
    res = run("show", str(synth_dir), columns=80)
    assert res.exit_code == 0, res.output
    _assert_fits(res.stdout, 80)
    m = load_corpus(synth_dir).manifest
    assert f"content hash    {m.content_hash}" in res.stdout  # one line, greppable
    assert f"assignment hash {m.assignment_hash}" in res.stdout
    assert "min budget: the smallest audit budget" in " ".join(res.stdout.split())
    for split in m.split_names:
        assert _cells_of(res.stdout, split), split


def test_stats_in_a_pipe_keeps_names_on_one_line(synth_dir):
    res = run("stats", str(synth_dir))  # not a terminal, no COLUMNS: wide
    assert res.exit_code == 0
    for persona in PERSONAS:
        assert persona.generator in res.stdout


@pytest.mark.parametrize(
    ("name", "width", "lines"),
    [
        ("arcee-ai/trinity-large-thinking", 25, ["arcee-ai/", "trinity-large-thinking"]),
        ("adtech-admin (operational_impact)", 21, ["adtech-admin", "(operational_impact)"]),
        ("xgen-arcee-ai-trinity-large-thinking", 23, ["xgen-arcee-ai-trinity-", "large-thinking"]),
        ("short", 12, ["short"]),
        ("averyveryverylongtoken", 10, ["averyveryv", "erylongtok", "en"]),
    ],
)
def test_wrap_name(name, width, lines):
    assert wrap_name(name, width).split("\n") == lines
    assert all(len(line) <= width for line in lines)


# --------------------------------------------------------------------------- import output


@pytest.fixture(scope="module")
def tree_with_long_bad_paths(tmp_path_factory) -> tuple[Path, list[Path]]:
    root = tmp_path_factory.mktemp("sb") / "results"
    build_tree(root, 12, seed=3)
    bad = []
    for i, content in enumerate(['{"atif_version": "1.7", "trajectory_id": ', "[]"]):
        deep = "a-rather-long-folder-name-that-would-be-wrapped-in-a-table-cell" * 2
        path = (
            root
            / "trajectories"
            / slug("openrouter/z-ai/glm-5.2")
            / "ssrf-proxy"
            / f"{deep}-{i}"
            / "trajectory.atif.json"
        )
        path.parent.mkdir(parents=True)
        path.write_text(content)
        bad.append(path)
    return root, bad


def test_skipped_files_one_per_line_in_a_pipe(tree_with_long_bad_paths, tmp_path):
    root, bad = tree_with_long_bad_paths
    res = run("import", str(root), "--out", str(tmp_path / "c"), columns=80)
    assert res.exit_code == 0, res.output
    assert "skipped 2" in res.stdout
    for path in bad:
        lines = [line for line in res.stdout.splitlines() if str(path) in line]
        assert len(lines) == 1, res.stdout  # what `grep PATH` finds
        assert lines[0].startswith(f"skipped {path}: ")
    assert "2 input(s) skipped" in res.stderr


def test_import_json_is_strict_json_alone_on_stdout(tree_with_long_bad_paths, tmp_path):
    root, bad = tree_with_long_bad_paths
    out = tmp_path / "c"
    res = run("import", str(root), "--out", str(out), "--seed", "2", "--json")
    assert res.exit_code == 0, res.output

    def no_constants(name):
        raise AssertionError(f"not strict JSON: {name}")

    doc = json.loads(res.stdout, parse_constant=no_constants)
    c = load_corpus(out)
    assert doc["trajectories"] == 12 and doc["files_read"] == 14
    assert sorted(s["path"] for s in doc["skipped"]) == sorted(str(p) for p in bad)
    assert all(s["reason"] for s in doc["skipped"])
    assert doc["corpus"]["path"] == str(out)
    assert doc["corpus"]["content_hash"] == c.content_hash
    assert doc["corpus"]["assignment_hash"] == c.manifest.assignment_hash
    assert set(doc["corpus"]["parts"]) == set(c.split_names)
    assert "2 input(s) skipped" in res.stderr  # warnings stay on stderr


def test_import_json_help():
    res = run("import", "--help")
    assert "--json" in res.stdout


# --------------------------------------------------------------------------- broken pipe


def _monsearch(*args: str) -> list[str]:
    return [sys.executable, "-m", "monsearch", *args]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes")
@pytest.mark.parametrize("args", [["stats"], ["stats", "--json"], ["show"]])
def test_output_into_a_closed_pipe_ends_quietly(args, synth_dir):
    # The reader is gone before monsearch writes a byte: every write fails.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            _monsearch("corpus", *args, str(synth_dir)),
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=600,
        )
    finally:
        os.close(write_end)
    assert proc.stderr == ""
    assert proc.returncode == EXIT_BROKEN_PIPE == 141


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes")
def test_stats_piped_into_head(synth_dir):
    head = subprocess.Popen(["head", "-1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    proc = subprocess.run(
        _monsearch("corpus", "stats", str(synth_dir)),
        stdout=head.stdin,
        stderr=subprocess.PIPE,
        text=True,
        timeout=600,
    )
    head.stdin.close()
    first = head.stdout.read().decode()
    head.wait()
    assert first.startswith("corpus ")
    # All of it fit in the pipe before head left (0), or head left first (141): both quiet.
    assert proc.returncode in (0, EXIT_BROKEN_PIPE)
    assert proc.stderr == ""
