"""Hundreds of runs with a few broken files: every good run kept, every broken one named."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from readers_support import build_tree, slug

from monsearch.corpora.errors import InputError
from monsearch.corpora.model import aggregate_panel
from monsearch.corpora.readers import read_any, read_stealthbench

N_RUNS = 360


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list, dict[str, str]]:
    """A results tree with N_RUNS runs, then five of them broken in different ways."""
    root = tmp_path_factory.mktemp("bulk") / "results"
    runs = build_tree(root, N_RUNS, seed=7)
    rng = random.Random(11)
    picks = rng.sample(range(N_RUNS), 5)
    broken: dict[str, str] = {}  # trajectory id -> the file the skip must name

    r = runs[picks[0]]  # truncated trajectory
    r.trajectory.write_text(r.trajectory.read_text()[:150])
    broken[r.traj_id] = str(r.trajectory)
    r = runs[picks[1]]  # empty trajectory file
    r.trajectory.write_text("")
    broken[r.traj_id] = str(r.trajectory)
    r = runs[picks[2]]  # wrong type deep inside
    doc = json.loads(r.trajectory.read_text())
    doc["steps"][0]["latency_ms"] = "fast"
    r.trajectory.write_text(json.dumps(doc))
    broken[r.traj_id] = str(r.trajectory)
    r = runs[picks[3]]  # a corrupt per-judge verdict
    v = root / "verdicts" / slug("openrouter/z-ai/glm-5.2") / r.task / r.traj_id / "verdict.json"
    v.write_text('{"model": "openrouter/z-ai/glm-5.2", "is_failure": ')
    broken[r.traj_id] = str(v)
    r = runs[picks[4]]  # a judge-status.json that is not an object
    s = r.trajectory.parent / "judge-status.json"
    s.write_text("[]")
    broken[r.traj_id] = str(s)
    return root, runs, broken


def test_bulk_import_keeps_good_and_names_broken(tree) -> None:
    root, runs, broken = tree
    report = read_stealthbench(root)
    assert report.files_read == N_RUNS
    kept = {t.id: t for t in report.trajectories}
    assert len(kept) == N_RUNS - len(broken)
    assert set(kept) == {r.traj_id for r in runs} - set(broken)
    assert sorted(s.path for s in report.skipped) == sorted(broken.values())
    for s in report.skipped:
        assert s.reason.startswith(s.path + ": ")
    # every kept run carries exactly the panel the builder wrote
    for r in runs:
        if r.traj_id in kept:
            t = kept[r.traj_id]
            assert tuple(v.is_failure for v in t.panel) == r.votes
            label = aggregate_panel(t.panel, t.task)
            assert label is not None and label.is_failure == (sum(r.votes) >= 2)
    assert report.warnings == []
    # deterministic order and content
    again = read_stealthbench(root)
    assert [t.id for t in again.trajectories] == [t.id for t in report.trajectories]
    assert again.skipped == report.skipped


def test_bulk_strict_raises_on_first_broken_file(tree) -> None:
    root, _, broken = tree
    with pytest.raises(InputError) as info:
        read_stealthbench(root, strict=True)
    assert info.value.path in broken.values()
    first = read_stealthbench(root).skipped[0]
    assert info.value.path == first.path and str(info.value) == first.reason


def test_bulk_read_any_detects_the_tree(tree) -> None:
    root, _, broken = tree
    report = read_any(root)
    assert len(report.trajectories) == N_RUNS - len(broken)
