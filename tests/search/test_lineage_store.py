"""The lineage store: immutable rows, atomic writes, a content hash that ignores timings."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from monsearch.search.frozen import freeze
from monsearch.search.lineage import CandidateRecord, LineageError, LineageStore, source_hash
from monsearch.search.runs import Run, RunError, SelectedStrategy, check_run_id, resolve_run


def _record(seq, parent=(), fitness=0.5, timings=None, source="def score(t):\n    return 1.0\n"):
    return CandidateRecord(
        seq=seq,
        id=f"c{seq:05d}",
        parent_ids=tuple(parent),
        generation=len(parent),
        island=0,
        proposer="offline",
        operator="add_detector",
        description="d",
        source=source,
        source_hash=source_hash(source),
        diff="",
        status="ok",
        sandbox_status="ok",
        fitness=fitness,
        fitness_json={"fitness": fitness, "fitness_low": None},
        artifacts={"sandbox": {"n_errors": 0}},
        spend={},
        timings=timings or {"eval_s": 0.1},
    )


def test_roundtrip_ancestry_scores_and_ledger(tmp_path):
    path = tmp_path / "lineage.sqlite"
    with LineageStore(path) as store:
        store.add(_record(0), np.array([0.1, 0.2, np.nan]))
        store.add(_record(1, ["c00000"]), np.array([1.0, 2.0, 3.0]),
                  [{"kind": "llm", "model": "m", "prompt_tokens": 10, "completion_tokens": 5,
                    "calls": 1, "usd": 0.25}])
        store.add(_record(2, ["c00001"], 0.7))
    with LineageStore(path, readonly=True) as store:
        assert [r.id for r in store.records()] == ["c00000", "c00001", "c00002"]
        assert [r.id for r in store.ancestry("c00002")] == ["c00002", "c00001", "c00000"]
        assert store.get("c00001").parent_ids == ("c00000",)
        np.testing.assert_array_equal(store.val_scores(1), [1.0, 2.0, 3.0])
        assert np.isnan(store.val_scores(0)[2])
        assert store.val_scores(2) is None
        totals = store.ledger_totals()
        assert totals["llm"]["prompt_tokens"] == 10 and totals["usd"] == pytest.approx(0.25)
        with pytest.raises(LineageError, match="c09999"):
            store.get("c09999")


def test_rows_are_immutable(tmp_path):
    with LineageStore(tmp_path / "l.sqlite") as store:
        store.add(_record(0))
        with pytest.raises(sqlite3.IntegrityError):
            store.add(_record(0, fitness=0.9))
        assert store.get("c00000").fitness == 0.5


def test_content_hash_covers_content_not_timings(tmp_path):
    def build(name, timings, fitness=0.5):
        with LineageStore(tmp_path / name) as store:
            store.add(_record(0, timings=timings, fitness=fitness), np.arange(3.0))
            return store.content_hash()

    a = build("a", {"eval_s": 0.1})
    assert build("b", {"eval_s": 9.9}) == a
    assert build("c", {"eval_s": 0.1}, fitness=0.6) != a


def test_readonly_open_of_a_missing_or_foreign_file(tmp_path):
    with pytest.raises(LineageError, match="no lineage store"):
        LineageStore(tmp_path / "missing.sqlite", readonly=True)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(LineageError):
        LineageStore(junk, readonly=True)


def test_selected_strategy_hash_is_checked(tmp_path):
    run = Run(tmp_path / "r1")
    run.dir.mkdir()
    run.write_config({"run_id": "r1"})
    source = "def score(t):\n    return 2.0\n"
    with run.store(readonly=False) as store:
        store.add(_record(1, source=source))
    sel = SelectedStrategy("r1", "c00001", source, source_hash(source), 0.5, 0.4, {}, {}, {})
    freeze(run, sel)
    assert resolve_run("r1", tmp_path).selected() == sel
    assert (run.dir / "selected.py").read_text() == source
    tampered = run.dir / "selected.json"
    tampered.write_text(tampered.read_text().replace("return 2.0", "return 3.0"))
    with pytest.raises(RunError, match="does not match its hash"):
        run.selected()


def test_run_ids_and_missing_runs(tmp_path):
    with pytest.raises(RunError):
        check_run_id("../escape")
    with pytest.raises(RunError, match="no run 'nope'"):
        resolve_run("nope", tmp_path)


def test_each_row_is_chained_as_written_and_checked_on_reading(tmp_path):
    from monsearch.search.chain import RunIntegrityError, verify

    path = tmp_path / "lineage.sqlite"
    with LineageStore(path) as store:
        store.add(_record(0), np.arange(3.0))
        store.add(_record(1, ["c00000"]), np.arange(3.0) + 1,
                  [{"kind": "llm", "model": "m", "prompt_tokens": 1, "calls": 1, "usd": 0.5}])
        assert store.add_frozen({"id": "c00001"}) and not store.add_frozen({"id": "c00001"})
    with LineageStore(path, readonly=True) as store:
        chain, material = verify(store, "here")
    assert chain.length == 3 and [r for _, r in chain.frozen] == [{"id": "c00001"}]
    assert set(material) == {0, 1}
    # Every part of a row is covered: its val scores, its spend, even its timings.
    edits = {
        "val": "UPDATE scores SET val = (SELECT val FROM scores WHERE seq = 0) WHERE seq = 1",
        "spend": "UPDATE ledger SET usd = 0 WHERE seq = 1",
        "timings": "UPDATE candidates SET timings_json = '{}' WHERE seq = 1",
    }
    for what, statement in edits.items():
        copy = tmp_path / f"{what}.sqlite"
        copy.write_bytes(path.read_bytes())
        with sqlite3.connect(copy) as db:
            db.execute(statement)
        with LineageStore(copy, readonly=True) as store, pytest.raises(
            RunIntegrityError, match="candidate c00001 .seq 1. differs"
        ):
            verify(store, "here")


def test_a_store_made_before_the_chain_is_read_but_never_written(tmp_path):
    path = tmp_path / "lineage.sqlite"
    with LineageStore(path) as store:
        store.add(_record(0))
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE chain")
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    with LineageStore(path, readonly=True) as store:
        assert not store.chained and [r.id for r in store.records()] == ["c00000"]
    with pytest.raises(LineageError, match="cannot resume"):
        LineageStore(path)
