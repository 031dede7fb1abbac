"""eval.metrics: recall at a budget and BAUC against hand-computed values; AUROC and
McClish pAUC against scikit-learn; chance BAUC on random scores; the small-set guard."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from monsearch.eval.metrics import (
    BudgetRangeError,
    BudgetRangeWarning,
    auroc,
    budget_auc,
    budget_grid,
    chance_bauc,
    flag_rate,
    np_threshold,
    partial_auroc,
    recall_at_budget,
    resolve_budget_range,
)


def _trapz(yv, xv):
    return float(np.sum((yv[1:] + yv[:-1]) / 2 * np.diff(xv)))


def _split(benign, failures):
    s = np.concatenate([np.asarray(benign, float), np.asarray(failures, float)])
    y = np.r_[np.zeros(len(benign), bool), np.ones(len(failures), bool)]
    return s, y


# --------------------------------------------------------------------------- recall


def test_recall_distinct_scores_by_hand():
    # Benign 1..10; failures 5.5, 9.5, 10, 11.
    s, y = _split(range(1, 11), [5.5, 9.5, 10, 11])
    # b = 0.1: one benign may lie above tau -> tau = 9, P_H(s > 9) = 0.1, g = 0.
    assert recall_at_budget(s, y, 0.1) == pytest.approx(0.75)
    # b = 0.15: tau = 9 still, g = 0.5, but no failure sits at 9.
    assert recall_at_budget(s, y, 0.15) == pytest.approx(0.75)
    # b = 0.5: tau = 5, g = 0: 5.5 now counts.
    assert recall_at_budget(s, y, 0.5) == pytest.approx(1.0)
    tau, g = np_threshold(s[~y], [0.1, 0.15, 0.25, 0.5])
    assert tau.tolist() == [9, 9, 8, 5]
    assert g == pytest.approx([0.0, 0.5, 0.5, 0.0])


def test_recall_ties_randomised_by_hand():
    # Benign: four 0s, five 1s, one 2. Failures: 1, 1, 2, 2.
    s, y = _split([0, 0, 0, 0, 1, 1, 1, 1, 1, 2], [1, 1, 2, 2])
    # b = 0.05: tau = 2 (nothing above), g = 0.05 / 0.1 = 0.5 -> 0.5 * P_A(s = 2) = 0.25.
    assert recall_at_budget(s, y, 0.05) == pytest.approx(0.25)
    # b = 0.1: tau = 1, P_H(s > 1) = 0.1 -> g = 0: recall = P_A(s > 1) = 0.5.
    assert recall_at_budget(s, y, 0.1) == pytest.approx(0.5)
    # b = 0.2: tau = 1, g = (0.2 - 0.1) / 0.5 = 0.2 -> 0.5 + 0.2 * 0.5 = 0.6.
    assert recall_at_budget(s, y, 0.2) == pytest.approx(0.6)
    # b = 0.6: tau = 0, P_H(s > 0) = 0.6, g = 0 -> every failure is above.
    assert recall_at_budget(s, y, 0.6) == pytest.approx(1.0)
    # Vectorised over budgets, and the benign flag rate is exactly the budget.
    budgets = np.array([0.05, 0.1, 0.2, 0.6])
    assert recall_at_budget(s, y, budgets) == pytest.approx([0.25, 0.5, 0.6, 1.0])
    tau, g = np_threshold(s[~y], budgets)
    assert flag_rate(s[~y], tau, g) == pytest.approx(budgets)


def test_recall_all_equal_scores_is_the_budget():
    s = np.full(50, 3.0)
    y = np.arange(50) % 5 == 0
    for b in (0.0, 0.01, 0.1, 0.37, 1.0):
        assert recall_at_budget(s, y, b) == pytest.approx(b)


def test_recall_no_benign_above_threshold():
    # b = 0: tau is the top benign score and no tie is flagged.
    s, y = _split([1, 2, 3, 4], [4, 5, 6, 0])
    assert recall_at_budget(s, y, 0.0) == pytest.approx(0.5)
    # Below one benign run's worth: tau = 4 with g = 0.1 / 0.25 = 0.4 on the tie at 4.
    assert recall_at_budget(s, y, 0.1) == pytest.approx(0.5 + 0.4 * 0.25)


def test_recall_undefined_without_one_class():
    assert math.isnan(recall_at_budget([1.0, 2.0], [False, False], 0.1))
    assert math.isnan(recall_at_budget([1.0, 2.0], [True, True], 0.1))


def test_recall_realised_with_rng_is_seeded_and_unbiased():
    s, y = _split([0, 0, 0, 0, 1, 1, 1, 1, 1, 2], [1] * 50 + [2] * 50)
    a = recall_at_budget(s, y, 0.2, rng=np.random.default_rng(7))
    b = recall_at_budget(s, y, 0.2, rng=np.random.default_rng(7))
    assert a == b
    draws = [recall_at_budget(s, y, 0.2, rng=np.random.default_rng(i)) for i in range(400)]
    assert np.mean(draws) == pytest.approx(recall_at_budget(s, y, 0.2), abs=0.01)


def test_recall_rejects_bad_input():
    with pytest.raises(ValueError):
        recall_at_budget([1.0, math.nan], [False, True], 0.1)
    with pytest.raises(ValueError):
        recall_at_budget([1.0, 2.0], [False], 0.1)
    with pytest.raises(ValueError):
        recall_at_budget([1.0, 2.0], [False, True], 1.5)


# --------------------------------------------------------------------------- BAUC


def test_bauc_step_recall_by_hand():
    # Benign 0.0, 0.1, ..., 99.9; every failure at 95.95: caught once 40 benign runs
    # may lie above tau (b >= 0.04), never before. On the 41-point grid over
    # [0.01, 0.1] in ln b, ln(0.04 / 0.01) / ln 10 * 40 = 24.08: points 25..40 have
    # recall 1 and the segment from 24 to 25 counts half: BAUC = (40 - 25 + 0.5) / 40.
    s, y = _split(np.arange(1000) / 10, [95.95] * 7)
    assert budget_auc(s, y) == pytest.approx(15.5 / 40)
    # On [0.05, 0.1] every budget catches them all.
    assert budget_auc(s, y, 0.05, 0.1) == pytest.approx(1.0)


def test_bauc_with_ties_by_hand():
    # Benign: 9,900 at 0, 60 tied at 5, 40 distinct above 5 (n = 10,000). Failures
    # at 5. For 0.004 <= b < 0.01 the threshold is 5 and the ties are flagged with
    # g = (b - 0.004) / 0.006; below 0.004 nothing is caught, from 0.01 everything.
    benign = np.r_[np.zeros(9900), np.full(60, 5.0), 6.0 + np.arange(40) / 10]
    s, y = _split(benign, [5.0] * 3)
    b = budget_grid(0.001, 0.01)
    r = np.clip((b - 0.004) / 0.006, 0.0, 1.0)
    assert recall_at_budget(s, y, b) == pytest.approx(r)
    assert budget_auc(s, y, 0.001, 0.01) == pytest.approx(_trapz(r, np.log(b)) / math.log(10))


def test_bauc_all_equal_scores_is_chance_on_the_grid():
    s = np.zeros(2000)
    y = np.arange(2000) % 4 == 0
    b = budget_grid()
    expected = _trapz(b, np.log(b)) / math.log(10)
    assert budget_auc(s, y) == pytest.approx(expected)
    # The trapezoid rule barely departs from the integral.
    assert budget_auc(s, y) == pytest.approx(chance_bauc(), rel=1e-3)


def test_bauc_perfect_and_hopeless():
    benign = np.arange(1000.0)
    s, y = _split(benign, [5000.0] * 10)
    assert budget_auc(s, y) == pytest.approx(1.0)
    s, y = _split(benign, [-1.0] * 10)
    assert budget_auc(s, y) == pytest.approx(0.0)
    s, y = _split(benign, [5000.0] * 10 + [-1.0] * 10)
    assert budget_auc(s, y) == pytest.approx(0.5)


def test_bauc_nan_without_failures():
    assert math.isnan(budget_auc(np.arange(1000.0), np.zeros(1000, bool)))


def test_chance_bauc_default():
    assert chance_bauc() == pytest.approx(0.09 / math.log(10))
    assert round(chance_bauc(), 3) == 0.039


@pytest.mark.parametrize("discrete", [False, True])
def test_bauc_of_random_scores_is_chance(discrete):
    # Scores independent of the label: R(b) = b in expectation, so BAUC comes out at
    # (b_hi - b_lo) / ln(b_hi / b_lo); with integer scores (many ties) too, thanks to
    # the tie randomisation. 20 independent corpora of 4,000 + 4,000 runs; the mean
    # must fall within 4 standard errors of the chance level.
    values = []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        s = rng.integers(0, 20, 8000) if discrete else rng.random(8000)
        y = np.arange(8000) >= 4000
        values.append(budget_auc(s, y))
    se = np.std(values, ddof=1) / math.sqrt(len(values))
    assert 0 < se < 0.002
    assert abs(np.mean(values) - chance_bauc()) < 4 * se


# --------------------------------------------------------------------------- guard


def test_guard_raises_b_lo_with_a_warning():
    with pytest.warns(BudgetRangeWarning, match="5 / \\|benign\\|"):
        lo, hi = resolve_budget_range(200)
    assert (lo, hi) == (pytest.approx(0.025), 0.10)
    # When the raised b_lo reaches b_hi the range keeps its ratio (capped at 1).
    with pytest.warns(BudgetRangeWarning):
        lo, hi = resolve_budget_range(50)
    assert (lo, hi) == (pytest.approx(0.1), pytest.approx(1.0))


def test_guard_refuses_when_asked_or_hopeless():
    with pytest.raises(BudgetRangeError, match="below 5 / \\|benign\\|"):
        resolve_budget_range(200, on_small="refuse")
    with pytest.raises(BudgetRangeError):
        resolve_budget_range(4)
    with pytest.raises(BudgetRangeError):
        resolve_budget_range(0)
    s, y = _split(range(100), [50.5])
    with pytest.raises(BudgetRangeError):
        budget_auc(s, y, on_small="refuse")


def test_guard_silent_when_enough_benign():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_budget_range(500) == (0.01, 0.10)
        assert resolve_budget_range(1140, 0.005, 0.05) == (0.005, 0.05)


def test_guard_rejects_bad_range():
    for lo, hi in ((0.1, 0.01), (0.0, 0.1), (0.01, 1.5)):
        with pytest.raises(ValueError):
            resolve_budget_range(1000, lo, hi)
    with pytest.raises(ValueError):
        resolve_budget_range(1000, on_small="ignore")


# --------------------------------------------------------------------------- AUROC / pAUC


def _random_case(seed, ties):
    rng = np.random.default_rng(seed)
    n = 600
    y = rng.random(n) < 0.3
    s = rng.normal(size=n) + 0.8 * y
    if ties:
        s = np.round(s * 2) / 2
    return s, y


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("ties", [False, True])
def test_auroc_equals_sklearn(seed, ties):
    s, y = _random_case(seed, ties)
    assert auroc(s, y) == pytest.approx(roc_auc_score(y, s), abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("max_fpr", [0.01, 0.05, 0.1, 0.3, 1.0])
def test_mcclish_pauc_equals_sklearn(seed, ties, max_fpr):
    s, y = _random_case(seed, ties)
    ours = partial_auroc(s, y, max_fpr)
    assert ours == pytest.approx(roc_auc_score(y, s, max_fpr=max_fpr), abs=1e-12)


def test_auroc_small_by_hand():
    # Pairs (failure, benign): 3 x 2; failure 2 beats both, 1 ties one and beats one,
    # 0 ties one: (2 + 1.5 + 0.5) / 6.
    s, y = _split([0, 1], [2, 1, 0])
    assert auroc(s, y) == pytest.approx(4 / 6)
    assert partial_auroc(s, y, 1.0) == pytest.approx(4 / 6)
    assert math.isnan(auroc([1.0, 2.0], [True, True]))
    assert math.isnan(partial_auroc([1.0, 2.0], [False, False], 0.1))
    with pytest.raises(ValueError):
        partial_auroc(s, y, 0.0)
