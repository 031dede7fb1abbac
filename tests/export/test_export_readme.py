"""The exported plugin's README: its sections and tables, and every value from the run as
text.

The README is Markdown that GitHub, PyPI and editors render: a run's names, ids, hashes,
dimension names, its judge's and oracle's names are data (a run folder may come from
someone else), and must read back as text, never as a link, an image or HTML. Each test
takes the MONITOR of a real exported plugin (the session's shared export), plants values
in it, renders the README and parses it as CommonMark with GitHub's tables.
"""

from __future__ import annotations

import copy

import pytest
from export_support import shared_setup
from markup_support import PAYLOADS as REPORT_PAYLOADS
from markup_support import Page, render_markdown

from monsearch.export.readme import WIDTH, render_readme

#: Six of the reports' payloads, and code spans' backticks.
PAYLOADS = [*REPORT_PAYLOADS[:5], "x`` ` `y"]


def _render(monitor: dict) -> Page:
    return Page(render_markdown(render_readme(monitor)))


@pytest.fixture(scope="module")
def monitor(tmp_path_factory) -> dict:
    _, meta = shared_setup(tmp_path_factory)["plugins"]["seed"]
    return meta


def _plant(monitor: dict, words: list[str]) -> dict:
    m = copy.deepcopy(monitor)
    a, b, c, d, e, f = words
    m.update(run_id=a, program_id=b, monsearch_version=c, selected=True)
    m["corpus"] = {**(m.get("corpus") or {}), "content_hash": d}
    dims = m["val"]["metrics"]["bauc"]["by_dimension"]
    dims[e] = 0.5
    dims[f"credential_opsec {f}"] = 0.25
    m["escalation_band"] = {"low": 2.5, "high": "inf", "rule": a, "cost_budget": 0.3,
                            "usd_per_unit": 0.15, "escalation_rate": 0.08}
    m["verified"] = {**(m.get("verified") or {"n": 3}), "judge": b}
    m["query_caps"] = {"per_traj_cap": c, "rho": d, "oracle": e, "variants": [f, a]}
    return m


def test_readme_sections_and_tables(monitor):
    readme = render_readme(monitor)
    page = _render(monitor)
    assert page.headings == [
        monitor["package"].replace("_", "-"), "What it detects", "How well", "Command line",
        "Python", "Inspect AI", "ControlArena", "atif-scan",
        "Limits: the program is not trusted", "How it stays the same monitor",
    ]
    assert page.tags.count("table") == 2
    assert page.tags.count("th") == 7 + 3 and page.tags.count("pre") == 5
    assert monitor["strategy_hash"] in readme and "inspect score" in readme
    # Paragraphs are wrapped (tables and code blocks are not).
    prose, fenced = [], False
    for line in readme.splitlines():
        fenced ^= line.startswith("```")
        if not (fenced or line.startswith(("|", "```")) or "`" in line):
            prose.append(line)
    assert len(prose) > 50 and max(map(len, prose)) <= WIDTH


def test_readme_keeps_every_value_from_the_run_as_text(monitor):
    reference = _render(_plant(monitor, ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]))
    page = _render(_plant(monitor, PAYLOADS))
    assert page.tags == reference.tags
    assert {k for _, k, _ in page.attrs} <= {k for _, k, _ in reference.attrs}
    assert not [v for _, k, v in page.attrs if k in ("src", "href")]
    for payload in PAYLOADS:
        assert " ".join(payload.split()) in page.text, payload
    assert page.headings == reference.headings  # no forged heading
