"""The helpers handed to programs: behaviour, input limits, plain return values."""

from __future__ import annotations

import math
import time

import pytest

from monsearch.sandbox import helpers as h
from monsearch.views.frozen import FrozenDict
from monsearch.views.secrets import shannon_entropy


def test_regex_helpers():
    text = "Authorization: Bearer abc.def\nuser=alice id=7 user=bob"
    assert h.re_search(r"(?i)bearer\s+\S+", text) is True
    assert h.re_search("nothing", text) is False
    assert h.re_search("x", None) is False
    assert h.re_first(r"user=(\w+)", text) == "user=alice"
    assert h.re_first(r"user=(\w+)", text, 1) == "alice"
    assert h.re_first("zzz", text) is None
    assert h.re_findall(r"user=(\w+)", text) == ("alice", "bob")
    assert h.re_findall(r"(\w+)=(\w+)", "a=1 b=2") == (("a", "1"), ("b", "2"))
    assert h.re_count("a", "banana") == 3
    assert h.re_sub(r"(\d)", r"<\1>", "a1b22") == "a<1>b<2><2>"
    assert h.re_split(r",\s*", "a, b,c") == ("a", "b", "c")
    assert h.count_matching(r"^GET", ["GET /", "POST /", "GET /x", 3, None]) == 2


def test_catastrophic_patterns_run_in_linear_time():
    evil = "a" * 200_000 + "!"
    started = time.perf_counter()
    assert h.re_search(r"(a+)+$", evil) is False
    assert h.re_search(r"(a|aa)*b", evil) is False
    assert h.re_count(r"(x+x+)+y", "x" * 100_000) == 0
    # Milliseconds in linear time; a backtracking engine would need longer than the age
    # of the universe, so a bound any machine meets still tells them apart.
    assert time.perf_counter() - started < 20


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: h.re_search("(?=a)", "a"), ValueError),  # look-ahead: not RE2
        (lambda: h.re_search(r"(a)\1", "aa"), ValueError),  # backreference
        (lambda: h.re_search("a" * 1001, "a"), ValueError),
        (lambda: h.re_search("a", "a" * (h.MAX_TEXT_CHARS + 1)), ValueError),
        (lambda: h.re_search(3, "a"), TypeError),
        (lambda: h.re_search("a", 3), TypeError),
        (lambda: h.re_sub("", "x" * 1000, "a" * 1_000_000), ValueError),  # output bound
        (lambda: h.re_sub("a", lambda m: "b", "a"), TypeError),
        (lambda: h.ngrams("abc", 0), ValueError),
        (lambda: h.ngrams("abc", 17), ValueError),
        (lambda: h.clamp("1"), TypeError),
        (lambda: h.mean([1, "2"]), TypeError),
    ],
)
def test_helpers_bound_and_check_their_inputs(call, error):
    with pytest.raises(error):
        call()


def test_pattern_cache_is_bounded_and_reused():
    h._compile.cache_clear()
    for i in range(h.PATTERN_CACHE_SIZE + 10):
        h.re_search(f"p{i}", "x")
    h.re_search("p0", "x")
    info = h._compile.cache_info()
    assert info.currsize == h.PATTERN_CACHE_SIZE
    h.re_search("p0", "x")
    assert h._compile.cache_info().hits == info.hits + 1


def test_json_parse_returns_read_only_data_or_none():
    data = h.json_parse('{"user": {"name": "a", "roles": ["x", "y"]}, "n": 1.5}')
    assert type(data) is FrozenDict and data.user.name == "a" and data.user.roles == ("x", "y")
    with pytest.raises(TypeError):
        data["n"] = 2  # type: ignore[index]
    assert h.json_parse("not json") is None
    assert h.json_parse("[NaN]") is None  # non-standard constants refused
    assert h.json_parse("[" * 100_000 + "]" * 100_000) is None  # too deep: None, no crash
    assert h.json_parse("") is None


def test_url_parse():
    u = h.url_parse("https://User:pw@Evil.example.com/p/a?x=1&x=2&y=#frag")
    assert type(u) is FrozenDict
    assert (u.scheme, u.host, u.port, u.path, u.user, u.fragment) == (
        "https",
        "evil.example.com",
        443,
        "/p/a",
        "User",
        "frag",
    )
    assert u.query == {"x": "1", "y": ""} and u.query_all["x"] == ("1", "2")
    assert h.url_parse("app:5000/api")["port"] == 5000
    assert h.url_parse("http://app:99999/") is None
    assert h.url_parse("") is None


def test_entropy_tokens_ngrams_and_numbers():
    assert h.entropy("") == 0.0
    assert h.entropy("abcd") == pytest.approx(2.0)
    assert h.entropy("sk_live_4f9a8b7c6d5e") == pytest.approx(
        shannon_entropy("sk_live_4f9a8b7c6d5e")
    )
    assert h.tokens("GET /api/Users?id=1") == ("get", "api", "users", "id", "1")
    assert h.tokens("A b", lower=False) == ("A", "b")
    assert h.ngrams("abcd", 3) == ("abc", "bcd")
    assert h.ngrams(("a", "b", "c"), 2) == (("a", "b"), ("b", "c"))
    assert h.clamp(2.5) == 1.0 and h.clamp(-1, -0.5, 0.5) == -0.5
    assert h.sigmoid(0) == 0.5 and h.sigmoid(-1e6) == 0.0 and h.sigmoid(1e6) == 1.0
    assert h.log1p(math.e - 1) == pytest.approx(1.0)
    assert h.safe_div(1, 0, -1.0) == -1.0 and h.safe_div(1, 4) == 0.25
    assert h.mean([]) == 0.0 and h.mean([1, 2, 3]) == 2.0


def test_math_namespace_is_read_only_and_not_the_module():
    assert h.MATH.sqrt(9) == 3.0 and h.MATH.pi == math.pi
    assert type(h.MATH) is FrozenDict
    for name in ("factorial", "comb", "perm"):  # unbounded big-int work stays out
        assert name not in h.MATH
    with pytest.raises(TypeError):
        h.MATH["sqrt"] = None  # type: ignore[index]


def test_reference_table_lists_every_helper():
    ref = h.helper_reference()
    for name in h.HELPERS:
        assert name in ref
    assert "RE2" in ref


_PATTERNS = (
    "", "a*", "x*", "(a)|(b)", "(a)(b)?", "(x)?y*", "((a)|b)+", r"\b", "$", "^", r"(?m)^\s*",
    "[^/]*", r"/[0-9]+|/[0-9a-fA-F-]{8,}", r'"id"\s*:\s*(\d+)', r"(?i)(test|qa)", ".", "(.)(.)",
    "é", r"(?s).*", r"\d+",
)  # fmt: skip
_TEXTS = (
    "", "a", "aaa", "abcab", "aab bba", "/api/users/123/x/deadbeef-1234", 'x {"id": 12} y',
    "x\ny\n", "test QA tmp", "héllo wörld é", "ééa",
)  # fmt: skip


def _outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except Exception as exc:  # the same exception type and message on both paths
        return ("raised", type(exc).__name__, str(exc))


def test_regex_fast_path_matches_the_wrapper(monkeypatch):
    """ASCII texts skip google-re2's Python wrapper; results must be the wrapper's."""
    assert h._UNANCHORED is not None  # the real engine: the fast path is taken
    calls = [
        (name, args)
        for p in _PATTERNS
        for t in _TEXTS
        for name, args in (
            ("re_search", (p, t)),
            ("re_first", (p, t)),
            ("re_first", (p, t, 1)),
            ("re_first", (p, t, 3)),
            ("re_findall", (p, t)),
            ("re_count", (p, t)),
            ("re_sub", (p, "", t)),
            ("re_sub", (p, "X", t)),
            ("re_sub", (p, r"<\1>", t)),
            ("re_split", (p, t)),
            ("count_matching", (p, _TEXTS)),
        )
    ]
    calls += [
        ("re_sub", ("a", "X" * 1000, "a" * 10_000)),  # output cap
        ("re_sub", ("", "XY", "b" * 100)),
        ("re_count", ("", "b" * 100_000)),  # match cap
        ("re_findall", ("a", "a" * 100_001)),
    ]
    h._memo.clear()
    fast = [_outcome(getattr(h, name), *args) for name, args in calls]
    remembered = [_outcome(getattr(h, name), *args) for name, args in calls]
    monkeypatch.setattr(h, "_UNANCHORED", None)  # what a plugin without google-re2 takes
    monkeypatch.setattr(h, "MEMO_MAX_TEXT", -1)  # and nothing remembered
    slow = [_outcome(getattr(h, name), *args) for name, args in calls]
    assert fast == slow
    assert remembered == slow


def test_helper_memo_is_bounded():
    h._memo.clear()
    for i in range(h.MEMO_SIZE + 10):
        assert h.re_sub("[0-9]+", "#", f"/a/{i}") == "/a/#"
        assert h.tokens(f"Ab {i}") == ("ab", str(i))
    assert 0 < len(h._memo) <= h.MEMO_SIZE
    long = "x" * (h.MEMO_MAX_TEXT + 1)
    before = len(h._memo)
    assert h.re_count("x", long) == len(long)
    assert len(h._memo) == before  # long texts are not kept
