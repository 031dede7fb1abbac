"""How exported monitors print numbers: exactly where a value is compared, rounded where
it is only read.

A score, and a threshold ``tau`` (one of the val benign scores), are printed exactly
(the shortest decimal that reads back as the same float): a decision compares the two
exactly, so a rounded threshold could make a score just above it look equal to it, and
a score must stay recognisable as the run's. The figures derived from them only to be
read carry float noise (``0.6000000000000006``, ``2.0553413618763834``): ``g`` and
``audit_probability`` (the share of ties audited at the threshold), a finding's
``delta`` (the difference of two prefix scores) and the program's detector values.
JSON output rounds those to :data:`SIGNIFICANT` significant digits; text output rounds
every number for reading. The values the plugin computes, and its metadata, are never
rounded: only what is printed.

Standard library only: the plugin ships this file as ``_display.py``, and
``monsearch score`` uses monsearch's copy whichever version wrote the plugin.
"""

from __future__ import annotations

import math
from typing import Any

#: Significant digits of the derived figures in JSON output.
SIGNIFICANT = 6


def rounded(value: Any, digits: int = SIGNIFICANT) -> Any:
    """``value`` to ``digits`` significant digits if it is a finite float, else as it is."""
    if type(value) is not float or not math.isfinite(value):
        return value
    return float(f"{value:.{digits}g}")


def percent(fraction: float) -> str:
    """An audit budget for reading: ``0.05`` -> ``5%``, ``0.025`` -> ``2.5%`` (not ``2%``)."""
    return f"{fraction * 100:.3g}%"


def decision(d: dict[str, Any]) -> dict[str, Any]:
    """A ``decide()`` result for JSON output: ``tau`` exact, ``g`` and
    ``audit_probability`` rounded."""
    return {k: rounded(v) if k in ("g", "audit_probability") else v for k, v in d.items()}


def finding_steps(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``findings()["steps"]`` for JSON output: each ``delta`` rounded."""
    return [{**s, "delta": rounded(s["delta"])} if "delta" in s else s for s in steps]


def findings(f: dict[str, Any]) -> dict[str, Any]:
    """A ``findings()`` result for JSON output: ``score`` exact, detector values and
    deltas rounded."""
    out = dict(f)
    if isinstance(f.get("detectors"), dict):
        out["detectors"] = {k: rounded(v) for k, v in f["detectors"].items()}
    if isinstance(f.get("steps"), list):
        out["steps"] = finding_steps(f["steps"])
    return out
