"""The fitness over several sources (eval/sources.py): the mean of the groups, held to
the best seed per group and per failure dimension."""

from __future__ import annotations

import numpy as np

from monsearch.eval.fitness import evaluate_fitness
from monsearch.eval.sources import Reference, group_fitness, groups_of, holds_up

RNG = np.random.default_rng(5)


def _split(n: int, signal: float):
    y = RNG.random(n) < 0.4
    dims = np.where(RNG.random(n) < 0.5, "noise", "secrets")
    s = RNG.normal(size=n) + signal * y
    return s, y, dims


def _pooled_and_groups(signal_a: float, signal_b: float, noise_only_b: bool = False):
    sa, ya, da = _split(1500, signal_a)
    sb, yb, db = _split(1500, signal_b)
    if noise_only_b:  # in source b the program sees only the noise failures
        sb = np.where(yb & (db == "secrets"), RNG.normal(size=sb.size), sb)
    s, y, d = np.concatenate([sa, sb]), np.concatenate([ya, yb]), np.concatenate([da, db])
    labels = ["a"] * sa.size + ["b"] * sb.size
    pooled = evaluate_fitness(s, y, d)

    def one(index):
        return evaluate_fitness(s[index], y[index], d[index])

    return pooled, groups_of(labels), one


def test_the_fitness_is_the_mean_of_the_groups_each_on_its_own_runs():
    pooled, groups, one = _pooled_and_groups(2.0, 0.5)
    f = group_fitness(pooled, groups, one)
    per = [one(g.index).fitness for g in groups]
    assert f.status == "ok" and np.isclose(f.fitness, np.mean(per))
    assert per[0] > per[1] + 0.2  # the groups really differ
    assert set(f.groups) >= {"a", "b"} and f.groups["a"]["by_dimension"].keys() == {"noise", "secrets"}
    # one group: the pooled record as it is
    assert group_fitness(pooled, groups[:1], one) is pooled


def test_the_guard_refuses_a_candidate_that_loses_a_dimension_in_one_group():
    pooled, groups, one = _pooled_and_groups(2.0, 2.0)
    seed = group_fitness(pooled, groups, one)
    ref = Reference.best_of([seed.to_dict(), None])
    assert ref is not None and ref.fitness.keys() == {"a", "b"}
    # a candidate better on the mean but blind to source b's secrets failures
    p2, g2, one2 = _pooled_and_groups(2.6, 2.6, noise_only_b=True)
    child = group_fitness(p2, g2, one2, reference=ref)
    assert child.status == "regressed" and child.fitness == 0.0
    assert "b secrets" in child.reason
    unguarded = group_fitness(p2, g2, one2)
    assert unguarded.status == "ok" and unguarded.groups["b"]["by_dimension"]["secrets"] < 0.2


def test_selection_prefers_candidates_at_least_the_seed_in_every_group():
    pooled, groups, one = _pooled_and_groups(2.0, 2.0)
    seed = group_fitness(pooled, groups, one).to_dict()
    ref = Reference.best_of([seed])
    assert holds_up(ref, seed)
    worse = {**seed, "groups": {**seed["groups"], "b": {**seed["groups"]["b"], "fitness": seed["groups"]["b"]["fitness"] - 0.01}}}
    assert not holds_up(ref, worse)
    assert holds_up(None, worse)


def test_the_best_seed_is_the_reference():
    a = {"status": "ok", "fitness": 0.3, "groups": {"x": {"status": "ok", "fitness": 0.3, "by_dimension": {"d": 0.9}}}}
    b = {"status": "ok", "fitness": 0.5, "groups": {"x": {"status": "ok", "fitness": 0.5, "by_dimension": {"d": 0.2}}}}
    ref = Reference.best_of([a, b])
    assert ref.fitness == {"x": 0.5} and ref.by_dimension == {"x": {"d": 0.2}}
