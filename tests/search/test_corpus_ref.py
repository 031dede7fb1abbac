"""A run's corpus record (``config.json``'s ``corpus``): one typed reading of it."""

from __future__ import annotations

from monsearch.search.runs import CorpusRef

RECORD = {
    "path": None,
    "default": {"seed": 7, "size": 300},
    "resolved_path": "/data/corpus",
    "name": "default-7-300",
    "content_hash": "c" * 64,
    "assignment_hash": "a" * 64,
    "splits": {"train": "train", "val": "val-2"},
    "sealed_splits": ["test", "xgen-b"],
}


def test_the_record_round_trips_and_names_its_splits():
    ref = CorpusRef.from_config({"corpus": RECORD})
    assert ref.to_dict() == RECORD
    assert list(ref.to_dict()) == list(RECORD)  # the order evolve writes it in
    assert (ref.split("val"), ref.split("train"), ref.split("test")) == ("val-2", "train", "test")


def test_an_old_or_broken_record_reads_as_empty_not_as_an_error():
    # runs from before corpus.default kept the default corpus at the top level
    old = CorpusRef.from_config({"corpus": {"name": "x"}, "corpus_default": {"seed": 1}})
    assert old.default == {"seed": 1} and old.path is None
    # with a path, the default corpus is not the run's
    assert CorpusRef.from_config({"corpus": {"path": "p"}, "corpus_default": {"seed": 1}}).default is None
    assert CorpusRef.from_config({"corpus": "junk"}) == CorpusRef()
    assert CorpusRef.from_config({}).split("val") == "val"


def test_differs_compares_the_identity_the_record_holds():
    ref = CorpusRef.from_dict(RECORD)
    assert ref.differs("c" * 64, "a" * 64) == []
    assert ref.differs("d" * 64, "a" * 64) == ["content_hash"]
    assert ref.differs("c" * 64, "b" * 64) == ["assignment_hash"]
    assert ref.differs("d" * 64) == ["content_hash", "assignment_hash"]
    # a record without an assignment hash (an older run) checks the content only...
    older = CorpusRef.from_dict({**RECORD, "assignment_hash": None})
    assert older.differs("c" * 64, "b" * 64) == []
    # ...unless strict: a key set on one side only differs (the frozen copy must agree)
    assert older.differs("c" * 64, "b" * 64, strict=True) == ["assignment_hash"]
    assert older.differs("c" * 64, None, strict=True) == []
