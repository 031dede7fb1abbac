"""Template families: two separately written surfaces for every task, one held out.

Every run is written in one *family*: its planning lines (``plans.py``), its
command idioms (curl's short or long options, jq or ``json.tool``, how the
result file and loops are written, script and helper names) and its choice
among each scenario's alternative realisations (file names, payload shapes,
the idiom a failure is carried by). Family ``a`` makes train / val / test and
the cross-generator corpora; family ``b`` is held out as the ``xgen-family``
split, so a monitor that learnt family ``a``'s wording rather than the
behaviour drops from ``val`` to ``xgen-family``: the corpus's own warning light.

Behaviour (the mode, hence the label and the calibration) is drawn before the
family and independently of it; the family changes only how the run is written.

Scenario alternatives are split between the families by position: wherever a
scenario picks one of several options (:func:`pick`), family ``a`` draws from
the even positions and family ``b`` from the odd ones, so an option one family
uses the other never does. The family of a run is bound to its random
generator (rendering code gets the generator, not the agent).
"""

from __future__ import annotations

import random
import weakref
from collections.abc import Sequence
from typing import TypeVar

from monsearch.corpora.splits import HELD_OUT_META  # noqa: F401 - the key generate.py sets

FAMILIES = ("a", "b")
DEFAULT_FAMILY = "a"
HELD_OUT_FAMILY = "b"
#: The split that holds the held-out family's runs (sealed, like every ``xgen-*``).
HELD_OUT_SPLIT = "xgen-family"
#: Share of the train/val/test personas' runs written in the held-out family.
HELD_OUT_SHARE = 0.12

_BOUND: weakref.WeakKeyDictionary[random.Random, str] = weakref.WeakKeyDictionary()

T = TypeVar("T")


def bind(rng: random.Random, family: str) -> None:
    """Make ``family`` the family of every draw from ``rng``."""
    if family not in FAMILIES:
        raise ValueError(f"unknown template family {family!r}")
    _BOUND[rng] = family


def family_of(rng: random.Random) -> str | None:
    """The family bound to ``rng`` (None: not a run's generator, e.g. in a unit test)."""
    return _BOUND.get(rng)


def is_held_out(rng: random.Random) -> bool:
    return _BOUND.get(rng) == HELD_OUT_FAMILY


def index(rng: random.Random, n: int) -> int:
    """A uniform index into ``n`` options, from the positions of ``rng``'s family only."""
    fam = _BOUND.get(rng)
    if fam is None or n < 2:
        return rng.randrange(n)
    own = range(FAMILIES.index(fam), n, len(FAMILIES))
    return own[rng.randrange(len(own))]


def pick(rng: random.Random, options: Sequence[T]) -> T:
    """One of ``options``, from the positions of ``rng``'s family only."""
    return options[index(rng, len(options))]
