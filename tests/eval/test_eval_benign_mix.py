"""Benign-mix views (eval/benign_mix.py) on real generated runs: the weights give the
target mix exactly, failures keep theirs, and the views move what a detector keyed on
a habit sees; the sealed test's benign-mix block."""

from __future__ import annotations

import hashlib
import math
from dataclasses import replace

import numpy as np
import pytest

from monsearch.corpora.benign_mix import AXES, all_profiles, level_share
from monsearch.eval.benign_mix import (
    VIEWS,
    axis_groups,
    group_figures,
    group_weights,
    habit_groups,
    mix_weights,
    view_target,
    view_weights,
)
from monsearch.eval.metrics import chance_bauc
from monsearch.eval.priors import context_cells, prior_weights
from monsearch.eval.sealed import Options, ScoredSplit, benign_mix_views
from monsearch.synth.generate import build_trajectory, generate
from monsearch.synth.personas import PERSONAS

SEED = 5


@pytest.fixture(scope="module")
def runs() -> list:
    return [t for t in generate(1600, SEED) if t.label is not None]


@pytest.fixture(scope="module")
def arrays(runs):
    y = np.array([t.label.is_failure for t in runs])
    dims = np.array([t.dimension.value for t in runs])
    base = prior_weights(y, context_cells(runs), dims, "flat").weights
    return y, dims, base


@pytest.fixture(scope="module")
def limited() -> list:
    """Runs of the two rate-limited tasks, where the retry habit moves benign 429s."""
    gens = [p.generator for p in PERSONAS if not p.cross_generator]
    out = []
    for n in range(700):
        task = ("staff-directory", "proxy-backoff")[n % 2]
        t = build_trajectory(SEED, n, gens[n % len(gens)], task)
        if t.label is not None:
            out.append(t)
    return out


def _id_score(t) -> float:
    return int(hashlib.sha256(t.id.encode()).hexdigest()[:8], 16) / 2**32


def _saw_429(t) -> float:
    return float(sum("429" in s.observation for s in t.steps))


@pytest.mark.parametrize("with_base", [False, True])
def test_weights_give_the_target_mix_exactly_generator_by_generator(runs, arrays, with_base):
    y, _, flat = arrays
    base = flat if with_base else np.ones(len(runs))
    groups = habit_groups(runs)
    targets = {**{v: view_target(v) for v in VIEWS}, "odd": {"retry": 0.9, "infra": 0.05}}
    for name, target in targets.items():
        mw = mix_weights(groups, y, target, base=base, name=name)
        assert mw.skipped is None and not mw.unmatched
        w = mw.weights
        assert np.array_equal(w[y], base[y])  # failures untouched
        for gen in set(groups.strata.tolist()):
            benign = ~y & (groups.strata == gen) & (base > 0)
            assert w[benign].sum() == pytest.approx(base[benign].sum())  # its benign mass kept
            for axis, share in target.items():
                noisy = AXES[axis][1]
                got = w[benign & (groups.levels[axis] == noisy)].sum() / w[benign].sum()
                assert got == pytest.approx(share, abs=1e-9), (name, gen, axis)
        # and jointly: the profile shares are the product of the axis shares
        for profile, share in mw.realised_shares.items():
            levels = profile.split("/")
            assert share == pytest.approx(
                math.prod(level_share(target, lv) for lv in levels), abs=1e-9
            )


def test_axis_groups_keep_one_level_only(runs, arrays):
    y, _, base = arrays
    groups = habit_groups(runs)
    ws = group_weights(groups, y, base=base)
    assert set(ws) == {*VIEWS, *axis_groups()}
    for level, target in axis_groups().items():
        (axis, share), = target.items()
        w = ws[level].weights
        other = AXES[axis][0 if share else 1]
        assert not w[~y & (groups.levels[axis] == other)].any()
        assert w[~y & (groups.levels[axis] == level)].sum() > 0


def test_a_profile_a_generator_lacks_is_named_and_its_share_goes_to_the_rest(runs, arrays):
    y, _, _ = arrays
    groups = habit_groups(runs)
    gen = groups.strata[0]
    drop = ~y & (groups.strata == gen) & (groups.profiles == "clean/patient/no_probe")
    assert drop.any()
    keep = np.flatnonzero(~drop)
    sub = groups.take(keep)
    mw = mix_weights(sub, y[keep], "quiet")
    assert mw.unmatched == (f"{gen}|clean/patient/no_probe",)
    benign = ~y[keep] & (sub.strata == gen)
    assert mw.weights[benign].sum() == pytest.approx(benign.sum())


def test_runs_without_habits_skip_the_view(runs, arrays):
    y, _, _ = arrays
    bare = [replace(t, meta={k: v for k, v in t.meta.items() if k != "habits"}) for t in runs[:50]]
    groups = habit_groups(bare)
    assert not groups.present.any()
    mw = mix_weights(groups, y[:50], "quiet")
    assert mw.weights is None and "record no habits" in mw.skipped
    figs = group_figures(np.zeros(50), y[:50], np.array(["d"] * 50), {"quiet": mw})
    assert figs == {"quiet": {"skipped": mw.skipped}}


def test_a_habit_keyed_detector_moves_with_the_view_and_a_blind_one_does_not(runs, arrays):
    """Failures keep the corpus's habits: a score of the recon habit alone is worth chance
    on the corpus as generated (habits are independent of the label), a lot on the clean
    group (no recon-heavy benign run to spend the budget on) and less than chance on the
    recon-heavy one. A score blind to habits stays near chance under every view."""
    y, dims, base = arrays
    groups = habit_groups(runs)
    ws = group_weights(groups, y, base=base)
    keyed = np.array([(t.meta["habits"]["recon"] == "recon_heavy") + 0.01 * _id_score(t) for t in runs])
    blind = np.array([_id_score(t) for t in runs])
    chance = chance_bauc(0.02, 0.2)
    k = group_figures(keyed, y, dims, ws, b_lo=0.02, b_hi=0.2)
    b = group_figures(blind, y, dims, ws, b_lo=0.02, b_hi=0.2)
    assert k["clean"]["aggregate"] > 0.4
    assert k["recon_heavy"]["aggregate"] < chance
    assert k["quiet"]["aggregate"] > k["flat"]["aggregate"] > k["noisy"]["aggregate"]
    for name, fig in b.items():
        # (a view whose benign runs weigh fewer than 5 / 0.02 raises its range a little)
        assert abs(fig["aggregate"] - chance_bauc(fig["b_lo"], fig["b_hi"])) < 0.05, name
        assert fig["effective_benign"] > 150


def test_benign_429s_cost_a_noise_detector_less_under_the_quiet_mix(limited):
    """The retry habit is what moves benign runs into a rate limit: a detector counting
    429s catches more at the same benign flag rate when benign runs are patient."""
    y = np.array([t.label.is_failure for t in limited])
    dims = np.array([t.dimension.value for t in limited])
    groups = habit_groups(limited)
    ws = group_weights(groups, y, targets={"patient": {"retry": 0.0}, "retry_happy": {"retry": 1.0}})
    s = np.array([_saw_429(t) + 0.001 * _id_score(t) for t in limited])
    figs = group_figures(s, y, dims, ws, b_lo=0.02, b_hi=0.2)
    flagged = {
        name: np.average(s[~y] >= 1, weights=w.weights[~y]) for name, w in ws.items()
    }
    assert flagged["patient"] < flagged["retry_happy"] - 0.1, flagged
    assert figs["patient"]["aggregate"] > figs["retry_happy"]["aggregate"] + 0.05, figs


def test_sealed_benign_mix_block(runs, limited):
    """The sealed test's block: per view the figures the shifted-rates views have, and
    the corpus's generation mix; skipped for a split whose runs record no habits."""
    val = ScoredSplit.from_trajectories("val", runs, np.array([_saw_429(t) for t in runs]))
    test = ScoredSplit.from_trajectories("test", limited, np.array([_saw_429(t) for t in limited]))
    opts = Options(fitness="invariant", n_boot=20)
    block = benign_mix_views(val, test, "panel", opts, val_fitness=0.3)
    assert block["generated_with"] == ["paper"]
    for view in VIEWS:
        b = block[view]
        assert {"transferred", "recalibrated", "loss_vs_val", "effective_benign"} <= set(b)
        assert b["target"] == view_target(view)
        assert b["loss_vs_val"]["recalibrated"] == pytest.approx(
            0.3 - b["recalibrated"]["bauc"]["aggregate"]
        )
        assert b["recalibrated"]["interval"] is not None
    assert (
        block["quiet"]["recalibrated"]["bauc"]["aggregate"]
        > block["noisy"]["recalibrated"]["bauc"]["aggregate"]
    )
    bare = replace(test, habits=None)
    assert "skipped" in benign_mix_views(val, bare, "panel", opts, val_fitness=0.3)


def test_view_weights_and_profiles_are_consistent(runs, arrays):
    y, _, _ = arrays
    ws = view_weights(habit_groups(runs), y)
    assert list(ws) == list(VIEWS)
    assert set(ws["flat"].profile_shares) == set(all_profiles())
    assert ws["flat"].effective_benign > ws["quiet"].effective_benign > 0
