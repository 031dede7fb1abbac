"""Split assignment: determinism, stratification, exclusive cross-generator splits."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from store_factory import mixed_corpus, traj

from monsearch.corpora.splits import (
    SplitError,
    assign_splits,
    generator_slug,
    is_split_name,
    make_split,
    split_order,
)

GENS = (
    "anthropic/claude-opus-4.8",
    "z-ai/glm-5.2",
    "openai/gpt-5.6-sol",
    "nvidia/nemotron-3-ultra",
)


def _big(n=1200):
    return mixed_corpus(n, generators=GENS)


def test_same_seed_same_split_any_input_order():
    trajs = _big()
    a = assign_splits(trajs, seed=7, cross_generators=["openai/gpt-5.6-sol"])
    b = assign_splits(list(reversed(trajs)), seed=7, cross_generators=["openai/gpt-5.6-sol"])
    assert a == b
    assert list(a) == sorted(a)  # the returned mapping itself is ordered by id
    c = assign_splits(trajs, seed=8, cross_generators=["openai/gpt-5.6-sol"])
    assert c != a
    # Sizes move by at most one per stratum (12 strata here) between seeds.
    ca, cc = Counter(a.values()), Counter(c.values())
    assert all(abs(ca[s] - cc[s]) <= 12 for s in ("train", "val", "test"))
    assert ca["xgen-openai-gpt-5-6-sol"] == cc["xgen-openai-gpt-5-6-sol"] == 300


def test_assignment_does_not_depend_on_other_strata():
    trajs = _big()
    full = assign_splits(trajs, seed=3)
    only_one_task = [t for t in trajs if t.task == "adtech-admin"]
    part = assign_splits(only_one_task, seed=3)
    assert part == {tid: full[tid] for tid in part}


def test_cross_generators_go_to_their_own_split_and_nowhere_else():
    trajs = _big()
    held = ["openai/gpt-5.6-sol", "nvidia-nemotron-3-ultra"]  # an id and a slug
    split = make_split(trajs, seed=0, cross_generators=held)
    gen_of = {t.id: t.generator for t in trajs}
    by_split = defaultdict(set)
    for tid, s in split.assignment.items():
        by_split[s].add(gen_of[tid])
    assert by_split["xgen-openai-gpt-5-6-sol"] == {"openai/gpt-5.6-sol"}
    assert by_split["xgen-nvidia-nemotron-3-ultra"] == {"nvidia/nemotron-3-ultra"}
    for s in ("train", "val", "test"):
        assert by_split[s] == {"anthropic/claude-opus-4.8", "z-ai/glm-5.2"}
    assert split_order(by_split) == [
        "train",
        "val",
        "test",
        "xgen-nvidia-nemotron-3-ultra",
        "xgen-openai-gpt-5-6-sol",
    ]
    assert split.info["cross_generators"] == {
        "xgen-nvidia-nemotron-3-ultra": "nvidia/nemotron-3-ultra",
        "xgen-openai-gpt-5-6-sol": "openai/gpt-5.6-sol",
    }
    assert split.info["seed"] == 0 and split.info["fractions"] == [0.6, 0.2, 0.2]


def test_unknown_cross_generator_lists_known_ones():
    with pytest.raises(SplitError) as err:
        assign_splits(_big(100), seed=0, cross_generators=["openai/gpt-4"])
    msg = str(err.value)
    assert "unknown cross generator 'openai/gpt-4'" in msg
    for g in GENS:
        assert g in msg


def test_holding_out_everything_is_refused():
    with pytest.raises(SplitError, match="every generator is held out"):
        assign_splits(_big(40), seed=0, cross_generators=list(GENS))


def test_each_stratum_is_split_by_the_fractions():
    trajs = _big(2000)
    fractions = (0.6, 0.2, 0.2)
    a = assign_splits(trajs, seed=11, fractions=fractions)
    strata = defaultdict(list)
    for t in trajs:
        label = t.label
        strata[(t.task, "u" if label is None else label.is_failure)].append(a[t.id])
    assert len(strata) == 12
    for members in strata.values():
        n = len(members)
        c = Counter(members)
        for name, f in zip(("train", "val", "test"), fractions, strict=True):
            assert abs(c[name] - n * f) < 1, (n, c)


def test_tiny_strata_are_not_all_sent_to_train():
    # 300 strata of one trajectory each: systematic sampling with a random offset
    # sends each to train/val/test with probability 0.6/0.2/0.2.
    trajs = [traj(f"x{i:03d}", task=f"task-{i:03d}") for i in range(300)]
    c = Counter(assign_splits(trajs, seed=5).values())
    assert c["train"] + c["val"] + c["test"] == 300
    assert 140 <= c["train"] <= 220 and 35 <= c["val"] <= 85 and 35 <= c["test"] <= 85


def test_zero_fraction_split_stays_empty():
    c = Counter(assign_splits(_big(300), seed=1, fractions=(0.8, 0.0, 0.2)).values())
    assert c["val"] == 0 and c["train"] == 240 and c["test"] == 60


@pytest.mark.parametrize(
    ("fractions", "message"),
    [
        ((0.5, 0.5), "three numbers"),
        ((0.6, 0.3, 0.2), "sum to 1"),
        ((1.2, -0.1, -0.1), r"\[0, 1\]"),
    ],
)
def test_bad_fractions(fractions, message):
    with pytest.raises(SplitError, match=message):
        assign_splits(_big(10), seed=0, fractions=fractions)


def test_duplicate_ids_refused():
    t = traj("same")
    with pytest.raises(SplitError, match="duplicate trajectory id 'same'"):
        assign_splits([t, t], seed=0)


def test_slugs_and_split_names():
    assert generator_slug("openrouter/z-ai/glm-5.2") == "openrouter-z-ai-glm-5-2"
    assert generator_slug("  Weird__Name!! ") == "weird-name"
    with pytest.raises(SplitError):
        generator_slug("///")
    for ok in ("train", "val", "test", "all", "xgen-a-b1"):
        assert is_split_name(ok)
    for bad in ("xgen-", "xgen-A", "Train", "../x", "xgen-a--b", "other"):
        assert not is_split_name(bad)


def test_generators_sharing_a_slug_cannot_be_held_out():
    trajs = [
        traj("a", generator="Gen/X"),
        traj("b", generator="gen-x"),
        traj("c", generator="other"),
    ]
    with pytest.raises(SplitError, match="share the split name"):
        assign_splits(trajs, seed=0, cross_generators=["Gen/X"])
