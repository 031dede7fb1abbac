"""eval.costs and eval.escalation: the cost file, fits whose optimum is known, the
budget identity, baselines, and evaluation on another split."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from monsearch.eval.costs import (
    DEFAULT_COSTS_TOML,
    CostFileError,
    CostModel,
    load_costs,
    parse_costs,
)
from monsearch.eval.escalation import (
    ScoredSet,
    escalation_curves,
    evaluate_escalation,
    fit_escalation,
)
from monsearch.eval.metrics import recall_at_budget

# Costs in units of one judge-panel verdict: the panel 1, an audit 20, the program free.
UNIT = CostModel(program=0.0, oracle_call=0.0, judge_panel=1.0, audit=20.0, usd_per_unit=0.45)


# --------------------------------------------------------------------------- costs


def test_default_cost_file_is_the_default_model():
    assert parse_costs(DEFAULT_COSTS_TOML) == CostModel() == load_costs(None)
    c = CostModel()
    # docs/DESIGN.md: ca / cJ = 20; the panel is 3 judge calls at about $0.15.
    assert c.audit / c.judge_panel == 20
    assert c.judge_panel * c.usd_per_unit == pytest.approx(0.45)


def test_cost_file_partial_and_errors(tmp_path):
    p = tmp_path / "costs.toml"
    p.write_text("[costs]\naudit = 40\njudge_panel = 2\n", encoding="utf-8")
    c = load_costs(p)
    assert (c.audit, c.judge_panel, c.program) == (40.0, 2.0, 0.0)
    cases = {
        "[costs]\nbogus = 1\n": "costs.bogus: unknown key",
        "[costs]\naudit = -1\n": "costs.audit: expected a finite number >= 0",
        '[costs]\naudit = "x"\n': "costs.audit: expected a number",
        "[costs]\naudit = 0\n": "costs.audit: the audit cost must be positive",
        "audit = 1\n": "costs: expected a [costs] table",
        "[costs\n": "not valid TOML",
    }
    for text, message in cases.items():
        p.write_text(text, encoding="utf-8")
        with pytest.raises(CostFileError, match=re.escape(message)) as info:
            load_costs(p)
        assert str(p) in str(info.value)
    with pytest.raises(CostFileError, match="cannot read"):
        load_costs(tmp_path / "missing.toml")


def test_budget_grid_spans_design_range():
    g = CostModel().budget_grid(25)
    assert g[0] == pytest.approx(60 * 0.005) and g[-1] == pytest.approx(3 + 60 * 0.05)
    assert np.all(np.diff(np.log(g)) == pytest.approx(np.log(g[1] / g[0])))


# --------------------------------------------------------------------------- known optimum


def _three_groups(discrete: bool, seed: int = 0) -> ScoredSet:
    # Program scores: 900 benign low, 100 benign + 100 failures in a middle group the
    # program cannot separate, 100 failures high. The judge is perfect.
    rng = np.random.default_rng(seed)
    if discrete:
        low, mid_b, mid_a, high = (
            np.zeros(900),
            np.full(100, 5.0),
            np.full(100, 5.0),
            np.full(100, 10.0),
        )
    else:
        low = rng.uniform(0, 1, 900)
        mid_b, mid_a = rng.uniform(4, 5, 100), rng.uniform(4, 5, 100)
        high = rng.uniform(9, 10, 100)
    program = np.r_[low, mid_b, mid_a, high]
    y = np.r_[np.zeros(1000, bool), np.ones(200, bool)]
    return ScoredSet.of(program, y.astype(float), y)


@pytest.mark.parametrize("rule", ["np", "band", "and"])
def test_known_optimum_escalates_only_the_middle_group(rule):
    data = _three_groups(discrete=True)
    # Escalating the middle group costs cJ * P_H(middle) = 0.1 and then every
    # failure is audited and no benign run is: recall 1 at Y = 0.1.
    fit = fit_escalation(data, [0.1, 0.5], UNIT, rule=rule)
    for pol in fit.policies:
        assert pol.feasible and pol.recall == pytest.approx(1.0)
        assert pol.escalation_rate == pytest.approx(0.1)
        assert pol.lower == 5.0
    # At Y = 0.1 nothing is left for audits beyond the failures; at Y = 0.5 the rest
    # of the budget, (0.5 - 0.1) / 20 of benign runs, is spent on audits.
    assert [p.audit_rate for p in fit.policies] == pytest.approx([0.0, 0.02])
    curve = evaluate_escalation(fit, data)
    assert curve.recall == pytest.approx([1.0, 1.0])
    assert curve.cost_benign == pytest.approx([0.1, 0.5])
    # Dollars per 1,000 trajectories: 100 benign and 200 failures of 1,200 go to the
    # panel ($0.45 each), 200 failures are audited (20 units each).
    assert curve.usd_per_1000[0] == pytest.approx((300 * 1 + 200 * 20) / 1200 * 1000 * 0.45)
    assert curve.usd_per_1000_benign[0] == pytest.approx(0.1 * 1000 * 0.45)


def test_known_optimum_below_the_escalation_cost():
    # At Y = 0.05 the middle group cannot be escalated (its benign runs are tied,
    # so no band holds half of them): the best is the program alone, auditing
    # 0.05 / 20 = 0.25 % of benign runs, all from the tied middle group at random:
    # recall = 0.5 (the high group) + (0.0025 / 0.1) * 0.5.
    data = _three_groups(discrete=True)
    expected = 0.5 + 0.025 * 0.5
    for rule in ("np", "band", "program"):
        fit = fit_escalation(data, [0.05], UNIT, rule=rule)
        assert fit.policies[0].recall == pytest.approx(expected)
        assert fit.policies[0].escalation_rate == 0.0
    assert recall_at_budget(data.program, data.is_failure, 0.05 / 20) == pytest.approx(expected)


def test_known_optimum_continuous_groups_transfer():
    fit_set, target = _three_groups(discrete=False, seed=1), _three_groups(discrete=False, seed=2)
    fit = fit_escalation(fit_set, [0.11], UNIT, rule="np")
    pol = fit.policies[0]
    assert pol.recall == pytest.approx(1.0)
    assert 0.1 <= pol.escalation_rate <= 0.11
    # The band starts between the low and the middle group and covers the middle.
    assert 1.0 > pol.lower > np.sort(fit_set.program[:900])[-12]
    assert pol.upper >= fit_set.program[900:1000].max()
    curve = evaluate_escalation(fit, target)
    assert curve.recall[0] == pytest.approx(1.0)
    assert curve.audit_rate[0] == 0.0


def test_baselines_on_the_known_case():
    data = _three_groups(discrete=True)
    ys = [0.1, 1.0, 1.2]
    judge = fit_escalation(data, ys, UNIT, rule="judge")
    # The panel on everything costs 1 per trajectory: infeasible below.
    assert [p.feasible for p in judge.policies] == [False, True, True]
    assert judge.recall == pytest.approx([0.0, 1.0, 1.0])
    prog = fit_escalation(data, ys, UNIT, rule="program")
    # Program alone at Y: audit Y / 20 of benign runs from the tied middle group.
    assert prog.recall == pytest.approx([0.5 + (y / 20 / 0.1) * 0.5 for y in ys])


# --------------------------------------------------------------------------- general properties


def _correlated(seed: int, n_h: int = 1500, n_a: int = 300) -> ScoredSet:
    rng = np.random.default_rng(seed)
    y = np.r_[np.zeros(n_h, bool), np.ones(n_a, bool)]
    latent = rng.normal(size=y.size) + 1.5 * y
    program = np.round(latent + rng.normal(size=y.size), 1)
    judge = np.round(latent + 0.5 * rng.normal(size=y.size), 2)
    calls = (rng.random(y.size) < 0.1).astype(float)
    return ScoredSet.of(program, judge, y, calls)


COSTS = CostModel(program=0.01, oracle_call=0.2, judge_panel=1.0, audit=20.0, usd_per_unit=0.45)


@pytest.mark.parametrize("rule", ["np", "band", "program", "judge", "and"])
def test_fit_respects_the_budget_and_evaluation_agrees(rule):
    data = _correlated(0)
    ys = np.array([0.1, 0.3, 0.6, 1.2, 2.5])
    fit = fit_escalation(data, ys, COSTS, rule=rule, grid=40)
    curve = evaluate_escalation(fit, data)
    for i, pol in enumerate(fit.policies):
        if not pol.feasible:
            assert curve.recall[i] == 0.0
            continue
        assert pol.cost <= pol.budget + 1e-9
        assert curve.cost_benign[i] == pytest.approx(pol.cost)
        assert curve.recall[i] == pytest.approx(pol.recall)
        assert curve.escalation_rate[i] == pytest.approx(pol.escalation_rate)
        assert curve.audit_rate[i] == pytest.approx(pol.audit_rate)
    # More budget never buys less recall on the fit set.
    assert np.all(np.diff(fit.recall) >= -1e-12)


def test_band_rule_contains_the_cascade_and_the_program_alone():
    data = _correlated(1)
    ys = [0.3, 0.8, 1.5]
    band = fit_escalation(data, ys, COSTS, rule="band", grid=40)
    for other in ("and", "program"):
        assert np.all(
            band.recall >= fit_escalation(data, ys, COSTS, rule=other, grid=40).recall - 1e-12
        )


def test_escalation_beats_either_stage_alone():
    # A cheap, weaker program plus a strong judge on a band beats both baselines.
    data = _correlated(2)
    ys = [0.8, 1.5]
    out = escalation_curves(data, {"val": data}, ys, COSTS, grid=40)
    curves = out["curves"]["val"]
    for i in range(len(ys)):
        best_baseline = max(curves[r].recall[i] for r in ("program", "judge", "and"))
        assert curves["np"].recall[i] >= best_baseline - 0.02
        assert curves["np"].recall[i] > curves["program"].recall[i]
        assert curves["np"].recall[i] > curves["judge"].recall[i]
    json.dumps({r: f.to_dict() for r, f in out["fits"].items()}, allow_nan=False)
    json.dumps({r: c.to_dict() for r, c in curves.items()}, allow_nan=False)


def test_in_program_oracle_calls_are_paid_from_the_budget():
    data = _correlated(3)
    # Mean benign oracle calls is about 0.1, at 0.2 each: about 0.02 always spent.
    base = COSTS.program + COSTS.oracle_call * data.mean_benign_oracle_calls
    fit = fit_escalation(data, [base * 0.9, base + 0.2], COSTS, rule="np", grid=20)
    assert not fit.policies[0].feasible and fit.policies[0].recall == 0.0
    assert fit.policies[1].feasible
    assert fit.policies[1].cost == pytest.approx(base + 0.2)


def test_kde_likelihood_ratio_also_fits():
    data = _correlated(4, 800, 200)
    fit = fit_escalation(data, [0.5, 1.5], COSTS, rule="np", lr="kde", grid=30)
    iso = fit_escalation(data, [0.5, 1.5], COSTS, rule="np", lr="isotonic", grid=30)
    assert fit.lr_method == "kde"
    assert np.all(np.abs(fit.recall - iso.recall) < 0.1)
    curve = evaluate_escalation(fit, _correlated(5, 800, 200))
    assert np.all((curve.recall > 0.3) & (curve.recall <= 1.0))


def test_judge_scores_needed_only_inside_the_band():
    data = _three_groups(discrete=True)
    fit = fit_escalation(data, [0.1], UNIT, rule="band")
    judge = np.where(data.program >= 5.0, data.judge, math.nan)
    target = ScoredSet.of(data.program, judge, data.is_failure)
    assert evaluate_escalation(fit, target).recall[0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="inside the escalation band"):
        evaluate_escalation(
            fit, ScoredSet.of(data.program, np.full(1200, math.nan), data.is_failure)
        )


def test_bad_inputs_are_refused():
    data = _correlated(0, 100, 20)
    with pytest.raises(ValueError):
        fit_escalation(data, [1.0], COSTS, rule="or")
    with pytest.raises(ValueError):
        fit_escalation(data, [1.0], COSTS, lr="magic")
    with pytest.raises(ValueError):
        fit_escalation(ScoredSet.of([1.0, 2.0], [1.0, 2.0], [False, False]), [1.0], COSTS)
    with pytest.raises(ValueError):
        ScoredSet.of([1.0, 2.0], [1.0], [False, True])
    with pytest.raises(ValueError):
        ScoredSet.of([1.0, 2.0], [1.0, 2.0], [False, True], oracle_calls=[1, -1])
