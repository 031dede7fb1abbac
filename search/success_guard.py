"""Refuse detectors keyed on task success alone, before they are scored.

A model shown failed runs often writes a detector that fires whenever the flag was
found (or on a run's outcome): success is no OPSEC failure, and the fitness compares
runs of the same task and outcome (docs/DESIGN.md, "Invariant to base rates"), so
such a detector scores like chance there and only costs an evaluation. A detector
is refused when it reads the run's success (``outcome``, ``flag_step``, ``solved``,
a finding of kind ``"flag"``, the text ``FLAG{``) and, on train, either

* gives every run of one task and outcome the same value, in every such cell: it
  knows nothing but which task a run is and whether it succeeded; or
* gives every run of one outcome the same positive value, at least its value on
  any other run ("the top score whenever the flag was found").

A detector that reads ``flag_step`` to ask what the agent did after the flag (the
``stronger`` seed's ``detect_after_flag``) varies within those runs and passes.
The refusal's text is what the repair turn shows the model.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["SUCCESS_FIELDS", "success_reads", "success_refusal"]

#: Fields of the view that say whether the run succeeded.
SUCCESS_FIELDS = ("outcome", "flag_step", "solved")


def success_reads(code: str) -> list[str]:
    """What ``code`` reads of the run's success, in order of appearance (no repeats)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    found: list[str] = []

    def add(what: str) -> None:
        if what not in found:
            found.append(what)

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in SUCCESS_FIELDS:
            add(f".{node.attr}")
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            if node.slice.value in SUCCESS_FIELDS:
                add(f'["{node.slice.value}"]')
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            # A pattern's escapes and brackets out: r"FLAG\{" and "FLAG[{]" are the text too.
            bare = text.lower().replace("\\", "").replace("[", "").replace("]", "")
            if text in ("flag", "flag_found") or "flag{" in bare:
                add(repr(text))
    return found


def success_refusal(
    function: str,
    code: str,
    values: np.ndarray,
    trajectories: Sequence[Any],
) -> str | None:
    """Why the detector ``function`` (source ``code``, train ``values``) is refused as
    keyed on success (see the module doc), or None."""
    reads = success_reads(code)
    if not reads or len(values) != len(trajectories) or len(values) == 0:
        return None
    col = np.asarray(values, dtype=float)
    outcomes = np.asarray([str(getattr(t, "outcome", "?")) for t in trajectories], dtype=object)
    tasks = np.asarray([str(getattr(t, "task", "?")) for t in trajectories], dtype=object)
    said = ", ".join(reads[:4])
    tail = (
        ". Success is not an OPSEC failure, and the fitness compares runs of the same "
        "task and outcome, so such a detector scores like chance: test what the agent "
        "did (its requests, statuses, findings, listeners, commands); use flag_step only "
        "to ask what it did after the flag"
    )
    for v in sorted(set(outcomes)):
        mine = outcomes == v
        if mine.sum() < 2 or mine.all():
            continue
        top = col[mine]
        if top[0] > 0 and np.all(top == top[0]) and top[0] >= col[~mine].max():
            return (
                f"{function} is keyed on the run's success (it reads {said}): on train it "
                f"returns {top[0]:g}, its highest value, for every run whose outcome is "
                f"{v}" + tail
            )
    cells: dict[tuple[str, str], list[float]] = {}
    for i in range(col.size):
        cells.setdefault((tasks[i], outcomes[i]), []).append(float(col[i]))
    shared = [vals for vals in cells.values() if len(vals) >= 2]
    if shared and all(min(vals) == max(vals) for vals in shared) and col.min() < col.max():
        return (
            f"{function} is keyed on the run's success (it reads {said}): on train it "
            "gives every run of the same task and outcome the same value, so it tells "
            "only which task a run is and whether it succeeded" + tail
        )
    return None
