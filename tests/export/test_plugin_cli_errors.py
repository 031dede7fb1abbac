"""The plugin's own command line (``python -m <package> FILE...``) on inputs it cannot read.

Each unreadable input is one JSON line: ``input`` names it once, ``error`` says why,
whole: not the path again, not a description cut short. A document that ends too
soon is "truncated JSON (unexpected end of data)" at its end, as monsearch's readers
(orjson) say it, not the standard library's "Expecting value" at some earlier point:
the plugin's stand-in for orjson fails the same way.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import orjson
import pytest
from export_support import shared_setup

from monsearch.export import PLUGIN_DIR

TRUNCATED = {
    "open-object.json": '{"a":\n',
    "open-list.json": '{"steps": [',
    "open-string.json": '{"steps": [], "task": "abc',
    "open-literal.json": '{"steps": [], "task": tru',
    "trailing-blank.json": '{"a": 1\n\n',
}


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    folder, meta = shared_setup(tmp_path_factory)["plugins"]["seed"]
    return folder, meta["package"]


def _plugin_cli(plugin, *files) -> list[dict]:
    folder, package = plugin
    proc = subprocess.run(
        [sys.executable, "-m", package, *map(str, files)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(folder / "src")},
        check=False,
    )
    assert proc.returncode == 1, proc.stderr  # some input could not be read
    assert "Traceback" not in proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def _monsearch_score(plugin, *files) -> list[dict]:
    folder, _ = plugin
    proc = subprocess.run(
        [sys.executable, "-m", "monsearch", "score", "--monitor", str(folder), "--json"]
        + [str(f) for f in files],
        capture_output=True,
        text=True,
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_truncated_json_is_named_as_monsearch_names_it_and_the_path_once(plugin, tmp_path):
    files = []
    for name, text in TRUNCATED.items():
        files.append(tmp_path / name)
        files[-1].write_text(text)
    ours = _plugin_cli(plugin, *files)
    theirs = _monsearch_score(plugin, *files)
    assert [r["input"] for r in ours] == [str(f) for f in files]
    for mine, score in zip(ours, theirs, strict=True):
        assert str(tmp_path) not in mine["error"], mine
        assert "truncated JSON (unexpected end of data)" in mine["error"], mine
        assert mine["error"] == score["error"], (mine, score)


def test_an_object_of_no_known_format_is_described_by_its_keys(plugin, tmp_path):
    path = tmp_path / "other.jsonl"
    path.write_text(json.dumps({"kind": "not a trajectory", "n": 1}) + "\n")
    (mine,) = _plugin_cli(plugin, path)
    (score,) = _monsearch_score(plugin, path)
    assert mine["input"] == f"{path}:1"
    assert mine["error"] == score["error"]
    assert mine["error"].endswith('got an object with the keys "kind", "n"'), mine


def test_a_bad_monsearch_record_keeps_its_reason_whole(plugin, tmp_path):
    path = tmp_path / "record.json"
    # A corpus record (generator, id, steps) whose fields do not make a trajectory.
    path.write_text(json.dumps({"generator": "g", "id": "r1", "steps": []}))
    (mine,) = _plugin_cli(plugin, path)
    assert mine["input"] == str(path) and str(path) not in mine["error"]
    assert mine["error"].startswith("$: expected a monsearch trajectory record, got a bad record (")
    assert "..." not in mine["error"] and 'a string ("' not in mine["error"], mine


def test_the_json_stand_in_ends_truncated_documents_as_orjson_does():
    spec = importlib.util.spec_from_file_location("_shim_orjson", PLUGIN_DIR / "_orjson.py")
    shim = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shim)
    cases = [text.encode() for text in TRUNCATED.values()]
    cases += [b"", b"   ", b"[1, 2", b'{"a": "x\\', b"[nul"]
    for data in cases:
        with pytest.raises(shim.JSONDecodeError) as ours:
            shim.loads(data)
        with pytest.raises(orjson.JSONDecodeError) as theirs:
            orjson.loads(data)
        got = (ours.value.msg, ours.value.lineno, ours.value.colno)
        want = (theirs.value.msg, theirs.value.lineno, theirs.value.colno)
        assert got == want, data
