"""Benign habit profiles and their mixes: what ``meta["habits"]`` of a synthetic run
means, and the ``--benign-mix`` value that moves the shares (docs/benign-mix.md).

A run's benign habits have three axes, each with a quiet and a noisy level:

- ``recon``: ``clean`` or ``recon_heavy`` (how much it looks around: side steps,
  wandering, extra reads);
- ``retry``: ``patient`` or ``retry_happy`` (how often a run whose mode leaves it the
  choice runs into a rate limit or an auth error before it backs off: a benign slip);
- ``infra``: ``no_probe`` or ``probing`` (whether it tries infrastructure locally: a
  listener started, tried from its own box and stopped).

A *profile* is one level per axis (``clean/patient/no_probe``); eight in all. A
*mix* gives, per axis, the share of runs at the noisy level; axes are drawn
independently of each other, of the behaviour mode and of the label. Presets:
``paper`` (each persona's own shares, the default; the generator holds them),
``quiet`` and ``noisy`` (:data:`SHIFT` of runs at the quiet, or noisy, level of every
axis), ``flat`` (every profile alike). Items ``LEVEL:SHARE`` move one axis
(``patient:0.7`` puts 70 % of runs at ``patient``, 30 % at ``retry_happy``), after
an optional preset: ``noisy,patient:1``.

This module is shared by the generator (which draws profiles) and the evaluation
(which reweights a corpus's benign runs to another mix), so it holds definitions
only.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from monsearch.errors import MonsearchError

#: Axis -> (quiet level, noisy level), in the order a profile name lists them.
AXES: dict[str, tuple[str, str]] = {
    "recon": ("clean", "recon_heavy"),
    "retry": ("patient", "retry_happy"),
    "infra": ("no_probe", "probing"),
}
#: Level -> (its axis, whether it is the axis's noisy level).
LEVELS: dict[str, tuple[str, bool]] = {
    level: (axis, bool(i)) for axis, pair in AXES.items() for i, level in enumerate(pair)
}
#: The preset every persona draws its own shares from (the generator's table).
PAPER = "paper"
DEFAULT_MIX = PAPER
#: Share of runs at the shifted side of every axis under ``quiet`` and ``noisy``: far
#: enough from the paper mix (about one half) to move what a detector sees, near
#: enough that a corpus reweighted to it keeps about 40 % of its benign runs' worth of
#: evidence (Kish's effective size; at 0.9 it would keep about 23 %).
SHIFT = 0.8
#: Preset -> share of the noisy level per axis (``paper``: None, per persona).
PRESETS: dict[str, dict[str, float] | None] = {
    PAPER: None,
    "quiet": dict.fromkeys(AXES, round(1.0 - SHIFT, 10)),
    "noisy": dict.fromkeys(AXES, SHIFT),
    "flat": dict.fromkeys(AXES, 0.5),
}
#: The key of a run's habits in its ``meta``.
META_KEY = "habits"


class BenignMixError(MonsearchError):
    """A ``--benign-mix`` value (or a rates file's ``benign_mix``) that cannot be used."""


def profile_name(levels: Mapping[str, str]) -> str:
    """``clean/patient/no_probe``: the levels in :data:`AXES` order."""
    return "/".join(levels[axis] for axis in AXES)


def all_profiles() -> list[str]:
    """The eight profile names, quiet levels first."""
    names = [""]
    for pair in AXES.values():
        names = [f"{n}/{lv}" if n else lv for n in names for lv in pair]
    return names


def level_share(shares: Mapping[str, float], level: str) -> float:
    """The share of runs at ``level`` under per-axis noisy shares ``shares``."""
    axis, noisy = LEVELS[level]
    return shares[axis] if noisy else 1.0 - shares[axis]


def profile_share(shares: Mapping[str, float], levels: Mapping[str, str]) -> float:
    """The share of a profile (axes independent)."""
    return math.prod(level_share(shares, levels[a]) for a in AXES)


@dataclass(frozen=True)
class BenignMix:
    """A mix of benign habit profiles: a preset and per-axis overrides.

    ``overrides`` holds ``(axis, share of its noisy level)`` in :data:`AXES` order.
    """

    base: str = DEFAULT_MIX
    overrides: tuple[tuple[str, float], ...] = ()

    @property
    def is_default(self) -> bool:
        return self.base == DEFAULT_MIX and not self.overrides

    @property
    def spec(self) -> str:
        """The canonical ``--benign-mix`` value of this mix (each override written as its
        noisy level's share)."""
        items = [f"{AXES[a][1]}:{s:g}" for a, s in self.overrides]
        return ",".join([self.base, *items])

    @property
    def name_suffix(self) -> str:
        """What a default corpus name gets for this mix (nothing for the default)."""
        if self.is_default:
            return ""
        return "-mix-" + re.sub(r"[^a-z0-9.]+", "-", self.spec.lower()).strip("-")

    def shares(self, persona_shares: Mapping[str, float] | None = None) -> dict[str, float]:
        """Share of the noisy level per axis; ``persona_shares`` stands in for ``paper``."""
        base = PRESETS[self.base]
        if base is None:
            if persona_shares is None:
                raise ValueError("the paper mix needs the persona's own shares")
            base = persona_shares
        out = {a: float(base[a]) for a in AXES}
        out.update(self.overrides)
        return out

    def describe(self) -> str:
        """One line for people."""
        head = {
            PAPER: "paper: each persona's own habit shares",
            "quiet": f"quiet: {SHIFT:.0%} of runs clean, patient and not probing (each axis)",
            "noisy": f"noisy: {SHIFT:.0%} of runs recon-heavy, retry-happy and probing (each axis)",
            "flat": "flat: every habit profile alike",
        }[self.base]
        if not self.overrides:
            return head
        moved = ", ".join(f"{AXES[a][1]} {s:.0%}" for a, s in self.overrides)
        return f"{head}; moved: {moved}"

    def record(self, per_persona: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
        """The manifest's record: the spec, and the noisy-level shares per axis each
        persona's runs were drawn with (``per_persona``: generator -> shares)."""
        table = {
            g: {a: round(float(v[a]), 6) for a in AXES} for g, v in sorted(per_persona.items())
        }
        digest = hashlib.sha256(json.dumps(table, sort_keys=True).encode()).hexdigest()
        return {
            "spec": self.spec,
            "base": self.base,
            "overrides": {AXES[a][1]: s for a, s in self.overrides},
            "axes": {a: list(pair) for a, pair in AXES.items()},
            "noisy_share": table,
            "sha256": digest,
        }


def _share(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BenignMixError(f"{where}: expected a share in [0, 1], got {value!r}")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise BenignMixError(f"{where}: {value!r} is not a share in [0, 1]")
    return float(value)


def _level(name: str, where: str) -> tuple[str, bool]:
    key = name.strip().lower().replace("-", "_")
    if key in LEVELS:
        return LEVELS[key]
    known = list(LEVELS)
    near = difflib.get_close_matches(key, [*known, *PRESETS], n=1)
    hint = f"did you mean {near[0]!r}? " if near else ""
    raise BenignMixError(
        f"{where}: {name!r} is not a habit level ({hint}levels: {', '.join(known)}; "
        f"presets, first only: {', '.join(PRESETS)})"
    )


def _from_items(base: str, items: list[tuple[str, Any]], where: str) -> BenignMix:
    """A mix from a preset and ``(level, share)`` items; both levels of one axis may be
    given only when their shares sum to 1."""
    given: dict[str, dict[bool, float]] = {}
    for name, value in items:
        axis, noisy = _level(name, where)
        share = _share(value, f"{where}: {name}")
        side = given.setdefault(axis, {})
        if noisy in side:
            raise BenignMixError(f"{where}: {name} is given twice")
        side[noisy] = share
    overrides = []
    for axis in AXES:
        side = given.get(axis)
        if not side:
            continue
        if len(side) == 2 and not math.isclose(side[True] + side[False], 1.0, abs_tol=1e-9):
            quiet, noisy = AXES[axis]
            raise BenignMixError(
                f"{where}: {quiet}:{side[False]:g} and {noisy}:{side[True]:g} are the two "
                f"levels of {axis} and must sum to 1"
            )
        overrides.append((axis, side[True] if True in side else round(1.0 - side[False], 12)))
    return BenignMix(base, tuple(overrides))


def parse_benign_mix(spec: str | BenignMix | None, where: str = "--benign-mix") -> BenignMix:
    """A ``--benign-mix`` value: a preset, ``LEVEL:SHARE`` items, or a preset then items
    (``noisy,patient:0.9``); None is the default mix."""
    if spec is None:
        return BenignMix()
    if isinstance(spec, BenignMix):
        return spec
    if not isinstance(spec, str):
        raise BenignMixError(f"{where}: expected text such as 'quiet' or 'patient:0.7'")
    parts = [p.strip() for p in spec.split(",")]
    if not spec.strip() or any(not p for p in parts):
        raise BenignMixError(
            f"{where} {spec!r}: empty item (give a preset, {', '.join(PRESETS)}, and/or "
            "LEVEL:SHARE items separated by commas)"
        )
    base = DEFAULT_MIX
    if parts[0].lower() in PRESETS:
        base = parts.pop(0).lower()
    items: list[tuple[str, Any]] = []
    for part in parts:
        if part.lower() in PRESETS:
            raise BenignMixError(f"{where} {spec!r}: a preset ({part}) may only come first")
        name, sep, raw = part.partition(":")
        if not sep:
            _level(name, f"{where} {spec!r}")  # names the nearest level or preset
            raise BenignMixError(f"{where} {spec!r}: {part} needs a share, e.g. {name}:0.7")
        try:
            value = float(raw)
        except ValueError:
            raise BenignMixError(
                f"{where} {spec!r}: {part}: the share must be a number in [0, 1]"
            ) from None
        items.append((name, value))
    return _from_items(base, items, f"{where} {spec!r}")


def parse_benign_mix_data(value: Any, where: str) -> BenignMix:
    """A rates file's ``benign_mix``: a ``--benign-mix`` text, or a table of level shares
    with an optional ``preset`` key (``where`` names the file and key in errors)."""
    if isinstance(value, str):
        return parse_benign_mix(value, where)
    if not isinstance(value, dict):
        raise BenignMixError(
            f"{where}: expected a --benign-mix text or a table of level shares, got {value!r}"
        )
    base = value.get("preset", DEFAULT_MIX)
    if base not in PRESETS:
        raise BenignMixError(f"{where}.preset: {base!r} is not one of {', '.join(PRESETS)}")
    items = [(k, v) for k, v in value.items() if k != "preset"]
    return _from_items(base, items, where)


# ---- what a run records


def run_record(
    levels: Mapping[str, str], shares: Mapping[str, float], mix: str, **values: Any
) -> dict[str, Any]:
    """A run's ``meta["habits"]``: its profile, each axis's level, the probability its
    level had under the mix it was drawn from (``p``), the mix, and the values the
    levels set (``values``)."""
    return {
        "profile": profile_name(levels),
        **{a: levels[a] for a in AXES},
        "p": {a: round(level_share(shares, levels[a]), 6) for a in AXES},
        "mix": mix,
        **values,
    }


def levels_of(meta: Mapping[str, Any] | None) -> dict[str, str] | None:
    """A run's levels per axis from its meta, or None when it records no (valid) habits."""
    rec = (meta or {}).get(META_KEY)
    if not isinstance(rec, Mapping):
        return None
    out = {}
    for axis, pair in AXES.items():
        level = rec.get(axis)
        if level not in pair:
            return None
        out[axis] = level
    return out
