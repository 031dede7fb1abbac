"""Each fast path of the view build gives exactly what the plain path it skips gives.

The exported plugin builds a view per new trajectory, so these paths exist for speed;
a difference would move a frozen monitor's scores. Each test compares a fast path with
the reference computation it replaces, on generated inputs aimed at its edge cases.
"""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monsearch.corpora.model import Step, Trajectory
from monsearch.synth.scenario import REGISTRY
from monsearch.synth.style_mix import style_mix
from monsearch.views import build as view_module
from monsearch.views import infra, request_proto, run_context, secrets, shell_words

FAST = settings(max_examples=400, deadline=None, derandomize=True)


# --------------------------------------------------------------------------- timestamps

_STAMP = st.one_of(
    st.none(),
    st.just(""),
    st.just("not a time"),
    st.builds(
        lambda dt, frac, zone: dt.strftime("%Y-%m-%dT%H:%M:%S") + frac + zone,
        st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2400, 12, 31)),
        st.sampled_from(["", ".5", ".123", ".123456", ".000001", ".999999"]),
        st.sampled_from(["+00:00", "Z", "+02:00", "-05:30", "", "+14:00"]),
    ),
    st.sampled_from(
        [  # the span's edges: 2**30 and 2**31 seconds since the epoch
            "2004-01-10T13:37:03+00:00",
            "2004-01-10T13:37:04+00:00",
            "2038-01-19T03:14:07.999999+00:00",
            "2038-01-19T03:14:08+00:00",
        ]
    ),
)


@FAST
@given(st.lists(_STAMP, max_size=8))
def test_relative_times_match_the_per_step_rounding(stamps: list[str | None]) -> None:
    steps = tuple(Step(i, "bash", "true", "", {}, ts, None) for i, ts in enumerate(stamps))
    fast = run_context._relative_times(steps)
    slow = run_context._relative_times_slow(steps)
    assert [repr(x) for x in fast] == [repr(x) for x in slow]


# --------------------------------------------------------------------------- secrets

_SECRET_PIECES = st.sampled_from(
    [
        "FLAG{", "}", "eyJ", ".", "sk_live_", "pk_test_", "AKIA", "ghp_", "xoxb-", "AIza", "pub",
        "=", "==", "/", "+", "-", "_", "~", "{", " ", "\n", "\t", "Bearer ", "\"", ":", "@",
        "0123456789abcdef", "ABCDEFGHIJKLMNOP", "Zx9Qw8Er7Ty6Ui5O", "deadbeefcafe", "a1",
    ]
)  # fmt: skip


@FAST
@given(st.lists(_SECRET_PIECES, max_size=30).map("".join))
def test_one_scan_over_joined_runs_finds_what_a_scan_per_run_finds(text: str) -> None:
    runs = secrets._runs(text)
    per_run = [(m.lastgroup, m.group()) for r in runs for m in secrets._SECRET_RE.finditer(r)]
    joined = [(m.lastgroup, m.group()) for m in secrets._SECRET_RE.finditer(" ".join(runs))]
    assert joined == per_run


def _scan_whole_text(text: str) -> tuple[tuple[str, str], ...]:
    """``secrets.scan``'s definition: bearer tokens, then one pattern scan over all the
    text's runs joined by a blank, one kind per value."""
    if len(text) < 15:
        return ()
    out: list[tuple[str, str]] = []
    if "Bearer " in text:
        for m in secrets._BEARER.finditer(text):
            value = m.group(1)
            if value.startswith("eyJ") and value.count(".") == 2:
                out.append(("jwt", value))
            elif not value.startswith("$"):
                out.append(("bearer", value))
    for m in secrets._SECRET_RE.finditer(" ".join(secrets._runs(text))):
        kind, value = m.lastgroup, m.group()
        if kind == "token":
            kind = secrets.classify_token(value)
            if kind is None:
                continue
        out.append((kind, value))
    seen: set[str] = set()
    return tuple(kv for kv in out if not (kv[1] in seen or seen.add(kv[1])))


@FAST
@given(
    st.lists(
        st.one_of(_SECRET_PIECES, st.sampled_from(["\u00a0", "\x1c", "\u2028", "\x00", "\r"])),
        max_size=40,
    ).map("".join)
)
def test_word_by_word_scan_finds_what_a_whole_text_scan_finds(text: str) -> None:
    secrets.scan.cache_clear()
    assert secrets.scan(text) == _scan_whole_text(text)
    # Words already seen (cached per word) give the same again inside another text.
    assert secrets.scan(text + " " + text) == _scan_whole_text(text + " " + text)


# --------------------------------------------------------------------------- status codes


def _statuses_by_full_scan(observation: str) -> list[tuple[int, int]]:
    """``infra.statuses_in`` with every pattern tried at every position."""
    found = []
    for needle, pattern in infra._STATUS_PATTERNS:
        if needle in observation:
            for m in pattern.finditer(observation):
                code = int(m.group(1))
                if 100 <= code <= 599:
                    found.append((m.start(), code, needle == "<title>"))
    return infra.merge_statuses(found)


_STATUS_PIECES = st.sampled_from(
    [
        "HTTP/1.1 ", "HTTP/2 ", "< ", "<", "200", "404", "503", "99", "\n", "\r\n", " ", "x",
        "Status", "status", "tatus", "_code", " Code", ": ", "=", "HTTP/", "< HTTP/1.0 301",
        "<title>500 Err</title>", "ERROR 403", "awaiting response... 200",
    ]
)  # fmt: skip


@FAST
@given(st.lists(_STATUS_PIECES, max_size=30).map("".join))
def test_status_scan_near_needles_matches_a_full_scan(text: str) -> None:
    assert infra.statuses_in(text) == _statuses_by_full_scan(text)


# --------------------------------------------------------------------------- shell quoting

_DQ_PIECES = st.sampled_from(
    ['\\"', "\\\\", "\\$", "\\`", "\\\n", "\\n", "\\x", "a", "{", '"', "'", " ", "\\"]
)


@FAST
@given(st.lists(_DQ_PIECES, max_size=20).map("".join))
def test_double_quote_unescaping_matches_the_escape_regex(text: str) -> None:
    if not shell_words._DQ_RUN.fullmatch(text):
        return  # outside the function's contract (a lone trailing backslash)
    assert shell_words._dq_unescape(text) == shell_words._DQ_ESCAPE.sub(r"\1", text)


# --------------------------------------------------------------------------- whole views


@pytest.fixture(scope="module")
def trajectories() -> list[Trajectory]:
    return style_mix(3 * len(REGISTRY), seed=11)


def test_request_secret_shortcut_changes_no_view(trajectories, monkeypatch) -> None:
    view_module.clear_caches()
    fast = [repr(v) for v in view_module.build_views(trajectories)]
    assert any("'secrets': (FrozenDict" in v for v in fast)  # the runs do find secrets
    view_module.clear_caches()
    monkeypatch.setattr(request_proto, "_quiet_haystack", lambda _p: None)
    slow = [repr(v) for v in view_module.build_views(trajectories)]
    view_module.clear_caches()
    assert fast == slow


def test_relative_times_of_generated_runs_match(trajectories) -> None:
    for t in trajectories:
        fast = run_context._relative_times(t.steps)
        assert [repr(x) for x in fast] == [
            repr(x) for x in run_context._relative_times_slow(t.steps)
        ]
