"""Simulated judges: wording, determinism, and the sampler matching its exact expectations."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from monsearch.corpora.model import TASK_DIMENSION, aggregate_panel, normalise_dimension
from monsearch.synth.judges import (
    ORACLE_JUDGE,
    PANEL_JUDGES,
    judge_trajectory,
    mode_judging,
)
from monsearch.synth.scenario import REGISTRY


def test_every_wording_maps_to_its_dimension() -> None:
    for judge in (*PANEL_JUDGES, ORACLE_JUDGE):
        assert judge.vocabulary
        for dim, words in judge.vocabulary.items():
            for text in words:
                assert normalise_dimension(text) == dim, (judge.judge, text)


def test_panel_ids_are_the_papers_and_distinct_profiles() -> None:
    assert [j.judge for j in PANEL_JUDGES] == [
        "openai/gpt-5.6-sol",
        "z-ai/glm-5.2",
        "moonshotai/kimi-k3",
    ]
    assert ORACLE_JUDGE.judge not in {j.judge for j in PANEL_JUDGES}
    assert len({(j.skill, j.fail_bias) for j in PANEL_JUDGES}) == 3
    # Biases on both sides: one judge leans toward pass, one toward fail.
    assert min(j.fail_bias for j in PANEL_JUDGES) < 0 < max(j.fail_bias for j in PANEL_JUDGES)


def test_judging_is_deterministic() -> None:
    mode = REGISTRY["project-board"].modes[0]
    a = judge_trajectory("project-board", mode, random.Random(5))
    b = judge_trajectory("project-board", mode, random.Random(5))
    assert a == b


def _modes() -> list:
    """One clear and the most ambiguous failure and benign mode over all tasks."""
    all_modes = [(t, m) for t, s in REGISTRY.items() for m in s.modes]
    picks = []
    for failure in (True, False):
        side = [tm for tm in all_modes if tm[1].failure is failure]
        picks.append(min(side, key=lambda tm: tm[1].ambiguity))
        picks.append(max(side, key=lambda tm: tm[1].ambiguity))
    return picks


@pytest.mark.parametrize(("task", "mode"), _modes(), ids=lambda x: getattr(x, "name", x))
def test_sampler_matches_exact_expectations(task: str, mode) -> None:
    n = 4000
    rng = random.Random(123)
    flips = unanimous = oracle_agree = 0
    scores = []
    for _ in range(n):
        panel, (oracle,) = judge_trajectory(task, mode, rng)
        label = aggregate_panel(panel, task)
        flips += label.is_failure != mode.failure
        unanimous += label.unanimous
        oracle_agree += oracle.is_failure == label.is_failure
        scores.append(label.stealth_score)
    exp = mode_judging(task, mode)

    def close(measured: float, p: float) -> bool:
        return abs(measured / n - p) <= 4 * math.sqrt(max(p * (1 - p), 1e-4) / n) + 1e-3

    assert close(flips, exp.label_flip), (flips / n, exp.label_flip)
    assert close(unanimous, exp.unanimous), (unanimous / n, exp.unanimous)
    assert close(oracle_agree, exp.oracle_agrees_majority)
    # Rounding to two decimals and clamping at 0.49/0.51 move the mean a little.
    assert statistics.fmean(scores) == pytest.approx(exp.panel_score, abs=0.02)


def test_hard_cases_split_the_panel_more() -> None:
    clear = [(t, m) for t, s in REGISTRY.items() for m in s.modes if m.ambiguity <= 0.1]
    murky = [(t, m) for t, s in REGISTRY.items() for m in s.modes if m.ambiguity >= 0.4]
    assert clear and murky
    u_clear = statistics.fmean(mode_judging(t, m).unanimous for t, m in clear)
    u_murky = statistics.fmean(mode_judging(t, m).unanimous for t, m in murky)
    assert u_murky < u_clear - 0.1


def test_wrong_votes_are_less_confident_and_dimension_words_vary() -> None:
    task = "storefront-upload"
    mode = max(REGISTRY[task].modes, key=lambda m: m.ambiguity)
    rng = random.Random(9)
    right, wrong, words = [], [], set()
    for _ in range(3000):
        panel, _ = judge_trajectory(task, mode, rng)
        for v in panel:
            (wrong if v.is_failure != mode.failure else right).append(v.confidence)
            words.add(v.dimension)
            assert normalise_dimension(v.dimension, task) in set(TASK_DIMENSION.values())
    assert wrong and statistics.fmean(wrong) < statistics.fmean(right) - 0.15
    assert len(words) >= 4
