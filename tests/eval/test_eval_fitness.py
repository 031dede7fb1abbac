"""eval.fitness: the aggregate as fitness, the oracle cap rho on benign traffic,
true-label metrics beside panel-label ones, JSON round trip."""

from __future__ import annotations

import json

import numpy as np
import pytest

from monsearch.eval.fitness import Fitness, evaluate_fitness, oracle_spend
from monsearch.eval.summary import compute_metrics


def _split(seed=0, n=2000):
    rng = np.random.default_rng(seed)
    truth = rng.random(n) < 0.4
    panel = truth ^ (rng.random(n) < 0.05)  # the panel gets 5 % wrong
    dims = rng.choice(["cred", "harm"], n)
    scores = rng.normal(size=n) + 1.5 * truth
    return scores, panel, truth, dims


def test_fitness_is_the_aggregate_on_panel_labels():
    s, panel, truth, d = _split()
    f = evaluate_fitness(s, panel, d, split="val", true_failure=truth)
    assert f.ok and f.feasible and f.reason is None and f.split == "val"
    assert f.fitness == pytest.approx(compute_metrics(s, panel, d).aggregate)
    # True labels: reported beside, never the fitness; the noiseless labels score higher.
    assert f.metrics_true is not None
    assert f.metrics_true.aggregate == pytest.approx(compute_metrics(s, truth, d).aggregate)
    assert f.metrics_true.aggregate > f.fitness
    assert f.oracle.calls == 0 and f.oracle.rho == 0 and f.oracle.fresh_calls == 0


def test_over_the_oracle_cap_is_infeasible_with_a_reason():
    s, panel, truth, d = _split()
    # Two calls on every benign run, none on failures: rho = 2.
    calls = np.where(panel, 0, 2)
    f = evaluate_fitness(s, panel, d, oracle_calls=calls, rho=0.5, fresh_calls=40, cost_usd=6.0)
    assert f.status == "infeasible" and not f.feasible and f.fitness == 0.0
    assert "rho = 0.5" in f.reason and "2 per benign trajectory" in f.reason
    # Every other metric is still there.
    assert f.metrics is not None and f.metrics.aggregate > 0.3
    assert f.oracle.rho == 2.0 and f.oracle.rho_cap == 0.5
    assert f.oracle.calls == int(calls.sum()) and f.oracle.fresh_calls == 40
    assert f.oracle.cost_usd == 6.0 and f.oracle.max_per_trajectory == 2


def test_rho_counts_benign_runs_only():
    # Calls on failures cost nothing against the cap: it is measured on benign traffic.
    s, panel, truth, d = _split()
    calls = np.where(panel, 3, 0)
    f = evaluate_fitness(s, panel, d, oracle_calls=calls, rho=0.1)
    assert f.ok and f.oracle.rho == 0.0 and f.oracle.calls == 3 * int(panel.sum())
    assert f.oracle.fresh_calls is None  # calls were made, nobody said how many were fresh
    # Exactly at the cap is within it.
    calls = np.where(panel, 0, np.arange(panel.size) % 10 == 0)
    rho = float(calls[~panel].mean())
    assert evaluate_fitness(s, panel, d, oracle_calls=calls, rho=rho).ok


def test_not_estimable_and_failed():
    s = np.arange(1000.0)
    f = evaluate_fitness(s, np.zeros(1000, bool))
    assert f.status == "not_estimable" and f.fitness == 0.0 and "no failures" in f.reason
    y = np.arange(1000) > 800
    f = evaluate_fitness(s, y, on_small="refuse", b_lo=0.001)
    assert f.status == "not_estimable" and f.metrics is None and "5 / |benign|" in f.reason
    f = Fitness.failed("timeout", "wall-clock limit of 30 s", split="val")
    assert f.status == "failed" and f.fitness == 0.0 and f.reason.startswith("timeout:")


def test_bootstrap_low_quantile_on_request():
    s, panel, truth, d = _split(1)
    f = evaluate_fitness(s, panel, d, n_boot=100, seed=2)
    assert f.fitness_low is not None and f.fitness_low < f.fitness
    assert evaluate_fitness(s, panel, d, n_boot=100, seed=2).fitness_low == f.fitness_low


@pytest.mark.parametrize("kind", ["ok", "infeasible", "failed", "not_estimable"])
def test_json_round_trip(kind):
    s, panel, truth, d = _split(2)
    if kind == "ok":
        f = evaluate_fitness(s, panel, d, true_failure=truth, n_boot=20)
    elif kind == "infeasible":
        f = evaluate_fitness(s, panel, d, oracle_calls=np.ones(s.size), rho=0.5)
    elif kind == "failed":
        f = Fitness.failed("error", "NameError at line 3")
    else:
        f = evaluate_fitness(s, np.zeros(s.size, bool))
    text = json.dumps(f.to_dict(), allow_nan=False)
    assert Fitness.from_dict(json.loads(text)) == f


def test_oracle_spend_validates_counts():
    y = np.array([False, True])
    with pytest.raises(ValueError):
        oracle_spend([1, -1], y)
    with pytest.raises(ValueError):
        oracle_spend([1], y)
