"""eval.bootstrap: deterministic for a seed, stratified by label and dimension, paired
across candidates, and each replicate is the aggregate of its resample."""

from __future__ import annotations

import numpy as np
import pytest

from monsearch.eval.bootstrap import bootstrap_aggregate, stratified_indices
from monsearch.eval.dimensions import bauc_by_dimension


def _data(seed=0, n=1500):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.4
    dims = rng.choice(["cred", "harm", "noise"], n)
    a = rng.normal(size=n) + 1.2 * y
    b = rng.normal(size=n) + 0.6 * y
    return np.stack([a, b]), y, dims


def test_fixed_seed_is_deterministic():
    s, y, d = _data()
    r1 = bootstrap_aggregate(s, y, d, n_boot=200, seed=11)
    r2 = bootstrap_aggregate(s, y, d, n_boot=200, seed=11)
    assert np.array_equal(r1.distribution, r2.distribution)
    assert np.array_equal(r1.low, r2.low)
    r3 = bootstrap_aggregate(s, y, d, n_boot=200, seed=12)
    assert not np.array_equal(r1.distribution, r3.distribution)


def test_replicates_are_the_aggregate_of_their_resample():
    # Rebuild the resampled indices from the same seed and recompute three
    # replicates with the plain per-dimension function.
    s, y, d = _data(1, 900)
    res = bootstrap_aggregate(s, y, d, n_boot=30, seed=5)
    codes = {name: i for i, name in enumerate(sorted(set(d.tolist())))}
    strata = np.array([codes[x] for x in d.tolist()]) * 2 + y
    idx = stratified_indices(strata, 30, np.random.default_rng(5))
    for r in (0, 7, 29):
        for c in range(2):
            i = idx[r]
            expected = bauc_by_dimension(s[c][i], y[i], d[i]).aggregate
            assert res.distribution[r, c] == pytest.approx(expected, abs=1e-12)
    assert res.point == pytest.approx([bauc_by_dimension(s[c], y, d).aggregate for c in range(2)])


def test_strata_keep_their_sizes():
    strata = np.array([0] * 5 + [1] * 3 + [2] * 7)
    idx = stratified_indices(strata, 50, np.random.default_rng(0))
    assert idx.shape == (50, 15)
    # Every resampled column stays in its stratum.
    assert np.array_equal(strata[idx], np.broadcast_to(strata, idx.shape))


def test_paired_candidates_share_resamples():
    # Two identical candidates get identical distributions; a candidate's result
    # does not depend on which others are bootstrapped beside it.
    s, y, d = _data(2, 1200)
    both = bootstrap_aggregate(np.stack([s[0], s[0], s[1]]), y, d, n_boot=100, seed=3)
    assert np.array_equal(both.distribution[:, 0], both.distribution[:, 1])
    alone = bootstrap_aggregate(s[0], y, d, n_boot=100, seed=3)
    assert np.array_equal(alone.distribution[:, 0], both.distribution[:, 0])
    # Pairing: the difference of the two candidates varies less than either alone.
    diff = both.distribution[:, 0] - both.distribution[:, 2]
    assert np.std(diff) < np.std(both.distribution[:, 0]) + np.std(both.distribution[:, 2])


def test_low_quantile_and_shape():
    s, y, d = _data(4)
    res = bootstrap_aggregate(s, y, d, n_boot=400, seed=0)
    assert res.distribution.shape == (400, 2)
    assert res.p05 == pytest.approx(np.quantile(res.distribution, 0.05, axis=0))
    assert np.all(res.low < res.point)
    assert res.point[0] > res.point[1]
    assert res.dimensions == ("cred", "harm", "noise")
    assert set(res.to_dict()) >= {"point", "low", "seed", "n_boot", "b_lo", "b_hi"}
    assert len(res.to_dict(with_distribution=True)["distribution"]) == 400


def test_refuses_without_failures_or_with_bad_arguments():
    s = np.arange(1000.0)
    with pytest.raises(ValueError):
        bootstrap_aggregate(s, np.zeros(1000, bool), n_boot=10)
    y = np.arange(1000) > 900
    with pytest.raises(ValueError):
        bootstrap_aggregate(s, y, n_boot=0)
    with pytest.raises(ValueError):
        bootstrap_aggregate(np.zeros((2, 2, 2)), y, n_boot=10)
