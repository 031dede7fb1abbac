"""A folder import reads the tree's own files: a symbolic link inside it (to a file or
a folder, outside the tree or within it) is left unread and listed as skipped with
where it points, and ``--strict`` refuses the tree (issue 33, class 5: a linked
trajectory file pointing outside the tree was imported without notice)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from cli_support import run_main
from paths import FIXTURES

from monsearch.corpora.errors import InputError
from monsearch.corpora.readers import read_any

SB_RESULTS = FIXTURES / "stealthbench" / "results"
ATIF_GOOD = FIXTURES / "atif" / "good"
SB_FILE = "trajectory.atif.json"


def _sb_tree(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the StealthBench fixture tree and a place outside it."""
    tree = tmp_path / "tree" / "results"
    shutil.copytree(SB_RESULTS, tree)
    outside = tmp_path / "outside"
    outside.mkdir()
    return tree, outside


def _move_out(run_file: Path, outside: Path, name: str) -> Path:
    """Move a run's trajectory out of the tree and leave a link to it in its place."""
    target = outside / name
    run_file.rename(target)
    run_file.symlink_to(target)
    return target


def test_a_linked_trajectory_file_outside_the_tree_is_listed_not_read(tmp_path):
    tree, outside = _sb_tree(tmp_path)
    files = sorted(tree.rglob(SB_FILE))
    before = read_any(tree)
    linked = files[1]
    target = _move_out(linked, outside, "secret.json")
    report = read_any(tree)
    assert len(report.trajectories) == len(before.trajectories) - 1
    assert [s.path for s in report.skipped] == [str(linked)]
    reason = report.skipped[0].reason
    assert str(target) in reason and "outside the tree" in reason and "not followed" in reason
    with pytest.raises(InputError, match="symbolic link"):
        read_any(tree, strict=True)


def test_a_linked_folder_is_listed_too(tmp_path):
    tree, outside = _sb_tree(tmp_path)
    run_dir = sorted(tree.rglob(SB_FILE))[0].parent
    task_dir = run_dir.parent
    moved = outside / "task"
    shutil.copytree(task_dir, moved)
    linked = task_dir.parent / "linked-task"
    linked.symlink_to(moved, target_is_directory=True)
    report = read_any(tree)
    assert [s.path for s in report.skipped] == [str(linked)]
    assert "linked folder" in report.skipped[0].reason
    assert not any(str(moved) in str(t.meta) for t in report.trajectories)


def test_a_link_within_the_tree_is_listed_and_its_target_read_once(tmp_path):
    tree, _ = _sb_tree(tmp_path)
    first = sorted(tree.rglob(SB_FILE))[0]
    twin = tree / "trajectories" / "m" / "t" / "twin"
    twin.mkdir(parents=True)
    (twin / SB_FILE).symlink_to(first)
    report = read_any(tree)
    assert len(report.trajectories) == len(read_any(SB_RESULTS).trajectories)
    [skip] = report.skipped
    assert skip.path == str(twin / SB_FILE) and "within the tree" in skip.reason


def test_atif_folders_list_links_the_same_way(tmp_path):
    folder = tmp_path / "atif"
    folder.mkdir()
    shutil.copyfile(ATIF_GOOD / "v14_labelled.json", folder / "a.json")
    outside = tmp_path / "outside.json"
    shutil.copyfile(ATIF_GOOD / "v17_sidelabels.json", outside)
    (folder / "b.json").symlink_to(outside)
    (folder / "more").symlink_to(tmp_path, target_is_directory=True)
    report = read_any(folder, "atif")
    assert len(report.trajectories) == 1
    assert [Path(s.path).name for s in report.skipped] == ["b.json", "more"]
    assert str(outside) in report.skipped[0].reason


def test_a_source_named_on_the_command_line_is_read_even_as_a_link(tmp_path):
    link = tmp_path / "results-link"
    link.symlink_to(SB_RESULTS, target_is_directory=True)
    report = read_any(link)
    assert not report.skipped
    assert len(report.trajectories) == len(read_any(SB_RESULTS).trajectories)
    one = tmp_path / "one.json"
    one.symlink_to(ATIF_GOOD / "v14_labelled.json")
    assert len(read_any(one).trajectories) == 1


def test_corpus_import_lists_the_link_on_one_escaped_line(tmp_path, capsys):
    tree, outside = _sb_tree(tmp_path)
    run_file = sorted(tree.rglob(SB_FILE))[0]
    _move_out(run_file, outside, "x\nskipped forged: y")
    out_dir = tmp_path / "corpus"
    code, out, err = run_main(capsys, "corpus", "import", str(tree), "--out", str(out_dir), "--quiet")
    assert code == 0, err
    skipped = [line for line in out.splitlines() if line.startswith("skipped ")]
    assert len(skipped) == 1 and str(run_file) in skipped[0]
    assert "x\\nskipped forged: y" in skipped[0] and "outside the tree" in skipped[0]
    assert "1 input(s) skipped" in err
    code, out, err = run_main(
        capsys, "corpus", "import", str(tree), "--out", str(tmp_path / "c2"), "--strict",
        "--quiet", "--json",
    )  # fmt: skip
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and "x\\nskipped" in err
    code, out, _err = run_main(
        capsys, "corpus", "import", str(tree), "--out", str(tmp_path / "c3"), "--json"
    )
    doc = json.loads(out)
    assert [s["path"] for s in doc["skipped"]] == [str(run_file)]
    assert os.readlink(run_file) in doc["skipped"][0]["reason"]
