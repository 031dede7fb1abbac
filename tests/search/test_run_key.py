"""The run key that seals run folders (issue 33, class 2): made once, private, never
replaced; a key that cannot be read is a one-line error, not a traceback."""

from __future__ import annotations

import stat
import threading

import pytest
from cli_support import run_main
from run_forgery import copy_run

from monsearch.search.lineage import LineageStore
from monsearch.search.run_key import RunKeyError, load, load_or_create


def test_the_key_is_made_once_private_and_read_back(tmp_path):
    path = tmp_path / "state" / "run-key"
    assert load(path) is None
    key = load_or_create(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(path.read_text().strip()) == 64
    assert load(path) == key == load_or_create(path)
    assert key.id not in path.read_text() and len(key.id) == 16


def test_first_uses_at_once_agree_on_one_key(tmp_path):
    path = tmp_path / "run-key"
    found: list[str] = []
    start = threading.Barrier(8)

    def first_use():
        start.wait()
        found.append(load_or_create(path).id)

    threads = [threading.Thread(target=first_use) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(found) == 8 and len(set(found)) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["run-key"]  # no temporary left


@pytest.mark.parametrize("shape", ["garbage", "folder"])
def test_a_key_that_cannot_be_read_is_refused_and_kept(shape, tmp_path, monkeypatch, capsys,
                                                        small_run):  # fmt: skip
    path = tmp_path / "run-key"
    if shape == "garbage":
        path.write_text("not a key\n")
    else:
        path.mkdir()
    monkeypatch.setenv("MONSEARCH_RUN_KEY", str(path))
    with pytest.raises(RunKeyError, match="run key"):
        LineageStore(tmp_path / "lineage.sqlite")
    run = copy_run(small_run[0], tmp_path / "runs" / "r")
    code, out, err = run_main(capsys, "test", str(run))
    assert code == 2 and err.count("\n") == 1 and "run key" in err, err
    if shape == "garbage":
        assert path.read_text() == "not a key\n"  # never replaced
