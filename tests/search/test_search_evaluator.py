"""What the search scores on train: proposers read one set, the tuner another.

Proposers (mining, the parent's missed failures, LLM feedback) read all of train
by default; the tuner scores constants on a smaller stratified subset, for speed.
Both are real sandbox pools over the small synthetic corpus.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from monsearch.api.evolve import prepare_run
from monsearch.corpora.sealed import open_for_search
from monsearch.sandbox.evaluate import SandboxLimits
from monsearch.search.config import ConfigError, EvolveConfig
from monsearch.search.evaluator import SearchEvaluator, labelled
from monsearch.search.frozen import record_settings
from monsearch.search.runs import Run
from monsearch.strategies import SEEDS


def _evaluator(corpus, fitness="plain", **subsets):
    # Plain by default: a 120-run tuning subset is too small for the invariant view's
    # per-cell guards (five failures and five passes per task x outcome cell).
    corp = open_for_search(corpus)
    return SearchEvaluator(
        corp.split("train"),
        corp.split("val"),
        replace(EvolveConfig().evaluation, fitness=fitness),
        seed=0,
        workers=1,
        limits=SandboxLimits(),
        **subsets,
    )


def test_proposers_read_all_of_train_and_the_tuner_a_stratified_subset(small_corpus):
    train = labelled(open_for_search(small_corpus).split("train"))
    with _evaluator(small_corpus, train_subset=120, proposer_subset=0) as ev:
        assert [t.id for t in ev.train] == [t.id for t in train]
        assert len(ev.tune_train) == pytest.approx(120, abs=15)
        assert {t.id for t in ev.tune_train} < {t.id for t in ev.train}
        # Stratified: every (task, label) cell of train is in the tuner's subset.
        cells = Counter((t.task, t.label.is_failure) for t in train)
        assert {(t.task, t.label.is_failure) for t in ev.tune_train} == set(cells)

        seed = SEEDS["stronger"]
        on_train = ev.score_on_train(seed)
        assert on_train is not None and on_train.shape == (len(train),)
        (tuned,) = ev.score_on_train_many(seed, [None])
        assert tuned is not None and tuned.shape == (len(ev.tune_train),)
        # The same program gives the same score to the same run in both pools.
        where = {t.id: i for i, t in enumerate(ev.train)}
        assert np.array_equal(tuned, on_train[[where[t.id] for t in ev.tune_train]])
        assert 0.0 < ev.train_fitness(tuned) <= 1.0


def test_the_tuner_scores_under_the_invariant_view(small_corpus):
    from monsearch.eval.priors import context_cells

    with _evaluator(small_corpus, fitness="invariant", train_subset=0, proposer_subset=0) as ev:
        scores = ev.score_on_train(SEEDS["stronger"])
        invariant = ev.train_fitness(scores)
        y = np.array([t.label.is_failure for t in ev.tune_train])
        cells = context_cells(ev.tune_train)
        # The tuner's objective is blind to a cell lookup table, as val's fitness is.
        table = {c: y[cells == c].mean() for c in set(cells.tolist())}
        lookup = np.array([table[c] for c in cells])
        chance = ev.train_fitness(lookup)
    assert 0.0 < invariant <= 1.0
    assert chance < 0.06 < invariant


def test_without_proposer_subset_both_read_the_tuners_subset(small_corpus):
    with _evaluator(small_corpus, train_subset=120) as ev:
        assert [t.id for t in ev.train] == [t.id for t in ev.tune_train]
        assert ev._train_pool is ev._tune_pool  # one pool, not two copies


def test_a_run_made_before_proposer_subset_resumes_as_it_was_made(tmp_path):
    made = EvolveConfig(run_id="old").to_dict()
    del made["search"]["proposer_subset"]
    made["search"]["train_subset"] = 900
    (tmp_path / "old").mkdir()
    # Its settings as the run recorded them (chained) and their copy in config.json.
    record_settings(Run(tmp_path / "old"), made, created=False)
    (tmp_path / "old" / "config.json").write_text(json.dumps(made))
    cfg, _ = prepare_run(EvolveConfig(), resume="old", runs_dir=tmp_path, resume_budget=5)
    assert cfg.search.proposer_subset == 900 and cfg.budget == 5
    assert EvolveConfig().search.proposer_subset == 0  # new runs: all of train


def test_negative_subsets_are_refused():
    with pytest.raises(ConfigError, match="proposer_subset"):
        EvolveConfig().with_overrides(**{"search.proposer_subset": -1}).validate()


# -- the tuner's confirmation on held-out train runs

_TOY = 'PARAMS = {"a": 1.0}\n\n\ndef score(traj):\n    return PARAMS["a"]\n'


def _a(params):
    return 1.0 if params is None else params["a"]


def _tune(confirm):
    from monsearch.search.tuning import tune_params

    return tune_params(
        _TOY,
        lambda plist: [np.array([_a(p)]) for p in plist],
        lambda scores: float(scores[0]),  # the subset rewards a larger "a"
        trials=8,
        seed=0,
        batch=2,
        confirm=confirm,
    )


def test_a_tuning_the_held_out_runs_disagree_with_is_not_kept():
    asked = []

    def held_out_prefers_small(plist):
        asked.append(list(plist))
        return [-_a(p) for p in plist]

    result = _tune(held_out_prefers_small)
    assert result.changed == () and result.source == _TOY
    # The current values and at most three distinct best trials were checked, once.
    (checked,) = asked
    assert checked[0] is None and 2 <= len(checked) <= 4
    assert len({p["a"] for p in checked[1:]}) == len(checked) - 1


def test_a_tuning_the_held_out_runs_confirm_is_kept_with_their_choice():
    result = _tune(lambda plist: [_a(p) if p is None or _a(p) < 3.0 else 0.0 for p in plist])
    unconfirmed = _tune(None)
    assert result.changed == ("a",) and unconfirmed.changed == ("a",)
    tuned = float(result.source.split('"a": ')[1].split("}")[0])
    assert 1.0 < tuned < 3.0  # the best trial under 3, not the subset's best overall
    assert float(unconfirmed.source.split('"a": ')[1].split("}")[0]) >= tuned


def test_the_oracle_band_is_never_tuned():
    """Train scores never consult the judge, so the band's PARAMS cannot change the
    tuner's objective: tuned, they would only drift (and a wider band goes over the
    oracle cap on val). They stay as written; the others are tuned as before."""
    from monsearch.search.tuning import tune_params
    from monsearch.strategies.convention import BAND_PARAMS

    source = (
        'PARAMS = {"a": 1.0, "band_lo": 2.0, "band_hi": 3.0, "w_oracle": 4.0}\n\n\n'
        'def score(traj):\n    return PARAMS["a"]\n'
    )
    seen = []

    def score_many(plist):
        seen.extend(p for p in plist if p is not None)
        return [np.array([_a(p)]) for p in plist]

    result = tune_params(source, score_many, lambda s: float(s[0]), trials=8, seed=0,
                         fixed=BAND_PARAMS)  # fmt: skip
    assert result is not None and result.changed == ("a",)
    assert seen and all(set(p) == {"a"} for p in seen)
    assert '"band_lo": 2.0, "band_hi": 3.0, "w_oracle": 4.0' in result.source
    only_band = 'PARAMS = {"band_lo": 2.0}\n\n\ndef score(traj):\n    return 0.0\n'
    assert tune_params(only_band, score_many, lambda s: 0.0, trials=8, seed=0,
                       fixed=BAND_PARAMS) is None  # fmt: skip


def test_confirmation_reads_only_train_runs_outside_the_tuners_subset(small_corpus):
    with _evaluator(small_corpus, train_subset=120, proposer_subset=0) as ev:
        assert ev.can_confirm
        held = {ev.train[i].id for i in ev._held_out}
        assert held.isdisjoint(t.id for t in ev.tune_train)
        assert len(held) + len(ev.tune_train) == len(ev.train)
        (value,) = ev.confirm_tuning(SEEDS["stronger"], [None])
        scores = ev.score_on_train(SEEDS["stronger"])
        assert value == ev._train_fitness(ev._held_out_truth, scores[ev._held_out])
    with _evaluator(small_corpus, train_subset=120) as ev:
        assert not ev.can_confirm  # proposers read the tuner's subset: nothing held out
