"""Calibration of the synthetic corpus against StealthBench's per-model table.

Two layers. (1) The calibration's exact expectations (no sampling) must meet
the paper's numbers tightly. (2) A sampled mid-size corpus (3,000 runs) must
realise those expectations within sampling noise. The band for (2) is three
binomial standard errors of each persona's count, ``3 * sqrt(p (1 - p) / n)``
(for Stealth@Solve: three standard errors of a mean of panel scores), on top of
the calibration's own (tiny) offset from the target. Three SE is wider than the
4-point band of the 15,000-run default corpus for the small personas (Nemotron
has ~270 runs here: SE of its solve rate ~3 points); the default corpus itself
is checked against the 4-point band by ``bench/synth_corpus.py``.
"""

from __future__ import annotations

import math
import statistics

import pytest

from monsearch.corpora.stats import corpus_stats
from monsearch.synth.calibration import CELLS, get_calibration
from monsearch.synth.generate import generate
from monsearch.synth.personas import (
    AGREEMENT_TARGET,
    OVERALL_TARGET,
    PERSONAS,
    TASK_DIFFICULTY,
)

MID = 3000
Z = 3.0


@pytest.fixture(scope="module")
def mid() -> list:
    return generate(MID, seed=11)


@pytest.fixture(scope="module")
def stats(mid: list) -> dict:
    return corpus_stats(mid)


def test_expected_rates_hit_paper_per_persona() -> None:
    cal = get_calibration()
    for p in PERSONAS:
        e = cal.expected_persona(p.generator)
        assert e["solve_pct"] == pytest.approx(p.solve_pct, abs=0.05), p.name
        assert e["safe_pct"] == pytest.approx(p.safe_pct, abs=0.3), p.name
        assert e["reckless_pct"] == pytest.approx(p.reckless_pct, abs=0.3), p.name
        assert abs(e["stealth_at_solve"] - p.stealth_at_solve) <= 0.035, p.name


def test_expected_overall_and_agreement() -> None:
    e = get_calibration().expected_overall()
    for key, target in OVERALL_TARGET.items():
        assert e[key] == pytest.approx(target, abs=0.3), key
    assert abs(e["fleiss_kappa"] - AGREEMENT_TARGET["fleiss_kappa"]) <= 0.02
    assert abs(e["unanimous_pct"] - AGREEMENT_TARGET["unanimous_pct"]) <= 2.0


def test_expected_paper_tasks() -> None:
    cal = get_calibration()
    for task, d in TASK_DIFFICULTY.items():
        e = cal.expected_task(task)
        if "solve" in d.paper:
            assert e["solve_pct"] == pytest.approx(100 * d.solve, abs=0.1), task
        if "fail_given_solve" in d.paper:
            paper_safe = 100 * d.solve * (1 - d.fail_given_solve)
            assert abs(e["safe_pct"] - paper_safe) <= 2.5, task


def test_calibration_cells_are_probabilities() -> None:
    cal = get_calibration()
    for (gen, task), pt in cal.cells.items():
        assert sum(pt.cell_prob(c) for c in CELLS) == pytest.approx(1.0)
        for cell in CELLS:
            mix = pt.mixture[cell]
            if mix:
                assert sum(w for _, w in mix) == pytest.approx(1.0)
                assert all((m.solved, m.failure) == cell for m, _ in mix)
            else:
                assert pt.cell_prob(cell) == 0.0, (gen, task, cell)


def _band(p: float, n: int) -> float:
    return Z * math.sqrt(p * (1 - p) / n)


def test_sampled_corpus_realises_calibration(mid: list, stats: dict) -> None:
    cal = get_calibration()
    for p in PERSONAS:
        g = stats["generators"][p.generator]
        n = g["runs"]
        e = cal.expected_persona(p.generator)
        for key, exp_key, target in (
            ("solve_rate", "solve_pct", p.solve_pct),
            ("safe_success_rate", "safe_pct", p.safe_pct),
            ("reckless_rate", "reckless_pct", p.reckless_pct),
        ):
            band = 100 * _band(target / 100, n) + abs(e[exp_key] - target)
            assert abs(100 * g[key] - target) <= band, (p.name, key, 100 * g[key], target, band)
        scores = [t.label.stealth_score for t in mid if t.generator == p.generator and t.is_solved]
        se = statistics.pstdev(scores) / math.sqrt(len(scores))
        band = Z * se + abs(e["stealth_at_solve"] - p.stealth_at_solve)
        assert abs(g["stealth_at_solve"] - p.stealth_at_solve) <= band, p.name


def test_sampled_overall_and_agreement(stats: dict) -> None:
    o = stats["overall"]
    for key, tkey in (
        ("solve_rate", "solve_pct"),
        ("safe_success_rate", "safe_pct"),
        ("reckless_rate", "reckless_pct"),
    ):
        target = OVERALL_TARGET[tkey]
        assert abs(100 * o[key] - target) <= 4.0, key  # 3 SE here is under 3 points
    ag = stats["agreement"]
    assert abs(ag["fleiss_kappa"] - AGREEMENT_TARGET["fleiss_kappa"]) <= 0.04
    assert abs(100 * ag["unanimous_rate"] - AGREEMENT_TARGET["unanimous_pct"]) <= 4.0
    assert ag["complete_panels"] == MID
    # Pairwise agreement is high but not perfect for every pair of judges.
    for pair in ag["cohen_kappa"]:
        assert 0.7 < pair["kappa"] < 0.95


def test_oracle_is_an_independent_judge(mid: list, stats: dict) -> None:
    (rec,) = stats["oracle"].values()
    # About as good as a panel member, never a copy of the label.
    assert 0.88 <= rec["accuracy"] <= 0.985
    disagree = [t for t in mid if t.oracle[0].is_failure != t.label.is_failure]
    assert len(disagree) >= 30
    assert any(t.oracle[0].stealth_score not in {v.stealth_score for v in t.panel} for t in mid)


def test_paper_task_difficulty_visible(stats: dict) -> None:
    tasks = stats["tasks"]
    assert tasks["graphql-batch-otp"]["solve_rate"] < 0.15
    cb = tasks["callback-listener"]
    assert cb["safe_success_rate"] < 0.05 and cb["solve_rate"] > 0.55
    ad = tasks["adtech-admin"]
    assert ad["reckless_rate"] > 0.55 and ad["safe_success_rate"] < 0.15


def test_labels_are_noisy_majority_not_ground_truth(mid: list) -> None:
    agree = sum(t.label.is_failure == t.meta["ground_truth_failure"] for t in mid) / len(mid)
    assert 0.85 < agree < 0.99

    # Hard cases are where the panel disagrees with the truth more often.
    def err(ts: list) -> float:
        return sum(t.label.is_failure != t.meta["ground_truth_failure"] for t in ts) / len(ts)

    hard = [t for t in mid if t.meta["hard"]]
    easy = [t for t in mid if not t.meta["hard"]]
    assert err(hard) > 2 * err(easy)
