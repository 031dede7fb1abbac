"""Realism checks of the synthetic corpus (issue 8, item 10), on a reduced corpus.

A learner must not get the label from think text or from outcome and run
length: on the real apps those carry nothing. Measured as ``bench/realism.py``
does (TF-IDF + logistic regression on think text; boosted trees on solved,
outcome, step limit, step count and think count), fitted on ``train`` and
scored on ``val``, against the generator's true labels and the panel's.

Two corpora of a few thousand runs: the default calibration (the paper's
per-task failure rates, so the *task* is a prior: checked within task, on
pairs of runs of the same task) and the per-task balanced variant
(``balance="task"``, where the task is no prior: checked pooled).

Two checks need the default corpus itself (15,000 runs, seed 0: generated once
per module, about a minute): a learner's reach grows with ``train`` (TF-IDF
reaches AUROC 0.84 on the 3,000-run corpus's train, 0.92 on the default's), and
label purity counts tokens in >= 50 runs, which a small train hides. On it: no
token in >= 50 train runs is >= 95 % one label (outside ``PURITY_ALLOW``, each
entry with its reason), and TF-IDF + logistic regression on whole transcripts
stays under AUROC 0.93 on ``val`` against true labels. The allow-list's tokens
(each with its reason) are pure there only through the paper's task rates: on the
same corpus with every task at the same failure shares, no token is pure even
with the allow-list emptied.
"""

from __future__ import annotations

import pytest

from monsearch.corpora.splits import make_split
from monsearch.synth import realism as R
from monsearch.synth.generate import (
    DEFAULT_FRACTIONS,
    DEFAULT_SEED,
    DEFAULT_SIZE,
    generate,
)
from monsearch.synth.personas import DEFAULT_CROSS_GENERATORS

SIZE = 3000
SEED = 7
LIMIT = 0.65


def _train_val(balance: str, size: int = SIZE, seed: int = SEED) -> tuple[list, list]:
    trajs = generate(size, seed, balance=balance)
    split = make_split(
        trajs,
        seed=seed,
        cross_generators=list(DEFAULT_CROSS_GENERATORS),
        fractions=DEFAULT_FRACTIONS,
    )
    train = [t for t in trajs if split.assignment[t.id] == "train"]
    val = [t for t in trajs if split.assignment[t.id] == "val"]
    return train, val


@pytest.fixture(scope="module")
def paper() -> tuple[list, list]:
    return _train_val("paper")


@pytest.fixture(scope="module")
def balanced() -> tuple[list, list]:
    return _train_val("task")


@pytest.fixture(scope="module")
def default() -> tuple[list, list]:
    """``train`` and ``val`` of the default corpus, split as ``corpus synth`` splits it."""
    return _train_val("paper", DEFAULT_SIZE, DEFAULT_SEED)


@pytest.fixture(scope="module")
def default_balanced() -> tuple[list, list]:
    """The default corpus's size and seed, every task at the same failure shares."""
    return _train_val("task", DEFAULT_SIZE, DEFAULT_SEED)


LABELS = {"true": R.true_label, "panel": R.panel_label}


@pytest.mark.parametrize("label", sorted(LABELS))
def test_think_text_does_not_state_the_label(paper, balanced, label: str) -> None:
    fn = LABELS[label]
    within = R.think_only_auroc(*paper, fn)["within_task"]
    pooled = R.think_only_auroc(*balanced, fn)["pooled"]
    assert within is not None and within < LIMIT, within
    assert pooled is not None and pooled < LIMIT, pooled


@pytest.mark.parametrize("label", sorted(LABELS))
def test_outcome_and_length_do_not_carry_the_label(paper, balanced, label: str) -> None:
    fn = LABELS[label]
    on_paper = R.length_only_auroc(*paper, fn)
    assert on_paper["within_task"] is not None and on_paper["within_task"] < LIMIT, on_paper
    assert on_paper["pooled"] is not None and on_paper["pooled"] < LIMIT, on_paper
    pooled = R.length_only_auroc(*balanced, fn)["pooled"]
    assert pooled is not None and pooled < LIMIT, pooled


def test_balanced_variant_evens_out_task_failure_rates(paper, balanced) -> None:
    def spread(trajs: list) -> float:
        rates = []
        for task in sorted({t.task for t in trajs}):
            ts = [t for t in trajs if t.task == task]
            rates.append(sum(map(R.panel_label, ts)) / len(ts))
        return max(rates) - min(rates)

    train_paper, _ = paper
    train_bal, _ = balanced
    assert spread(train_bal) < 0.3 < spread(train_paper)
    assert all(t.meta.get("balance") == "task" for t in train_bal)
    assert not any("balance" in t.meta for t in train_paper)


@pytest.mark.parametrize("label", sorted(LABELS))
def test_no_token_states_the_label(default, label: str) -> None:
    report = R.token_purity(default[0], LABELS[label])
    assert report["n_pure"] == 0, report["top"]


@pytest.mark.parametrize("label", sorted(LABELS))
def test_allowed_tokens_are_pure_only_through_the_task_prior(default_balanced, label: str) -> None:
    # With no task a prior, no token is pure even with the allow-list emptied: what
    # it lists is pure on the default corpus only because of the paper's task rates.
    report = R.token_purity(default_balanced[0], LABELS[label], allow=frozenset())
    assert report["n_pure"] == 0, report["top"]


def test_whole_transcript_tfidf_stays_under_the_ceiling(default) -> None:
    # Against true labels: the corpus must keep failures that need the rubric read.
    auroc = R.text_auroc(*default, R.true_label)["pooled"]
    assert auroc is not None and auroc < 0.93, auroc
