"""Template families (issue 8, item 9): a held-out family shares no template with train/val.

Every run is written in one template family (``synth/family.py``):
family ``a`` for train / val / test and the cross-generator corpora, family
``b`` held out as the ``xgen-family`` split. The families differ in planning
lines, command idioms and the scenarios' alternative realisations; behaviour
(the mode, hence the label) is drawn independently of the family.
"""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest

from monsearch.commands.sandbox import _check_split
from monsearch.corpora.splits import make_split
from monsearch.errors import MonsearchError
from monsearch.synth import family as fam
from monsearch.synth.generate import generate
from monsearch.synth.personas import DEFAULT_CROSS_GENERATORS, PERSONA_BY_GENERATOR

SIZE, SEED = 1500, 11


@pytest.fixture(scope="module")
def runs() -> list:
    return generate(SIZE, SEED)


def _by_family(runs: list) -> tuple[list, list]:
    a = [t for t in runs if t.meta["family"] == "a"]
    b = [t for t in runs if t.meta["family"] == fam.HELD_OUT_FAMILY]
    return a, b


def test_held_out_family_goes_to_its_own_split(runs) -> None:
    split = make_split(runs, seed=SEED, cross_generators=list(DEFAULT_CROSS_GENERATORS))
    a, b = _by_family(runs)
    assert b, "no run of the held-out family"
    assert {split.assignment[t.id] for t in b} == {fam.HELD_OUT_SPLIT}
    assert fam.HELD_OUT_SPLIT not in {split.assignment[t.id] for t in a}
    # Only personas of train/val/test write in the held-out family, at about its share.
    assert not any(PERSONA_BY_GENERATOR[t.generator].cross_generator for t in b)
    main = [t for t in runs if not PERSONA_BY_GENERATOR[t.generator].cross_generator]
    assert abs(len(b) / len(main) - fam.HELD_OUT_SHARE) < 0.04
    # Behaviour does not depend on the family: both see every kind of mode.
    kinds = Counter((t.meta["family"], t.meta["ground_truth_failure"]) for t in runs)
    assert kinds[("b", True)] > 20 and kinds[("b", False)] > 20


def test_no_think_line_shared_between_families(runs) -> None:
    a, b = _by_family(runs)

    def thoughts(ts: list) -> set[str]:
        return {s.text for t in ts for s in t.steps if s.tool == "think"}

    ta, tb = thoughts(a), thoughts(b)
    assert len(tb) > 20
    assert not ta & tb


# a short option on a curl command line (outside quoted values)
_SHORT_CURL = re.compile(r"\bcurl (?:[^|;&\n'\"]*\s)?-[A-Za-z]")
_LONG_CURL = re.compile(
    r"\bcurl (?:[^|;&\n]* )?--(?:silent|header|request|data|include|write-out)\b"
)


def test_command_idioms_differ(runs) -> None:
    a, b = _by_family(runs)

    def commands(ts: list) -> list[str]:
        return [s.text for t in ts for s in t.steps if s.tool == "execute_command"]

    # (file contents written with a heredoc are not command idioms)
    ca, cb = ([c for c in commands(ts) if not c.startswith("cat > ")] for ts in (a, b))
    assert not any(_SHORT_CURL.search(c) for c in cb)
    assert any(_LONG_CURL.search(c) for c in cb)
    assert not any(_LONG_CURL.search(c) for c in ca)
    assert not any("<<'EOF'" in c for c in cb)
    assert not any("json.tool" in c for c in ca) and any("json.tool" in c for c in cb)


def test_alternatives_split_by_position() -> None:
    options = tuple("abcdefg")
    seen = {}
    for f in fam.FAMILIES:
        rng = random.Random(3)
        fam.bind(rng, f)
        seen[f] = {fam.pick(rng, options) for _ in range(200)}
    assert seen["a"] == set("aceg") and seen["b"] == set("bdf")
    # An unbound generator (a unit test's own) draws from every option.
    assert {fam.pick(random.Random(i), options) for i in range(200)} == set(options)


def test_held_out_family_is_sealed() -> None:
    with pytest.raises(MonsearchError, match="sealed"):
        _check_split(fam.HELD_OUT_SPLIT)
