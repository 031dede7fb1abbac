"""Writing trajectories as files: ``corpora.writers`` and ``monsearch corpus export``.

Written files are read back by the real readers and must give the same
trajectories (steps, prompt, labels: everything a monitor or an evaluation
uses); the ATIF ones must also pass the reference ``atif`` models; and
``monsearch score`` must give a trajectory the same score in either format.
"""

from __future__ import annotations

import json
from pathlib import Path

import atif
import pytest
from cli_support import run_main

from monsearch.corpora.model import Step, Trajectory
from monsearch.corpora.readers import read_any
from monsearch.corpora.store import load_corpus
from monsearch.corpora.writers import file_name, planned_files, to_atif, write_files
from monsearch.synth.generate import generate

FIELDS = ("task", "generator", "prompt", "steps", "outcome", "solved", "panel", "oracle")


@pytest.fixture(scope="module")
def synthetic() -> list[Trajectory]:
    return generate(120, 5)


def _read_back(folder: Path, fmt: str, trajectories: list[Trajectory]) -> dict[str, Trajectory]:
    oracles = {v.judge for t in trajectories for v in t.oracle}
    report = read_any(folder, fmt, oracle_judges=oracles)
    assert not report.skipped, report.skipped[:3]
    return {t.id: t for t in report.trajectories}


@pytest.mark.parametrize("fmt", ["atif", "stealthbench"])
def test_written_files_read_back_the_same(synthetic, tmp_path, fmt):
    write_files(tmp_path, planned_files(synthetic, fmt))
    back = _read_back(tmp_path, fmt, synthetic)
    assert sorted(back) == sorted(t.id for t in synthetic)
    for traj in synthetic:
        for field in FIELDS:
            assert getattr(back[traj.id], field) == getattr(traj, field), (traj.id, field)


def test_atif_output_is_valid_for_the_reference_models(synthetic):
    for traj in synthetic[:30]:
        atif.Trajectory.model_validate_json(json.dumps(to_atif(traj)))


def test_message_steps_and_no_labels(tmp_path):
    steps = (
        Step(0, "message", "I will look around first.", "", {"message": "I will look around first."}),
        Step(1, "execute_command", "ls /", "bin\netc\n", {"command": "ls /"}, None, 12),
        # A tool that happens to be called "message" (it has output): stays a tool call.
        Step(2, "message", '{"message": "hello"}', "sent", {"message": "hello"}),
    )
    traj = Trajectory("odd/../id", "t", "g", "do it", steps, "no_flag", False)
    files = planned_files([traj], "atif", labels=False)
    assert list(files) == ["odd_.._id.json"]  # never a path outside the folder
    write_files(tmp_path, files)
    [back] = read_any(tmp_path, "atif").trajectories
    assert back.steps == steps and back.panel == () and back.id == traj.id
    assert file_name("..") == "trajectory"


def test_stealthbench_refuses_ids_that_cannot_name_a_folder():
    traj = Trajectory("a/b", "t", "g", "", (), "no_flag", False)
    with pytest.raises(ValueError, match="cannot name a folder"):
        planned_files([traj], "stealthbench")


# --------------------------------------------------------------------------- the command


@pytest.fixture(scope="module")
def corpus_dir(small_corpus) -> Path:
    return small_corpus


def test_export_by_split_label_and_limit(corpus_dir, tmp_path, capsys):
    out = tmp_path / "fail"
    code, stdout, err = run_main(
        capsys, "corpus", "export", "--corpus", str(corpus_dir), "--split", "val",
        "--label", "fail", "--limit", "3", "--out", str(out), "--json",
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(stdout)
    val = load_corpus(corpus_dir, ["val"]).split("val")
    expected = [t for t in val if t.label is not None and t.label.is_failure][:3]
    assert [r["id"] for r in doc["trajectories"]] == [t.id for t in expected]
    assert {r["split"] for r in doc["trajectories"]} == {"val"}
    back = _read_back(out, "atif", expected)
    for traj in expected:
        assert back[traj.id].label.is_failure
        for field in FIELDS:
            assert getattr(back[traj.id], field) == getattr(traj, field)


def test_export_by_id_as_stealthbench_scores_like_atif(corpus_dir, small_run, tmp_path, capsys):
    val = load_corpus(corpus_dir, ["val"]).split("val")
    ids = [val[3].id, val[0].id]
    for fmt in ("stealthbench", "atif"):
        code, _, err = run_main(
            capsys, "corpus", "export", *ids, "--corpus", str(corpus_dir), "--format", fmt,
            "--out", str(tmp_path / fmt),
        )  # fmt: skip
        assert code == 0, err
    tree = tmp_path / "stealthbench"
    assert len(list(tree.glob("trajectories/*/*/*/trajectory.atif.json"))) == 2
    assert len(list(tree.glob("panel-verdicts/*/*/panel-verdict.json"))) == 2
    run_dir, _ = small_run
    scores = {}
    for fmt in ("stealthbench", "atif"):
        code, out, err = run_main(
            capsys, "score", "--monitor", str(run_dir), str(tmp_path / fmt), "--json"
        )
        assert code == 0, err
        scores[fmt] = {r["trajectory_id"]: r["score"] for r in map(json.loads, out.splitlines())}
    assert scores["stealthbench"] == scores["atif"] and set(scores["atif"]) == set(ids)


def test_export_refusals_write_nothing(corpus_dir, tmp_path, capsys):
    base = ("corpus", "export", "--corpus", str(corpus_dir))
    code, _, err = run_main(capsys, *base, "--out", str(tmp_path / "a"))
    assert code == 2 and "name the trajectories" in err
    code, _, err = run_main(capsys, *base, "no-such-id", "--out", str(tmp_path / "a"))
    assert code == 2 and "no trajectory 'no-such-id'" in err
    # Sealed splits are read only when named.
    test_id = load_corpus(corpus_dir, ["test"]).split("test")[0].id
    code, _, err = run_main(capsys, *base, test_id, "--out", str(tmp_path / "a"))
    assert code == 2 and "sealed splits" in err
    assert not (tmp_path / "a").exists() or not any((tmp_path / "a").iterdir())
    code, _, err = run_main(capsys, *base, test_id, "--split", "test", "--out", str(tmp_path / "a"))
    assert code == 0, err
    # A file already there is never replaced, and nothing else is written either.
    val_id = load_corpus(corpus_dir, ["val"]).split("val")[0].id
    before = {p: p.read_bytes() for p in (tmp_path / "a").iterdir()}
    code, _, err = run_main(
        capsys, *base, val_id, test_id, "--split", "val", "--split", "test",
        "--out", str(tmp_path / "a"),
    )  # fmt: skip
    assert code == 2 and "already there" in err
    assert {p: p.read_bytes() for p in (tmp_path / "a").iterdir()} == before
