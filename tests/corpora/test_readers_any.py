"""read_any: choosing the reader from the name given or from what src looks like."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from paths import FIXTURES

from monsearch.corpora.errors import InputError
from monsearch.corpora.readers import detect_format, read_any
from monsearch.errors import MonsearchError

RESULTS = FIXTURES / "stealthbench" / "results"
GOOD = FIXTURES / "atif" / "good"
ONE_RUN = next(RESULTS.rglob("trajectory.atif.json"))


@pytest.mark.parametrize(
    ("src", "fmt"),
    [
        (RESULTS, "stealthbench"),
        (RESULTS / "trajectories", "stealthbench"),
        (ONE_RUN, "stealthbench"),
        (GOOD, "atif"),
        (GOOD / "v14_labelled.json", "atif"),
        (GOOD / "batch_v18.jsonl", "atif"),
    ],
)
def test_detect_format(src: Path, fmt: str) -> None:
    assert detect_format(src) == fmt


def test_detect_loose_files_by_content(tmp_path: Path) -> None:
    loose = tmp_path / "run.json"
    shutil.copy(ONE_RUN, loose)
    assert detect_format(loose) == "stealthbench"
    nested = tmp_path / "exports" / "a" / "trajectory.atif.json"
    nested.parent.mkdir(parents=True)
    shutil.copy(ONE_RUN, nested)
    assert detect_format(tmp_path / "exports") == "stealthbench"
    with pytest.raises(InputError, match="got nothing at that path"):
        detect_format(tmp_path / "absent")


def test_read_any_dispatches() -> None:
    sb = read_any(RESULTS)
    assert {t.meta["source_format"] for t in sb.trajectories} == {"stealthbench"}
    assert len(sb.trajectories) == 5
    at = read_any(GOOD, labels=GOOD / "labels.jsonl")
    assert {t.meta["source_format"] for t in at.trajectories} == {"atif"}
    assert at.labelled == 4
    explicit = read_any(GOOD / "v14_labelled.json", "atif")
    assert [t.id for t in explicit.trajectories] == ["atif-v14-ssrf-001"]


def test_read_any_refuses_bad_combinations() -> None:
    with pytest.raises(MonsearchError, match="unknown trajectory format 'inspect'"):
        read_any(RESULTS, "inspect")
    with pytest.raises(MonsearchError, match="labels file applies to ATIF input only"):
        read_any(RESULTS, labels=GOOD / "labels.jsonl")


def test_progress_is_reported_per_trajectory_file(tmp_path) -> None:
    from readers_support import build_tree

    from monsearch.corpora.readers import read_any

    root = tmp_path / "r"
    build_tree(root, 12, seed=1)
    seen: list[tuple[int, int]] = []
    report = read_any(root, "stealthbench", progress=lambda d, t: seen.append((d, t)))
    assert seen == [(i, 12) for i in range(1, 13)]
    assert report.files_read == 12
