"""The shared JSON layer: every failure names the file, the JSON path and what was wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from monsearch.corpora.errors import InputError, InputTooLargeError
from monsearch.corpora.readers.jsonio import Node, iter_jsonl, load_json
from monsearch.corpora.readers.stepinput import step_input
from monsearch.errors import MonsearchError


def test_input_error_message_and_attributes() -> None:
    err = InputError("tests/x/trajectory.atif.json", "steps[3].action.tool", "a string", "null")
    assert (
        str(err)
        == "tests/x/trajectory.atif.json: steps[3].action.tool: expected a string, got null"
    )
    assert isinstance(err, MonsearchError) and err.exit_code == 2
    assert (err.path, err.field, err.expected, err.got) == (
        "tests/x/trajectory.atif.json",
        "steps[3].action.tool",
        "a string",
        "null",
    )
    on_line = InputError("l.jsonl", "verdicts[0].judge", "a string", "the number 3", line=12)
    assert str(on_line) == "l.jsonl:12: verdicts[0].judge: expected a string, got the number 3"
    assert on_line.location == "l.jsonl:12"


def test_load_json_reads_valid_file_and_strips_bom(tmp_path: Path) -> None:
    p = tmp_path / "a.json"
    p.write_bytes(b'\xef\xbb\xbf{"a": [1, 2]}')
    assert load_json(p, "a.json") == {"a": [1, 2]}


@pytest.mark.parametrize(
    ("data", "got"),
    [
        (b"", "an empty file"),
        (b"  \n\t\n", "an empty file"),
    ],
)
def test_empty_file(tmp_path: Path, data: bytes, got: str) -> None:
    p = tmp_path / "e.json"
    p.write_bytes(data)
    with pytest.raises(InputError) as info:
        load_json(p, "e.json")
    assert str(info.value) == f"e.json: expected a JSON document, got {got}"


def test_invalid_json_reports_line_and_column(tmp_path: Path) -> None:
    p = tmp_path / "bad.json"
    p.write_text('{\n  "a": 1\n  "b": 2\n}\n')
    with pytest.raises(InputError) as info:
        load_json(p, "bad.json")
    assert str(info.value) == (
        "bad.json: expected valid JSON, got invalid JSON "
        "(unexpected character, expected ',' or '}') at line 3, column 3"
    )


def test_truncated_json_is_named_truncated(tmp_path: Path) -> None:
    p = tmp_path / "cut.json"
    p.write_text('{"steps": [{"index": 0,')
    with pytest.raises(
        InputError, match=r"^cut\.json: expected valid JSON, got truncated JSON"
    ) as info:
        load_json(p, "cut.json")
    assert "at line 1, column 24" in str(info.value)


def test_size_cap_refuses_before_reading(tmp_path: Path) -> None:
    p = tmp_path / "big.json"
    p.write_text('{"x": "' + "a" * 200 + '"}')
    with pytest.raises(InputTooLargeError) as info:
        load_json(p, "big.json", max_bytes=100)
    assert str(info.value) == "big.json: expected a file of at most 100 bytes, got 209 bytes"
    assert load_json(p, "big.json", max_bytes=209) == {"x": "a" * 200}


def test_unreadable_path(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^nope\.json: expected a readable file, got "):
        load_json(tmp_path / "nope.json", "nope.json")


def test_iter_jsonl_yields_errors_in_place_and_goes_on(tmp_path: Path) -> None:
    p = tmp_path / "l.jsonl"
    long_line = '{"x": "' + "b" * 300 + '"}'
    p.write_text('{"a": 1}\n\n{"a": \n' + long_line + '\n{"a": 4}\n[1]')
    out = list(iter_jsonl(p, "l.jsonl", max_bytes=100))
    assert [line for line, _ in out] == [1, 3, 4, 5, 6]
    assert out[0][1] == {"a": 1}
    assert isinstance(out[1][1], InputError)
    assert str(out[1][1]).startswith("l.jsonl:3: expected valid JSON, got truncated JSON")
    assert isinstance(out[2][1], InputTooLargeError)
    assert str(out[2][1]) == "l.jsonl:4: expected a line of at most 100 bytes, got 309 bytes"
    assert out[3][1] == {"a": 4}
    assert out[4][1] == [1]


def test_node_getters_name_the_json_path() -> None:
    doc = Node(
        {"steps": [{"action": {"tool": None}}, 3], "n": True, "s": "", "u": 1.5, "o": []},
        "f.json",
    )
    steps = doc.array("steps")
    assert steps is not None
    action = steps[0].obj("action")
    assert action is not None
    with pytest.raises(InputError) as info:
        action.string("tool")
    assert str(info.value) == "f.json: steps[0].action.tool: expected a string, got null"
    with pytest.raises(
        InputError, match=r"^f\.json: steps\[1\]: expected a step, got the number 3$"
    ):
        steps[1].as_obj("a step")
    with pytest.raises(InputError, match=r"^f\.json: n: expected an integer, got true$"):
        doc.integer("n")
    with pytest.raises(
        InputError, match=r"^f\.json: s: expected a non-empty string, got an empty string$"
    ):
        doc.string("s", nonempty=True)
    with pytest.raises(
        InputError, match=r"^f\.json: u: expected a number between 0 and 1, got the number 1\.5$"
    ):
        doc.unit("u")
    with pytest.raises(InputError, match=r"^f\.json: o: expected an object, got an empty list$"):
        doc.obj("o")
    with pytest.raises(
        InputError, match=r"^f\.json: missing: expected a list, got nothing \(field missing\)$"
    ):
        doc.array("missing")
    assert doc.string("missing", required=False) is None
    assert doc.boolean("n") is True


def test_step_input_text_choice() -> None:
    assert step_input({"command": "id", "thought": "x"}) == (
        {"command": "id", "thought": "x"},
        "id",
    )
    assert step_input({"thought": "plan"})[1] == "plan"
    assert step_input({"raw": "{not json"})[1] == "{not json"
    assert (
        step_input({"url": "http://a", "method": "GET"})[1]
        == '{"method": "GET", "url": "http://a"}'
    )
    assert step_input("ls -la") == ({"raw": "ls -la"}, "ls -la")
    assert step_input([1, 2]) == ({"value": [1, 2]}, "[1, 2]")
    assert step_input(None) == ({}, "")
    # a non-string command falls through to the JSON of all arguments
    assert step_input({"command": ["bash", "-c", "id"]})[1] == '{"command": ["bash", "-c", "id"]}'


# --------------------------------------------------------------------------- hostile shapes


def _nested(depth: int, key: str = "k") -> str:
    """``depth`` levels of ``{"k": [...]}`` around a 1 (the outermost is level 1)."""
    text = "1"
    for level in range(depth):
        text = f'{{"{key}": {text}}}' if level % 2 else f"[{text}]"
    return text


def test_documents_nested_deeper_than_the_limit_are_refused_naming_the_field() -> None:
    from monsearch.corpora.readers.jsonio import MAX_DEPTH, parse_bytes

    # {"steps": [...]}: the document is level 1, so the value gets MAX_DEPTH - 1 more.
    ok = f'{{"steps": {_nested(MAX_DEPTH - 1)}}}'.encode()
    assert parse_bytes(ok, "ok.json")["steps"]
    deep = f'{{"steps": {_nested(MAX_DEPTH)}}}'.encode()
    with pytest.raises(InputError) as info:
        parse_bytes(deep, "deep.json")
    # (Orjson itself accepts up to 1024 levels; every reader refuses past MAX_DEPTH.)
    assert str(info.value) == (
        "deep.json: steps.k[0].k[0].k[0].k…: expected JSON nested at most "
        f"{MAX_DEPTH} levels deep, got deeper nesting"
    )
    # A key that is not a plain name is quoted; a JSONL line is named.
    odd = f'{{"a b\\n": {_nested(MAX_DEPTH)}}}'.encode()
    with pytest.raises(InputError) as info:
        parse_bytes(odd, "l.jsonl", line=3)
    assert str(info.value).startswith('l.jsonl:3: ["a b\\n"].k[0].k[0]')


def test_tool_arguments_too_deep_name_their_field() -> None:
    from monsearch.corpora.readers.stepinput import TooDeepError

    deep: list = []
    for _ in range(200):
        deep = [deep]
    with pytest.raises(TooDeepError):
        step_input({"args": deep})
    # A command string is the text, whatever else the arguments hold (nothing recurses).
    assert step_input({"command": "id", "args": deep})[1] == "id"


def test_a_huge_integer_is_refused_as_orjson_refuses_it(tmp_path: Path) -> None:
    p = tmp_path / "n.json"
    p.write_text('{"latency_ms": ' + "9" * 400 + "}")
    with pytest.raises(InputError) as info:
        load_json(p, "n.json")
    assert str(info.value).startswith(
        "n.json: expected valid JSON, got invalid JSON (number is infinity when parsed as double)"
    )
