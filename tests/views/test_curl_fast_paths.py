"""The shortcuts of curl request extraction and ``-w`` reading give what the general
code gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from monsearch.views import http_curl, infra


def test_each_lone_option_reads_as_the_general_tests_read_it(monkeypatch) -> None:
    tokens = sorted(http_curl._CURL_LONE)
    fast = [http_curl._curl_reads(["curl", tok, "V", "-s", "W"]) for tok in tokens]
    monkeypatch.setattr(http_curl, "_CURL_LONE", {})
    slow = [http_curl._curl_reads(["curl", tok, "V", "-s", "W"]) for tok in tokens]
    assert fast == slow


_WO_PIECES = st.sampled_from(
    [
        "200", "404", "1", "12", "\u0661\u0662\u0663", "\n", " ", "\t", "\x1c", "\u00a0",
        "\u2028", "x", "}", "OK", "HTTP/1.1 ", '{"a":1}', "\r\n",
    ]
)  # fmt: skip
_WO_FORMATS = st.sampled_from(
    ["%{http_code}", "\\n%{http_code}\\n", "\\n%{http_code}", " %{http_code}", "code=%{http_code}"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_WO_PIECES, max_size=40).map("".join), _WO_FORMATS)
def test_write_out_scans_from_the_cut_find_what_full_scans_find(text: str, fmt: str) -> None:
    fast = (infra.write_out_status(text, fmt), infra.strip_write_out(text, fmt))
    saved = infra._CODE_ONLY
    infra._CODE_ONLY = frozenset()
    try:
        slow = (infra.write_out_status(text, fmt), infra.strip_write_out(text, fmt))
    finally:
        infra._CODE_ONLY = saved
    assert fast == slow
