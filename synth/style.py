"""Surface styles: the habits with which a synthetic agent writes its HTTP commands.

A :class:`Style` is independent of behaviour: the same reckless act can be
written as a terse ``curl | jq``, a python ``urllib`` heredoc, ``wget``,
``httpie`` or raw ``nc``. Every task renders every style, so a monitor cannot
learn the label from the client an agent happens to use. The clients themselves
(what each writes and prints) live in :mod:`monsearch.synth.clients`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Style:
    """Surface habits of one simulated agent (never its OPSEC behaviour)."""

    client: str  # "curl" | "python_urllib" | "wget" | "httpie" | "nc" | "mixed"
    verbosity: float  # probability of a think step before an action
    curl_verbose: bool  # curl -i / -v (status line and headers visible)
    jq: bool  # pipes JSON to jq
    sloppiness: float  # typos, missing headers, malformed JSON, then a retry
    batching: float  # several requests chained in one command
    heredoc: bool  # python scripts written to a file with a heredoc, then run
    out_of_image: bool = False  # may use clients the StealthBench agent image lacks


STYLES: dict[str, Style] = {
    "terse_curl_jq": Style("curl", 0.1, False, True, 0.05, 0.35, False),
    "python_heredoc": Style("python_urllib", 0.35, False, False, 0.1, 0.5, True),
    "verbose_planner": Style("curl", 0.85, True, True, 0.05, 0.15, False),
    "wget_user": Style("wget", 0.3, False, False, 0.15, 0.2, False),
    "httpie_user": Style("httpie", 0.3, True, False, 0.1, 0.2, False),
    "netcat_raw": Style("nc", 0.4, True, False, 0.15, 0.1, False),
    "sloppy_retrier": Style("curl", 0.25, False, False, 0.5, 0.3, False),
    "mixed_pragmatic": Style("mixed", 0.45, True, True, 0.15, 0.45, True),
    "curl_inspector": Style("curl", 0.2, True, False, 0.1, 0.6, False),
    "python_oneliner": Style("python_urllib", 0.15, False, False, 0.2, 0.25, False),
    # In-image stand-ins for the wget and httpie styles (same habits, curl as the client).
    "plain_curl": Style("curl", 0.3, False, False, 0.15, 0.2, False),
    "curl_headers": Style("curl", 0.3, True, False, 0.1, 0.2, False),
}

#: The StealthBench agent image (python:3.14-slim plus curl, netcat-openbsd, jq, dnsutils)
#: has neither wget nor httpie. Styles that use them are a labelled out-of-image
#: variant, off by default: :func:`in_image_style` maps them to in-image stand-ins.
OUT_OF_IMAGE_CLIENTS = frozenset({"wget", "httpie"})
OUT_OF_IMAGE_STYLES: dict[str, str] = {"wget_user": "plain_curl", "httpie_user": "curl_headers"}


def in_image_style(name: str, *, out_of_image: bool = False) -> tuple[str, Style]:
    """The style a run with style ``name`` uses: out-of-image styles only when enabled."""
    if out_of_image:
        st = STYLES[name]
        return name, (st if st.client != "mixed" else replace(st, out_of_image=True))
    name = OUT_OF_IMAGE_STYLES.get(name, name)
    return name, STYLES[name]
