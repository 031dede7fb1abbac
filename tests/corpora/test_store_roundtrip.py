"""Corpus store: exact round trip, layout, partial loading, content hash."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from store_factory import mixed_corpus, traj

from monsearch.corpora.codec import (
    CodecError,
    decode,
    encode,
    trajectory_from_dict,
    trajectory_to_dict,
)
from monsearch.corpora.model import ORACLE, Step, Trajectory, Verdict
from monsearch.corpora.splits import make_split
from monsearch.corpora.store import (
    MANIFEST,
    StoreError,
    content_hash,
    load_corpus,
    read_manifest,
    write_corpus,
)


def _odd_trajectory() -> Trajectory:
    """Every field away from its default, and every argument shape the readers produce."""
    return Trajectory(
        id="sb-oauth-callback-1785600000-9f3a1c2b",
        task="oauth-callback",
        generator="openrouter/z-ai/glm-5.2",
        prompt='Assess http://app:5000 — ünïcode ✓ and "quotes"\n\ttabs',
        steps=(
            Step(0, "think", "Recon first.", "", {"thought": "Recon first."}, None, 0),
            Step(
                1,
                "execute_command",
                "curl -s http://app:5000/",
                "<h1>x</h1>\n\n",
                {"command": "curl -s http://app:5000/"},
                "2026-08-01T12:00:01+00:00",
                61,
            ),
            Step(2, "execute_command", "not json {", "out", {"raw": "not json {"}),
            Step(
                3, "execute_command", "ls", "a\nb", {"command": "ls -la"}
            ),  # args differ from text
            Step(
                4,
                "custom",
                '{"a": [1, 2.5, null], "b": {"c": true}}',
                "",
                {"a": [1, 2.5, None], "b": {"c": True}},
            ),
            Step(5, "execute_command", "", "", {}),
            Step(6, "execute_command", "x", "", {"command": 7}),  # one key, not a string
        ),
        outcome="step_limit",
        solved=None,
        panel=(
            Verdict("j1", True, 0.1, 0.92, "Compartmentalization", "listener on own IP"),
            Verdict("j2", False, 0.8000000000000002, 0.5),
            Verdict("j3", True, 0.0, 1.0, "", "judge output could not be parsed"),
        ),
        oracle=(Verdict("oracle/x", True, 0.25, 0.75, "credential", "r", role=ORACLE),),
        meta={"source_format": "stealthbench", "extra": {"nested": [1, {"k": "v"}]}, "n": None},
    )


def test_codec_round_trip_is_exact():
    for t in [_odd_trajectory(), *mixed_corpus(30)]:
        back = decode(encode(t))
        assert back == t
        assert trajectory_from_dict(trajectory_to_dict(t)) == t
        assert type(back.steps) is tuple and type(back.panel) is tuple
        assert back.label == t.label


def test_codec_compacts_command_arguments_but_not_others():
    d = trajectory_to_dict(_odd_trajectory())
    args = [s.get("arguments") for s in d["steps"]]
    assert args[0] == "thought" and args[1] == "command"
    assert args[2] == "raw"  # raw input equal to text is compacted too
    assert args[3] == {"command": "ls -la"}
    assert args[5] is None  # empty arguments omitted
    assert args[6] == {"command": 7}


def test_codec_normalises_int_scores_and_rejects_non_finite():
    t = traj("a")
    as_int = dataclasses.replace(
        t, panel=tuple(dataclasses.replace(v, stealth_score=1) for v in t.panel)
    )
    as_float = dataclasses.replace(
        t, panel=tuple(dataclasses.replace(v, stealth_score=1.0) for v in t.panel)
    )
    assert encode(as_int) == encode(as_float)
    bad = dataclasses.replace(t, panel=(dataclasses.replace(t.panel[0], stealth_score=math.nan),))
    with pytest.raises(CodecError, match="not finite"):
        encode(bad)
    with pytest.raises(CodecError, match="not JSON-serialisable"):
        encode(dataclasses.replace(t, meta={"x": object()}))


def test_store_round_trip_unsplit(tmp_path):
    trajs = [_odd_trajectory(), *mixed_corpus(50)]
    m = write_corpus(tmp_path / "c", trajs, name="mixed")
    c = load_corpus(tmp_path / "c")
    assert c.name == "mixed" and c.content_hash == m.content_hash
    assert c.split_names == ["all"] and not c.is_split and c.cross_generator_splits == []
    assert sorted(c.trajectories(), key=lambda t: t.id) == sorted(trajs, key=lambda t: t.id)
    assert sorted((tmp_path / "c").iterdir()) == [
        tmp_path / "c" / "all.jsonl.zst",
        tmp_path / "c" / MANIFEST,
    ]
    with pytest.raises(StoreError, match="unsplit"):
        load_corpus(tmp_path / "c", ["train"])


def test_store_round_trip_split_and_manifest(tmp_path):
    trajs = mixed_corpus(140)
    split = make_split(trajs, seed=3, cross_generators=["gen/c"])
    m = write_corpus(
        tmp_path / "c", trajs, name="s", assignment=split.assignment, split_info=split.info
    )
    c = load_corpus(tmp_path / "c")
    assert c.split_names == ["train", "val", "test", "xgen-gen-c"]
    assert c.cross_generator_splits == ["xgen-gen-c"]
    for name in c.split_names:
        got = c.split(name)
        want = sorted((t for t in trajs if split.assignment[t.id] == name), key=lambda t: t.id)
        assert got == want  # parts are stored sorted by id
    assert c.assignment() == split.assignment

    on_disk = json.loads((tmp_path / "c" / MANIFEST).read_text())
    assert on_disk["content_hash"] == m.content_hash == c.content_hash
    assert on_disk["split_info"]["seed"] == 3
    assert on_disk["split_info"]["cross_generators"] == {"xgen-gen-c": "gen/c"}
    counts = on_disk["counts"]
    assert counts["generators"] == {"gen/a": 47, "gen/b": 47, "gen/c": 46}
    assert sum(counts["tasks"].values()) == 140
    assert sum(counts["labels"].values()) == 140
    assert counts["splits"]["xgen-gen-c"]["generators"] == {"gen/c": 46}
    for name, part in on_disk["parts"].items():
        assert part["count"] == counts["splits"][name]["trajectories"]
        assert part["bytes"] == (tmp_path / "c" / part["file"]).stat().st_size
    benign = counts["splits"]["val"]["labels"]["pass"]
    assert counts["splits"]["val"]["min_budget"] == pytest.approx(5 / benign)
    assert read_manifest(tmp_path / "c") == m


def test_loading_train_val_never_reads_test_or_xgen(tmp_path):
    trajs = mixed_corpus(140)
    split = make_split(trajs, seed=1, cross_generators=["gen/b"])
    write_corpus(
        tmp_path / "c", trajs, name="s", assignment=split.assignment, split_info=split.info
    )
    # Destroy the held-out parts: a train+val load must not notice.
    (tmp_path / "c" / "test.jsonl.zst").write_bytes(b"garbage")
    (tmp_path / "c" / "xgen-gen-b.jsonl.zst").unlink()
    c = load_corpus(tmp_path / "c", ["val", "train"])
    assert c.loaded_splits == ["train", "val"]
    assert {t.id for t in c.trajectories()} == {
        tid for tid, s in split.assignment.items() if s in ("train", "val")
    }
    assert c.split_names == ["train", "val", "test", "xgen-gen-b"]  # on disk, per manifest
    with pytest.raises(StoreError, match="exists but was not loaded"):
        c.split("test")
    with pytest.raises(StoreError, match="no split 'nope'"):
        c.split("nope")
    with pytest.raises(StoreError, match="test.jsonl.zst"):
        load_corpus(tmp_path / "c")


def test_content_hash_depends_on_data_only(tmp_path):
    trajs = mixed_corpus(80)
    m1 = write_corpus(tmp_path / "a", trajs, name="one")
    m2 = write_corpus(tmp_path / "b", list(reversed(trajs)), name="other-name")
    s = make_split(trajs, seed=9, cross_generators=["gen/a"])
    m3 = write_corpus(
        tmp_path / "c", trajs, name="split", assignment=s.assignment, split_info=s.info
    )
    assert m1.content_hash == m2.content_hash == m3.content_hash == content_hash(trajs)
    assert m1.assignment_hash is None and m3.assignment_hash is not None
    # Same data in any order gives byte-identical files.
    for f in ("all.jsonl.zst", MANIFEST):
        a, b = (tmp_path / "a" / f).read_bytes(), (tmp_path / "b" / f).read_bytes()
        assert a == b or f == MANIFEST  # manifests differ only by name
    assert json.loads((tmp_path / "a" / MANIFEST).read_text()) | {"name": "x"} == json.loads(
        (tmp_path / "b" / MANIFEST).read_text()
    ) | {"name": "x"}


@pytest.mark.parametrize(
    "change",
    [
        lambda t: dataclasses.replace(t, prompt=t.prompt + " "),
        lambda t: dataclasses.replace(t, solved=False),
        lambda t: dataclasses.replace(t, steps=t.steps[:-1]),
        lambda t: dataclasses.replace(
            t, steps=(dataclasses.replace(t.steps[0], observation="y"), *t.steps[1:])
        ),
        lambda t: dataclasses.replace(
            t, steps=(dataclasses.replace(t.steps[0], latency_ms=None), *t.steps[1:])
        ),
        lambda t: dataclasses.replace(
            t, panel=(dataclasses.replace(t.panel[0], stealth_score=0.8500001), *t.panel[1:])
        ),
        lambda t: dataclasses.replace(t, panel=t.panel[::-1]),
        lambda t: dataclasses.replace(t, oracle=(Verdict("o", True, 0.1, 0.9, role=ORACLE),)),
        lambda t: dataclasses.replace(t, meta={**t.meta, "k": 1}),
        lambda t: dataclasses.replace(t, id=t.id + "x"),
    ],
)
def test_any_change_changes_the_content_hash(change):
    trajs = mixed_corpus(20)
    base = content_hash(trajs)
    changed = [change(trajs[0]), *trajs[1:]]
    assert content_hash(changed) != base
    assert content_hash(list(reversed(trajs))) == base


def test_write_rejects_bad_inputs(tmp_path):
    trajs = mixed_corpus(10)
    with pytest.raises(StoreError, match="duplicate trajectory id"):
        write_corpus(tmp_path / "c", [*trajs, trajs[0]], name="d")
    with pytest.raises(StoreError, match="have no split"):
        write_corpus(tmp_path / "c", trajs, name="d", assignment={trajs[0].id: "train"})
    full = {t.id: "train" for t in trajs}
    with pytest.raises(StoreError, match="unknown trajectories"):
        write_corpus(tmp_path / "c", trajs, name="d", assignment={**full, "ghost": "val"})
    with pytest.raises(StoreError, match="invalid split names"):
        write_corpus(tmp_path / "c", trajs, name="d", assignment={**full, trajs[0].id: "../evil"})
    with pytest.raises(StoreError, match="non-empty name"):
        write_corpus(tmp_path / "c", trajs, name="")
    assert not (tmp_path / "c").exists()


def test_split_corpus_always_has_the_three_main_parts(tmp_path):
    trajs = mixed_corpus(4)
    write_corpus(tmp_path / "c", trajs, name="tiny", assignment={t.id: "train" for t in trajs})
    c = load_corpus(tmp_path / "c")
    assert c.split_names == ["train", "val", "test"]
    assert c.split("test") == [] and len(c.split("train")) == 4
    assert c.manifest.split_info == {"method": "given"}
