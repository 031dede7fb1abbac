"""Base-rate-invariant metrics (eval/priors.py): weights, weighted metrics checked against
scikit-learn and against replication, and the invariance itself on a real corpus: a
program that knows only each run's task x outcome cell scores exactly chance."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from monsearch.corpora.store import load_corpus
from monsearch.eval.bootstrap import bootstrap_aggregate
from monsearch.eval.fitness import evaluate_fitness
from monsearch.eval.metrics import (
    auroc,
    budget_auc,
    budget_grid,
    partial_auroc,
    recall_at_budget,
)
from monsearch.eval.priors import context_cells, prior_weights
from monsearch.eval.summary import compute_metrics


def _toy(seed: int = 0, n: int = 4000):
    rng = np.random.default_rng(seed)
    task = rng.integers(0, 10, n)
    outcome = rng.integers(0, 3, n)
    cells = np.array([f"t{t}|o{o}" for t, o in zip(task, outcome, strict=True)])
    dims = np.array([f"d{t % 4}" for t in task])
    rate = rng.uniform(0.05, 0.95, 30)
    y = rng.random(n) < rate[task * 3 + outcome]
    # A score with real signal within cells, plus a cell shortcut.
    s = np.round(rng.normal(size=n) + 1.2 * y + 2.0 * rate[task * 3 + outcome], 1)
    return s, y, cells, dims


def _trapezoid_chance(b_lo: float = 0.01, b_hi: float = 0.10) -> float:
    # Budget-AUC of recall(b) = b on the metric's own grid (the trapezoid rule's chance).
    b = budget_grid(b_lo, b_hi)
    lb = np.log(b)
    return float(np.sum((b[1:] + b[:-1]) / 2 * np.diff(lb)) / (lb[-1] - lb[0]))


@pytest.mark.parametrize("mass", ["minority", "kept"])
def test_flat_weights_give_every_cell_one_failure_share_and_dimensions_equal_mass(mass):
    _, y, cells, dims = _toy()
    pw = prior_weights(y, cells, dims, "flat", mass=mass)
    w = pw.weights
    assert w is not None and np.isclose(w.sum(), (w > 0).sum())  # average one over runs kept
    shares = [w[(cells == c) & y].sum() / w[cells == c].sum() for c in np.unique(cells)]
    assert np.allclose(shares, pw.target_share)
    masses = [w[dims == d].sum() for d in np.unique(dims)]
    assert np.allclose(masses, masses[0])
    d0 = dims == "d0"
    for c in np.unique(cells[d0]):
        m = cells == c
        if mass == "kept":
            # Each cell keeps its share of the dimension's runs.
            assert np.isclose(w[m].sum() / w[d0].sum(), m.sum() / d0.sum())
        else:
            # The smaller class (after the target share) is never weighted below the larger:
            # the majority is weighted down, nothing up; a cell's mass is what it can carry.
            q = pw.target_share
            fail_w, pass_w = w[m & y][0], w[m & ~y][0]
            ratio = (y[m].sum() / q) / ((~y[m]).sum() / (1 - q))
            assert (fail_w >= pass_w - 1e-12) if ratio < 1 else (pass_w >= fail_w - 1e-12)


def test_minority_masses_shrink_a_cell_with_few_of_one_class():
    # 120 failures and 3 passes: the cell can only carry the mass its 3 passes support.
    y = np.array([True] * 120 + [False] * 3 + [True] * 40 + [False] * 60)
    cells = np.array(["skewed"] * 123 + ["even"] * 100)
    w = prior_weights(y, cells, np.array(["x"] * 223), "flat").weights
    q = 160 / 223
    skewed = w[:123].sum() / w.sum()
    assert skewed == pytest.approx((3 / (1 - q)) / (3 / (1 - q) + min(40 / q, 60 / (1 - q))))
    assert skewed < 0.25 < 123 / 223


@pytest.mark.parametrize("mass", ["minority", "kept"])
def test_inverted_weights_mirror_each_cells_failure_share(mass):
    _, y, cells, dims = _toy(1)
    w = prior_weights(y, cells, dims, "inverted", mass=mass).weights
    for c in np.unique(cells):
        m = cells == c
        assert np.isclose(w[m & y].sum() / w[m].sum(), 1 - y[m].mean())


def test_pure_cells_are_left_out_and_named():
    y = np.array([True, True, False, True, False, False, True])
    cells = np.array(["a", "a", "b", "b", "c", "c", "d"])
    pw = prior_weights(y, cells, np.array(["x"] * 7), "flat", min_per_class=1)
    assert pw.excluded_cells == ("a", "c", "d") and pw.excluded_runs == 5
    assert list(pw.weights[[0, 1, 4, 5, 6]]) == [0, 0, 0, 0, 0] and (pw.weights[2:4] > 0).all()


def test_kept_masses_leave_out_cells_with_fewer_than_five_of_a_class():
    # 60 failures and 4 passes: four runs would carry the cell's whole benign mass.
    y = np.array([True] * 60 + [False] * 4 + [True] * 10 + [False] * 10)
    cells = np.array(["skewed"] * 64 + ["even"] * 20)
    dims = np.array(["x"] * 84)
    pw = prior_weights(y, cells, dims, "flat", mass="kept")
    assert pw.excluded_cells == ("skewed",) and pw.excluded_runs == 64
    assert (pw.weights[:64] == 0).all() and (pw.weights[64:] > 0).all()
    assert prior_weights(y, cells, dims, "flat", mass="kept", min_per_class=4).excluded_runs == 0
    assert prior_weights(y, cells, dims, "flat").excluded_runs == 0  # minority: it just counts less


def test_weighted_metrics_equal_replication_and_scikit_learn():
    s, y, cells, dims = _toy(2, 2500)
    rng = np.random.default_rng(3)
    w = rng.integers(0, 4, s.size).astype(float)
    reps = w.astype(int)
    rs, ry, rd = np.repeat(s, reps), np.repeat(y, reps), np.repeat(dims, reps)
    assert budget_auc(s, y, weights=w) == pytest.approx(budget_auc(rs, ry), abs=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mw = compute_metrics(s, y, dims, weights=w)
        mr = compute_metrics(rs, ry, rd)
    assert mw.aggregate == pytest.approx(mr.aggregate, abs=1e-12)
    assert mw.bauc_pooled == pytest.approx(mr.bauc_pooled, abs=1e-12)
    for key, value in mr.recall_at.items():
        assert mw.recall_at[key] == pytest.approx(value, abs=1e-12)
        assert value == pytest.approx(recall_at_budget(rs, ry, float(key)), abs=1e-12)
    assert auroc(s, y, w) == pytest.approx(roc_auc_score(y, s, sample_weight=w), abs=1e-12)
    assert partial_auroc(s, y, 0.1, w) == pytest.approx(
        roc_auc_score(y, s, sample_weight=w, max_fpr=0.1), abs=1e-12
    )
    # Unit weights: the unweighted numbers.
    assert compute_metrics(s, y, dims, weights=np.ones(s.size)).aggregate == pytest.approx(
        compute_metrics(s, y, dims).aggregate, abs=1e-12
    )


@pytest.mark.parametrize("mass", ["minority", "kept"])
def test_a_cell_lookup_table_scores_chance_under_flat_weights_and_less_inverted(mass):
    s, y, cells, dims = _toy(4)
    table = {c: y[cells == c].mean() for c in np.unique(cells)}
    lookup = np.array([table[c] for c in cells])
    plain = compute_metrics(lookup, y, dims).aggregate
    flat_w = prior_weights(y, cells, dims, "flat", mass=mass).weights
    flat = compute_metrics(lookup, y, dims, weights=flat_w)
    inverted = compute_metrics(
        lookup, y, dims, weights=prior_weights(y, cells, dims, "inverted", mass=mass).weights
    )
    assert plain > 3 * _trapezoid_chance()  # the shortcut pays on the corpus's own rates
    assert flat.aggregate == pytest.approx(_trapezoid_chance(), abs=1e-12)
    assert flat.bauc_pooled == pytest.approx(_trapezoid_chance(), abs=1e-12)
    assert flat.auroc == pytest.approx(0.5, abs=1e-12)
    assert inverted.aggregate < _trapezoid_chance()
    # A score that ranks within cells keeps its value under both views.
    good = compute_metrics(s - 2.0 * np.array([table[c] for c in cells]), y, dims,
                           weights=flat_w)
    assert good.aggregate > 5 * _trapezoid_chance()


def test_weighted_bootstrap_keeps_cell_counts_and_brackets_the_point():
    s, y, cells, dims = _toy(5, 1500)
    w = prior_weights(y, cells, dims, "flat").weights
    boot = bootstrap_aggregate(s, y, dims, n_boot=60, seed=1, weights=w, strata=cells)
    point = compute_metrics(s, y, dims, weights=w).aggregate
    assert boot.point[0] == pytest.approx(point, abs=1e-12)
    assert boot.distribution.min() < point < boot.distribution.max()
    again = bootstrap_aggregate(s, y, dims, n_boot=60, seed=1, weights=w, strata=cells)
    assert np.array_equal(boot.distribution, again.distribution)
    with pytest.raises(ValueError, match="strata"):
        bootstrap_aggregate(s, y, dims, n_boot=5, weights=w)


def test_lookup_table_program_scores_chance_through_the_sandbox(small_corpus):
    """The issue's test: a monitor program returning val's own per-cell failure rates
    (task x outcome), run in the sandbox on the real val split, scores chance under the
    invariant fitness, and well above it on the plain one."""
    from monsearch.sandbox.evaluate import SandboxPool

    val = [t for t in load_corpus(small_corpus, ["val"]).split("val") if t.label is not None]
    y = np.array([t.label.is_failure for t in val])
    cells = context_cells(val)
    rates = {c: float(y[cells == c].mean()) for c in sorted(set(cells.tolist()))}
    source = (
        f"RATES = {json.dumps(rates)}\n\n"
        "def score(traj):\n"
        "    return RATES.get(traj.task + '|' + traj.outcome, 0.0)\n"
    )
    with SandboxPool(val, workers=1, cache_dir=None) as pool:
        result = pool.evaluate(source)
    assert result.ok, result.message
    dims = np.array([t.dimension.value for t in val])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inv = evaluate_fitness(result.scores, y, dims, cells=cells, view="invariant", n_boot=20)
        plain = evaluate_fitness(result.scores, y, dims)
    lo, hi = inv.metrics.bauc.b_lo, inv.metrics.bauc.b_hi
    assert inv.fitness == pytest.approx(_trapezoid_chance(lo, hi), abs=1e-9)
    assert inv.view == "invariant" and inv.plain_fitness == pytest.approx(plain.fitness)
    assert plain.fitness > 3 * _trapezoid_chance(lo, hi)
    # The record round-trips with both figures.
    from monsearch.eval.fitness import Fitness

    back = Fitness.from_dict(json.loads(json.dumps(inv.to_dict())))
    assert back.view == "invariant" and back.plain_fitness == pytest.approx(plain.fitness)
