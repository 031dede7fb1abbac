"""Corpus store: atomic writes, crash safety, and clear errors on damaged corpora."""

from __future__ import annotations

import hashlib
import json
import os

import pytest
import zstandard
from store_factory import mixed_corpus, traj

from monsearch.corpora import store
from monsearch.corpora.splits import make_split
from monsearch.corpora.store import MANIFEST, StoreError, load_corpus, write_corpus
from monsearch.errors import MonsearchError


class Crash(Exception):
    pass


@pytest.fixture
def old_and_new():
    old = mixed_corpus(40)
    new = [*mixed_corpus(40), traj("zz-new")]
    return old, new


def _siblings(path):
    return sorted(p.name for p in path.parent.iterdir())


def _crash_on_second_part(monkeypatch):
    real = store._write_part
    calls = []

    def flaky(folder, split, lines):
        calls.append(split)
        if len(calls) == 2:
            raise Crash("disk died mid-write")
        return real(folder, split, lines)

    monkeypatch.setattr(store, "_write_part", flaky)


def test_crash_mid_write_leaves_no_corpus(tmp_path, monkeypatch):
    trajs = mixed_corpus(40)
    s = make_split(trajs, seed=0)
    _crash_on_second_part(monkeypatch)
    with pytest.raises(Crash):
        write_corpus(tmp_path / "c", trajs, name="c", assignment=s.assignment, split_info=s.info)
    assert _siblings(tmp_path / "c") == []  # neither the target nor a temp folder
    with pytest.raises(StoreError, match="no such corpus directory"):
        load_corpus(tmp_path / "c")


def test_crash_mid_replace_keeps_old_corpus(tmp_path, monkeypatch, old_and_new):
    old, new = old_and_new
    m_old = write_corpus(tmp_path / "c", old, name="old", assignment={t.id: "train" for t in old})
    _crash_on_second_part(monkeypatch)
    with pytest.raises(Crash):
        write_corpus(tmp_path / "c", new, name="new", assignment={t.id: "val" for t in new})
    c = load_corpus(tmp_path / "c")
    assert (c.name, c.content_hash) == ("old", m_old.content_hash)
    assert _siblings(tmp_path / "c") == ["c"]


@pytest.mark.parametrize("exc", [Crash("power cut"), KeyboardInterrupt()])
def test_interrupt_just_before_install_keeps_old_corpus(tmp_path, monkeypatch, old_and_new, exc):
    old, new = old_and_new
    m_old = write_corpus(tmp_path / "c", old, name="old")

    def boom(tmp, out):
        raise exc

    monkeypatch.setattr(store, "_install", boom)
    with pytest.raises(type(exc)):
        write_corpus(tmp_path / "c", new, name="new")
    assert load_corpus(tmp_path / "c").content_hash == m_old.content_hash
    assert _siblings(tmp_path / "c") == ["c"]


def test_killed_writer_leftovers_are_ignored(tmp_path, old_and_new):
    old, new = old_and_new
    m_old = write_corpus(tmp_path / "c", old, name="old")
    # What a SIGKILL mid-write leaves: a temp folder with some parts and no manifest.
    leftover = tmp_path / ".c.tmp-dead"
    leftover.mkdir()
    (leftover / "all.jsonl.zst").write_bytes(b"partial")
    assert load_corpus(tmp_path / "c").content_hash == m_old.content_hash
    with pytest.raises(StoreError, match="no manifest.json"):
        load_corpus(leftover)
    m_new = write_corpus(tmp_path / "c", new, name="new")
    assert load_corpus(tmp_path / "c").content_hash == m_new.content_hash != m_old.content_hash


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2-exchange", "two-renames"])
def test_replace_swaps_in_new_corpus(tmp_path, monkeypatch, old_and_new, exchange):
    old, new = old_and_new
    write_corpus(tmp_path / "c", old, name="old")
    if not exchange:
        monkeypatch.setattr(store, "_exchange", lambda a, b: False)
    m_new = write_corpus(tmp_path / "c", new, name="new")
    c = load_corpus(tmp_path / "c")
    assert (c.name, c.content_hash, len(c.trajectories())) == ("new", m_new.content_hash, 41)
    assert _siblings(tmp_path / "c") == ["c"]


def test_exchange_is_really_atomic_on_this_filesystem(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "x").write_text("a")
    (b / "x").write_text("b")
    if not store._exchange(a, b):
        pytest.skip("renameat2(RENAME_EXCHANGE) unsupported here; the two-rename path is tested")
    assert (a / "x").read_text() == "b" and (b / "x").read_text() == "a"


def test_crash_between_two_renames_leaves_no_half_corpus(tmp_path, monkeypatch, old_and_new):
    old, new = old_and_new
    m_old = write_corpus(tmp_path / "c", old, name="old")
    monkeypatch.setattr(store, "_exchange", lambda a, b: False)
    real_rename = os.rename
    calls = []

    def rename(src, dst):
        calls.append((src, dst))
        if len(calls) == 2:
            raise Crash("crash between renames")
        return real_rename(src, dst)

    monkeypatch.setattr(store.os, "rename", rename)
    with pytest.raises(Crash):
        write_corpus(tmp_path / "c", new, name="new")
    monkeypatch.setattr(store.os, "rename", real_rename)
    # The target is absent (never half-written) and the error says where the old one went.
    with pytest.raises(StoreError, match="interrupted replace left the previous corpus") as err:
        load_corpus(tmp_path / "c")
    backup = calls[0][1]
    assert str(backup) in str(err.value)
    assert load_corpus(backup).content_hash == m_old.content_hash


def test_refuses_to_replace_what_is_not_a_corpus(tmp_path):
    trajs = mixed_corpus(5)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("keep me")
    with pytest.raises(StoreError, match="not a monsearch corpus; refusing"):
        write_corpus(tmp_path / "notes", trajs, name="x")
    assert (tmp_path / "notes" / "mine.txt").read_text() == "keep me"
    (tmp_path / "file").write_text("f")
    with pytest.raises(StoreError, match="not a directory; refusing"):
        write_corpus(tmp_path / "file", trajs, name="x")
    (tmp_path / "empty").mkdir()
    write_corpus(tmp_path / "empty", trajs, name="x")  # an empty folder is fine
    assert len(load_corpus(tmp_path / "empty").trajectories()) == 5


# --------------------------------------------------------------------------- damaged corpora


@pytest.fixture
def corpus_dir(tmp_path):
    trajs = mixed_corpus(60)
    s = make_split(trajs, seed=0, cross_generators=["gen/c"])
    write_corpus(tmp_path / "c", trajs, name="c", assignment=s.assignment, split_info=s.info)
    return tmp_path / "c"


def _edit_manifest(path, fn):
    d = json.loads((path / MANIFEST).read_text())
    fn(d)
    (path / MANIFEST).write_text(json.dumps(d))


def test_corrupt_part_fails_with_clear_error(corpus_dir):
    part = corpus_dir / "train.jsonl.zst"
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0xFF
    part.write_bytes(bytes(data))
    with pytest.raises(
        StoreError, match=r"train\.jsonl\.zst: sha256 does not match the manifest"
    ) as e:
        load_corpus(corpus_dir, ["train"])
    assert isinstance(e.value, MonsearchError) and str(corpus_dir) in str(e.value)
    load_corpus(corpus_dir, ["val"])  # other parts unaffected


def test_truncated_and_missing_parts(corpus_dir):
    part = corpus_dir / "val.jsonl.zst"
    part.write_bytes(part.read_bytes()[:-10])
    with pytest.raises(StoreError, match="bytes but the manifest says .* truncated"):
        load_corpus(corpus_dir, ["val"])
    (corpus_dir / "test.jsonl.zst").unlink()
    with pytest.raises(StoreError, match="part file of split 'test' is missing"):
        load_corpus(corpus_dir, ["test"])


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(schema_version=99), "newer than this monsearch supports"),
        (lambda d: d.update(format="something-else"), "not a monsearch corpus manifest"),
        (lambda d: d.update(codec="jsonl+lz4"), "unsupported codec"),
        (
            lambda d: d["parts"]["train"].update(file="../../etc/passwd"),
            r"parts\.train\.file: expected",
        ),
        (lambda d: d["parts"]["train"].pop("sha256"), r"parts\.train\.sha256: missing"),
        (lambda d: d["parts"].update({"Bad Name": d["parts"]["train"]}), "invalid split name"),
        (lambda d: d.update(n_trajectories="many"), "n_trajectories: expected"),
        (lambda d: d["parts"]["train"].update(count=1), "trajectories but the manifest says 1"),
    ],
)
def test_bad_manifest_fields(corpus_dir, edit, message):
    _edit_manifest(corpus_dir, edit)
    with pytest.raises(StoreError, match=message):
        load_corpus(corpus_dir, ["train"])


def test_truncated_manifest_and_missing_manifest(corpus_dir):
    text = (corpus_dir / MANIFEST).read_text()
    (corpus_dir / MANIFEST).write_text(text[: len(text) // 2])
    with pytest.raises(StoreError, match=r"manifest\.json: unreadable manifest"):
        load_corpus(corpus_dir)
    (corpus_dir / MANIFEST).unlink()
    with pytest.raises(StoreError, match=r"not a monsearch corpus \(no manifest\.json\)"):
        load_corpus(corpus_dir)


def test_bad_record_names_file_and_line(corpus_dir):
    bad = zstandard.ZstdCompressor().compress(b'{"id": "x"}\n')
    part = corpus_dir / "train.jsonl.zst"
    part.write_bytes(bad)

    def fix(d):
        d["parts"]["train"].update(sha256=hashlib.sha256(bad).hexdigest(), bytes=len(bad), count=1)

    _edit_manifest(corpus_dir, fix)
    with pytest.raises(StoreError, match=r"train\.jsonl\.zst: line 1: bad trajectory record"):
        load_corpus(corpus_dir, ["train"])


def test_verify_content_detects_a_manifest_that_lies(corpus_dir):
    load_corpus(corpus_dir, verify_content=True)
    _edit_manifest(corpus_dir, lambda d: d.update(content_hash="0" * 64))
    load_corpus(corpus_dir)  # part hashes still match
    with pytest.raises(StoreError, match="content hash .* does not match"):
        load_corpus(corpus_dir, verify_content=True)
    with pytest.raises(StoreError, match="needs every split"):
        load_corpus(corpus_dir, ["train"], verify_content=True)


def test_missing_path_and_file_path(tmp_path):
    with pytest.raises(StoreError, match=f"{tmp_path / 'nope'}: no such corpus directory"):
        load_corpus(tmp_path / "nope")
    (tmp_path / "f").write_text("x")
    with pytest.raises(StoreError, match="not a corpus directory"):
        load_corpus(tmp_path / "f")
