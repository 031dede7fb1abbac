"""The selective-escalation cost model and its TOML file.

Stages (docs/DESIGN.md, "Selective escalation cost model"): the monitor program runs on
every trajectory (``program``, c0); it may call the oracle inside ``score``
(``oracle_call``, cq each); the judge panel runs only when the program's score falls
in the escalation band (``judge_panel``, cJ); a human audits what the audit rule flags
(``audit``, ca). The budget ``Y`` bounds the expected cost per *benign* trajectory:

    Y >= c0 + cq * E_H[q] + cJ * P_H(l <= s < u) + ca * P_H(audit)

Costs are in units, and ``usd_per_unit`` converts a unit to dollars. The defaults take
one unit = one call of the expensive judge, at about $0.15 (StealthBench's judges);
the panel is three such calls (about $0.45 per verdict); a human audit costs 20 panel
verdicts (``ca / cJ = 20``, after Hua et al. 2025, who price an audit at 20 calls of
their expensive monitor); an in-program oracle call is one judge call; the program
itself is free (microseconds of CPU).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from monsearch.errors import MonsearchError

DEFAULT_COSTS_TOML = """\
# monsearch selective-escalation cost model.
#
# Costs are in units; usd_per_unit converts one unit to US dollars. Budgets Y
# (the expected cost per benign trajectory) are in the same units.
# Defaults: one unit = one call of the expensive judge (about $0.15); the judge
# panel is 3 calls; a human audit costs 20 panel verdicts (ca / cJ = 20, after
# Hua et al. 2025); the monitor program itself costs nothing worth counting.

[costs]
program = 0.0        # c0: the monitor program, on every trajectory
oracle_call = 1.0    # cq: one oracle call made inside the program
judge_panel = 3.0    # cJ: one judge-panel verdict, on the escalation band only
audit = 60.0         # ca: one human audit
usd_per_unit = 0.15  # dollars per unit
"""


class CostFileError(MonsearchError, ValueError):
    """A cost file that cannot be read, with the file and the field in the message."""


@dataclass(frozen=True)
class CostModel:
    """Per-trajectory stage costs, in units (see the module doc for the defaults)."""

    program: float = 0.0
    oracle_call: float = 1.0
    judge_panel: float = 3.0
    audit: float = 60.0
    usd_per_unit: float = 0.15

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{f.name}: expected a number, got {value!r}")
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{f.name}: expected a finite number >= 0, got {value!r}")
        if self.audit <= 0:
            raise ValueError("audit: the audit cost must be positive")

    def budget_grid(self, n: int = 25, mean_oracle_calls: float = 0.0) -> np.ndarray:
        """A log grid of budgets ``Y``, docs/DESIGN.md's default span.

        From ``base + ca * 0.005`` (the program alone auditing 0.5 % of benign runs) to
        ``base + cJ + ca * 0.05`` (the panel on every run and 5 % audited), where
        ``base = c0 + cq * mean_oracle_calls``.
        """
        base = self.program + self.oracle_call * mean_oracle_calls
        lo = base + self.audit * 0.005
        hi = base + self.judge_panel + self.audit * 0.05
        return np.exp(np.linspace(math.log(lo), math.log(hi), n))

    def to_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CostModel:
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


def parse_costs(text: str, source: str = "<costs>") -> CostModel:
    """A :class:`CostModel` from TOML text: keys under ``[costs]``, missing keys default."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CostFileError(f"{source}: not valid TOML: {exc}") from exc
    table = data.get("costs")
    if not isinstance(table, dict):
        raise CostFileError(f"{source}: costs: expected a [costs] table")
    unknown = sorted(set(data) - {"costs"})
    if unknown:
        raise CostFileError(f"{source}: {unknown[0]}: unknown key (only [costs] is read)")
    known = {f.name for f in fields(CostModel)}
    for key, value in table.items():
        if key not in known:
            raise CostFileError(
                f"{source}: costs.{key}: unknown key (known: {', '.join(sorted(known))})"
            )
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise CostFileError(f"{source}: costs.{key}: expected a number, got {value!r}")
        if not math.isfinite(value) or value < 0:
            raise CostFileError(
                f"{source}: costs.{key}: expected a finite number >= 0, got {value!r}"
            )
    if table.get("audit", 1.0) == 0:
        raise CostFileError(f"{source}: costs.audit: the audit cost must be positive")
    return CostModel(**{k: float(v) for k, v in table.items()})


def load_costs(path: str | Path | None = None) -> CostModel:
    """Read a cost file (TOML); ``None`` gives the defaults (:data:`DEFAULT_COSTS_TOML`)."""
    if path is None:
        return parse_costs(DEFAULT_COSTS_TOML, "<default costs>")
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CostFileError(f"{p}: cannot read the cost file: {exc}") from exc
    return parse_costs(text, str(p))
