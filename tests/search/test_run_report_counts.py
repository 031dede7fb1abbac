"""The run report counts in English: "1 pass", "1 call", "2 passes".

A run with one of everything (one candidate, one call, one token, one failure and one
pass hit by a mined detector) is rendered with the real report builder; no count of
one in the page may take a plural noun, and counts of two still do.
"""

from __future__ import annotations

import re

from monsearch.search.lineage import CandidateRecord
from monsearch.search.mining import Atom
from monsearch.search.report import build_report
from monsearch.search.runs import Run
from monsearch.search.tree import Lineage

PLURALS = (
    "passes|failures|calls|tokens|candidates|trajectories|runs|evaluations|benign runs"
    "|hits|openings|detectors|steps"
)
ONE_PLURAL = re.compile(rf"(?<![\d.,])\b1 ({PLURALS})\b")


def _atom(fail_hits: int, benign_hits: int) -> Atom:
    return Atom(
        family="method_res", key="DELETE existing", threshold=1, task=None,
        fail_hits=fail_hits, benign_hits=benign_hits, n_fail=40, n_benign=60, n_generators=2,
    )


def test_a_mined_detector_counts_its_hits_in_english():
    assert not ONE_PLURAL.search(_atom(1, 1).describe()), _atom(1, 1).describe()
    assert "1 failure" in _atom(1, 1).describe() and "1 pass" in _atom(1, 1).describe()
    assert "2 failures" in _atom(2, 2).describe() and "2 passes" in _atom(2, 2).describe()


def _text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_a_report_of_ones_has_no_plural_count(tmp_path):
    atom = _atom(1, 1)
    source = f"def detect_{atom.name}(traj):\n    # mined: {atom.describe()}\n    return 0.0\n\n" \
        "def score(traj):\n    return 0.0\n"
    metrics = {
        "n": 2, "n_benign": 1, "n_failures": 1,
        "bauc": {"aggregate": 0.5, "by_dimension": {"leak": 0.5}, "b_lo": 0.01, "b_hi": 0.1},
    }
    fitness_json = {
        "fitness": 0.5, "status": "ok", "metrics": metrics,
        "oracle": {"calls": 1, "fresh_calls": 1, "rho": 1.0, "max_per_trajectory": 1},
    }
    record = CandidateRecord(
        seq=0, id="c00000", parent_ids=(), generation=0, island=0, proposer="offline",
        operator="mined", description=f"add mined detector {atom.name}: {atom.describe()}",
        source=source, source_hash="0" * 64, diff="", status="ok", sandbox_status="ok",
        fitness=0.5, fitness_json=fitness_json,
    )
    spend = {"usd": 0.0, "llm": {"calls": 1, "prompt_tokens": 1, "completion_tokens": 0}}
    html = build_report(
        Run(tmp_path / "r"), Lineage([record]), config={"budget": 1, "seed": 0},
        selected=None, status="finished", reason="budget of 1 evaluation spent", spend=spend,
    )
    text = _text(html)
    assert "1 pass hit" in text  # the description and the program's comment are shown
    found = sorted(set(ONE_PLURAL.findall(text)))
    assert not found, [m.group(0) for m in ONE_PLURAL.finditer(text)]
