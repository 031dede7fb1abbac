"""Read-only guarantees of the view containers."""

from __future__ import annotations

import copy
import json
import pickle

import pytest

from monsearch.views.frozen import VIEW_TYPES, FrozenDict, freeze, thaw


def sample() -> FrozenDict:
    return freeze(
        {
            "method": "POST",
            "headers": {"authorization": "Bearer x"},
            "steps": [{"index": 0, "requests": [{"method": "GET"}]}],
            "json": {"items": [1, 2], "nested": {"a": [{"b": 1}]}},
            "tags": {"b", "a"},
        }
    )


def test_view_types_are_the_concrete_container_types():
    assert (FrozenDict,) == VIEW_TYPES
    v = sample()
    assert type(v) is FrozenDict
    assert type(v["steps"]) is tuple
    assert type(v["steps"][0]) is FrozenDict
    assert type(v["json"]["nested"]["a"][0]) is FrozenDict
    assert v["tags"] == ("a", "b")


def test_reads_by_key_attribute_and_mapping_protocol():
    v = sample()
    assert v.method == v["method"] == v.get("method") == "POST"
    assert v.steps[0].requests[0].method == "GET"
    assert "headers" in v and "nope" not in v
    assert len(v) == 5
    assert sorted(v.keys()) == sorted(["method", "headers", "steps", "json", "tags"])
    assert dict(v.items())["method"] == "POST"
    assert list(iter(v)) == list(v.keys())
    assert v.get("missing", 7) == 7


def test_method_names_win_over_field_names():
    v = sample()
    body = v.json
    assert body["items"] == (1, 2)
    assert callable(body.items)
    assert dict(body.items())["items"] == (1, 2)


def test_missing_attribute_raises_attribute_error_listing_fields():
    v = sample()
    with pytest.raises(AttributeError, match="no field 'nope'"):
        _ = v.nope
    assert not hasattr(v, "nope")
    assert getattr(v, "nope", None) is None


@pytest.mark.parametrize(
    "mutate",
    [
        lambda v: v.__setitem__("method", "GET"),
        lambda v: v.__delitem__("method"),
        lambda v: setattr(v, "method", "GET"),
        lambda v: setattr(v, "new", 1),
        lambda v: delattr(v, "method"),
        lambda v: v.update({"method": "GET"}),
        lambda v: v.update(method="GET"),
        lambda v: v.pop("method"),
        lambda v: v.popitem(),
        lambda v: v.setdefault("x", 1),
        lambda v: v.clear(),
        lambda v: v.__ior__({"x": 1}),
        lambda v: setattr(v, "__class__", dict),
    ],
)
def test_every_mutation_is_refused(mutate):
    v = sample()
    before = thaw(v)
    with pytest.raises(TypeError, match="read-only"):
        mutate(v)
    assert thaw(v) == before


def test_no_instance_dict_to_hide_state_in():
    v = sample()
    assert not hasattr(v, "__dict__")
    with pytest.raises(TypeError):
        v.x = 1


def test_nested_values_are_frozen_too():
    v = sample()
    with pytest.raises(TypeError):
        v.steps[0].requests[0]["method"] = "DELETE"
    assert not hasattr(v.steps, "append")  # sequences are tuples
    with pytest.raises(TypeError):
        v.json["nested"]["a"][0]["b"] = 2


def test_copies_are_plain_and_never_leak_back():
    v = sample()
    shallow = v.copy()
    assert type(shallow) is dict
    shallow["method"] = "DELETE"
    shallow.clear()
    deep = v.to_dict()
    assert type(deep["steps"]) is list and type(deep["steps"][0]) is dict
    deep["steps"][0]["requests"][0]["method"] = "DELETE"
    deep["json"]["items"].append(3)
    assert v.method == "POST"
    assert v.steps[0].requests[0].method == "GET"
    assert v.json["items"] == (1, 2)
    # dict's own | returns a fresh plain dict
    merged = v | {"method": "PUT"}
    assert type(merged) is dict and v.method == "POST"


def test_copy_module_pickle_json_and_hash():
    v = sample()
    assert copy.copy(v) is v
    assert copy.deepcopy(v) is v
    back = pickle.loads(pickle.dumps(v))
    assert type(back) is FrozenDict and back == v
    assert json.loads(json.dumps(v))["steps"][0]["requests"][0]["method"] == "GET"
    assert hash(freeze({"a": 1, "b": (1, 2)})) == hash(freeze({"b": [1, 2], "a": 1}))
    assert {freeze({"a": 1}): 1}[freeze({"a": 1})] == 1


def test_freeze_leaves_and_unknown_objects():
    assert freeze(b"abc") == "abc"
    assert freeze(3) == 3 and freeze(None) is None and freeze(1.5) == 1.5
    assert freeze(object.__new__(type("X", (), {"__str__": lambda self: "x!"}))) == "x!"
    assert freeze(frozenset({2, 1})) == (1, 2)
