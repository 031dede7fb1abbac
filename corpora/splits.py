"""Split assignment: train / val / test, plus one held-out split per cross generator.

Cross generators' trajectories go to their own ``xgen-<slug>`` split and nowhere
else, so a cross-generator corpus holds only generators absent from training
and validation. A trajectory whose ``meta["held_out_split"]`` names an
``xgen-*`` split (the synthetic generator's held-out template family, split
``xgen-family``) goes there, whatever its generator. The rest is stratified by (task, label) and allocated by
systematic sampling with a random offset: every stratum's split sizes are
within one of ``n * fraction`` and unbiased in expectation, so even strata of
one or two trajectories do not all land in ``train``.

Everything is a pure function of the trajectory ids, their strata and the seed:
ids are sorted first, and each stratum's shuffle is seeded from sha256 of
(seed, stratum), never from hash() or global random state.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from monsearch.corpora.model import Trajectory
from monsearch.errors import MonsearchError

TRAIN, VAL, TEST = "train", "val", "test"
MAIN_SPLITS = (TRAIN, VAL, TEST)
UNSPLIT = "all"
XGEN_PREFIX = "xgen-"
#: Trajectory meta key: an ``xgen-*`` split the trajectory is held out to by its producer.
HELD_OUT_META = "held_out_split"
DEFAULT_FRACTIONS = (0.6, 0.2, 0.2)
METHOD = "stratified-systematic/v1 (task, label)"

_SLUG_RE = re.compile(r"[^a-z0-9]+")
_SPLIT_NAME_RE = re.compile(r"^(train|val|test|all|xgen-[a-z0-9]+(?:-[a-z0-9]+)*)$")


class SplitError(MonsearchError):
    """Bad split request: unknown generator, bad fractions, bad split name."""


def generator_slug(name: str) -> str:
    """Lowercase; every run of non-alphanumerics becomes one ``-`` (ends trimmed)."""
    slug = _SLUG_RE.sub("-", name.lower()).strip("-")
    if not slug:
        raise SplitError(f"generator name {name!r} has no letters or digits to make a split name")
    return slug


def xgen_split_name(generator: str) -> str:
    return XGEN_PREFIX + generator_slug(generator)


def is_split_name(name: str) -> bool:
    return bool(_SPLIT_NAME_RE.match(name))


def split_order(names: Iterable[str]) -> list[str]:
    """Canonical display/load order: train, val, test, all, then xgen-* sorted."""
    rank = {TRAIN: 0, VAL: 1, TEST: 2, UNSPLIT: 3}
    return sorted(set(names), key=lambda n: (rank.get(n, 4), n))


def parse_fractions(fractions: Sequence[float]) -> tuple[float, float, float]:
    fr = tuple(float(f) for f in fractions)
    if len(fr) != 3:
        raise SplitError(f"fractions must be three numbers (train, val, test), got {len(fr)}")
    if any(not (0.0 <= f <= 1.0) for f in fr):
        raise SplitError(f"fractions must each lie in [0, 1], got {list(fr)}")
    if abs(sum(fr) - 1.0) > 1e-6:
        raise SplitError(f"fractions must sum to 1, got {list(fr)} (sum {sum(fr):g})")
    return fr  # type: ignore[return-value]


def resolve_generators(trajectories: Sequence[Trajectory], names: Sequence[str]) -> list[str]:
    """Map user-given names (exact generator ids, or their slugs) onto generator ids."""
    return resolve_generator_names({t.generator for t in trajectories}, names)


def resolve_generator_names(generators: Iterable[str], names: Sequence[str]) -> list[str]:
    """Map user-given names (exact ids, or their slugs) onto the ``generators`` ids.

    Needs only the generator ids, so a command can check its ``--cross-generators``
    against a manifest's counts before loading any trajectory.
    """
    known = sorted(set(generators))
    by_slug: dict[str, list[str]] = defaultdict(list)
    for g in known:
        by_slug[generator_slug(g)].append(g)
    clash = {s: gs for s, gs in by_slug.items() if len(gs) > 1}
    out: list[str] = []
    for raw in names:
        name = raw.strip()
        if not name:
            continue
        if name in known:
            match = name
        elif generator_slug(name) in by_slug and generator_slug(name) not in clash:
            match = by_slug[generator_slug(name)][0]
        else:
            raise SplitError(
                f"unknown cross generator {name!r}; known generators: " + ", ".join(known)
            )
        if generator_slug(match) in clash:
            raise SplitError(
                f"generators {clash[generator_slug(match)]} share the split name "
                f"{xgen_split_name(match)!r}; rename one before holding it out"
            )
        if match not in out:
            out.append(match)
    return out


def check_cross_generators(generators: Iterable[str], names: Sequence[str]) -> list[str]:
    """:func:`resolve_generator_names`, and at least one generator left for train/val/test."""
    known = set(generators)
    held = resolve_generator_names(known, names)
    if known and set(held) == known:
        raise SplitError("every generator is held out; nothing is left for train/val/test")
    return held


def _stratum(t: Trajectory) -> tuple[str, str]:
    label = t.label
    state = "unlabelled" if label is None else ("fail" if label.is_failure else "pass")
    return (t.task, state)


def _stratum_rng(seed: int, stratum: tuple[str, str]) -> random.Random:
    digest = hashlib.sha256(f"{seed}\x00{stratum[0]}\x00{stratum[1]}".encode()).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


def _systematic(
    ids: list[str], fractions: tuple[float, float, float], rng: random.Random
) -> dict[str, str]:
    rng.shuffle(ids)
    n = len(ids)
    offset = rng.random()
    bounds = (fractions[0], fractions[0] + fractions[1])
    out: dict[str, str] = {}
    for i, tid in enumerate(ids):
        x = (i + offset) / n
        out[tid] = TRAIN if x < bounds[0] else (VAL if x < bounds[1] else TEST)
    return out


@dataclass(frozen=True)
class Split:
    """An assignment (trajectory id -> split name) and the record that reproduces it."""

    assignment: dict[str, str]
    info: dict[str, Any]


def make_split(
    trajectories: Iterable[Trajectory],
    *,
    seed: int,
    cross_generators: Sequence[str] = (),
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
) -> Split:
    trajs = list(trajectories)
    fr = parse_fractions(fractions)
    held_out = check_cross_generators({t.generator for t in trajs}, cross_generators)
    held = set(held_out)

    ids_seen: set[str] = set()
    strata: dict[tuple[str, str], list[str]] = defaultdict(list)
    assignment: dict[str, str] = {}
    held_meta: dict[str, int] = {}
    for t in trajs:
        if t.id in ids_seen:
            raise SplitError(f"duplicate trajectory id {t.id!r}")
        ids_seen.add(t.id)
        own = (t.meta or {}).get(HELD_OUT_META)
        if t.generator in held:
            assignment[t.id] = xgen_split_name(t.generator)
        elif isinstance(own, str) and own.startswith(XGEN_PREFIX) and is_split_name(own):
            assignment[t.id] = own
            held_meta[own] = held_meta.get(own, 0) + 1
        else:
            strata[_stratum(t)].append(t.id)
    for key in sorted(strata):
        assignment.update(_systematic(sorted(strata[key]), fr, _stratum_rng(seed, key)))

    info = {
        "method": METHOD,
        "seed": int(seed),
        "fractions": list(fr),
        "cross_generators": {xgen_split_name(g): g for g in sorted(held_out)},
    }
    if held_meta:  # held out by the trajectories' producer (e.g. a template family)
        info["held_out_by_meta"] = dict(sorted(held_meta.items()))
    return Split(assignment=dict(sorted(assignment.items())), info=info)


def assign_splits(
    trajectories: Iterable[Trajectory],
    *,
    seed: int,
    cross_generators: Sequence[str] = (),
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
) -> dict[str, str]:
    """Trajectory id -> split name (``train``/``val``/``test``/``xgen-<slug>``)."""
    return make_split(
        trajectories, seed=seed, cross_generators=cross_generators, fractions=fractions
    ).assignment
