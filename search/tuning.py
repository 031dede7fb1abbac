"""Optuna tunes a candidate's ``PARAMS`` on ``train`` before it is scored on ``val``.

The objective is the budget-AUC aggregate on the train subset, computed from
scores the sandbox returns with the trial's PARAMS overridden (the program text is
not recompiled per trial). Trials have their own cap (``optuna_trials``), separate
from ``--budget``; the sampler is seeded per candidate, so tuning is reproducible.
The best trial's values are written back into the source's ``PARAMS`` literal,
which keeps the program self-contained: its text is the whole strategy.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from monsearch.sandbox.restricted import PARAM_MAX, PARAM_MIN, extract_params


@dataclass(frozen=True)
class TuneResult:
    source: str
    before: float
    after: float
    trials: int
    changed: tuple[str, ...]


def _space(value: float) -> tuple[float, float, bool]:
    """Search range around a constant: a factor of 4 either way (log scale), or ±2 at 0,
    cut to the tunable range (``PARAM_MIN`` to ``PARAM_MAX`` in magnitude), so every
    value tried is one the sandbox check accepts. ``value`` is tunable (extract_params
    gives no other)."""
    if value > 0:
        return max(value / 4.0, PARAM_MIN), min(value * 4.0, PARAM_MAX), True
    if value < 0:
        return max(value * 4.0, -PARAM_MAX), min(value / 4.0, -PARAM_MIN), False
    return -2.0, 2.0, False


def _fmt(value: float) -> str:
    text = f"{value:.4g}"
    return text if any(c in text for c in ".en") else text + ".0"


def write_params(source: str, params: Mapping[str, float]) -> str:
    """``source`` with the values of its ``PARAMS`` dict literal replaced (keys kept in order)."""
    tree = ast.parse(source)
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "PARAMS"
            and isinstance(node.value, ast.Dict)
        ):
            lines = source.splitlines(keepends=True)
            offsets = [0]
            for line in lines:
                offsets.append(offsets[-1] + len(line))
            # Replace each value's span, last first, so earlier offsets stay valid.
            edits = []
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                if isinstance(key, ast.Constant) and key.value in params:
                    start = offsets[value.lineno - 1] + _col(lines[value.lineno - 1], value.col_offset)
                    end = offsets[value.end_lineno - 1] + _col(
                        lines[value.end_lineno - 1], value.end_col_offset
                    )
                    edits.append((start, end, _fmt(float(params[key.value]))))
            out = source
            for start, end, text in sorted(edits, reverse=True):
                out = out[:start] + text + out[end:]
            return out
    return source


def _col(line: str, byte_offset: int | None) -> int:
    # ast columns are UTF-8 byte offsets.
    return len(line.encode("utf-8")[: byte_offset or 0].decode("utf-8", errors="ignore"))


def tune_params(
    source: str,
    score_many: Callable[[list[Mapping[str, float] | None]], list[np.ndarray | None]],
    fitness: Callable[[np.ndarray], float],
    *,
    trials: int,
    seed: int,
    batch: int = 1,
    confirm: Callable[[list[Mapping[str, float] | None]], list[float]] | None = None,
    confirm_top: int = 3,
    fixed: Collection[str] = (),
) -> TuneResult | None:
    """Tune ``source``'s PARAMS with optuna's TPE sampler; None if it has none or fails.

    ``score_many(list of PARAMS overrides)`` scores the program on train once per
    entry (None: its own PARAMS), concurrently where it can; ``fitness(scores)``
    turns scores into the number to maximise. Trials are asked ``batch`` at a time
    (optuna's ask-and-tell), which keeps the sequence of trials a function of the
    seed alone. The current values are the first trial, so tuning never returns
    something worse on train.

    ``confirm(list of PARAMS overrides)``, if given, scores the ``confirm_top`` best
    trials and the current values on train runs the tuner did not see; the best
    there wins (the current values on a tie), so a tuning that only fits the
    tuner's subset is not kept.

    ``fixed``: PARAMS left as they are, because the objective cannot see them (the
    oracle band's: train scores never consult the judge, so any band scores the same
    there, and a tuned band would only be a random one, often over the oracle cap).
    """
    import optuna

    params = extract_params(source)
    fixed = set(fixed)
    names = sorted(n for n in params if n not in fixed)
    if not names or trials < 1:
        return None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed % 2**32)
    )
    study.enqueue_trial({n: float(params[n]) for n in names})
    before: float | None = None
    done = 0
    while done < trials:
        asked = [study.ask() for _ in range(min(batch, trials - done))]
        chosen = []
        for trial in asked:
            values = {}
            for name in names:
                lo, hi, log = _space(float(params[name]))
                values[name] = trial.suggest_float(name, lo, hi, log=log)
            chosen.append(values)
        results = score_many(chosen)
        for trial, scores in zip(asked, results, strict=True):
            value = fitness(scores) if scores is not None else 0.0
            study.tell(trial, value)
            if before is None:
                before = value  # the enqueued first trial: the program's own PARAMS
        done += len(asked)
    assert before is not None
    best = study.best_trial
    if best.value is None or not math.isfinite(best.value) or best.value <= before:
        return TuneResult(source, before, before, len(study.trials), ())
    if confirm is not None:
        best = _confirmed(study, names, params, confirm, confirm_top)
        if best is None:
            return TuneResult(source, before, before, len(study.trials), ())
    tuned = {n: float(_fmt(best.params[n])) for n in names}
    changed = tuple(n for n in names if tuned[n] != float(params[n]))
    return TuneResult(
        write_params(source, tuned), before, float(best.value), len(study.trials), changed
    )


def _confirmed(
    study: Any,
    names: list[str],
    params: Mapping[str, float],
    confirm: Callable[[list[Mapping[str, float] | None]], list[float]],
    top: int,
) -> Any:
    """The trial among the ``top`` best that scores highest on the held-out runs, or
    None when none beats the current values there."""
    done = [t for t in study.trials if t.value is not None and math.isfinite(t.value)]
    done.sort(key=lambda t: (-t.value, t.number))  # stable: ties keep the earlier trial
    current = {n: float(params[n]) for n in names}
    ranked: list[tuple[Any, dict[str, float]]] = []  # (trial, its values as written)
    for t in done:
        written = {n: float(_fmt(t.params[n])) for n in names}
        if written == current or any(written == w for _, w in ranked):
            continue
        ranked.append((t, written))
        if len(ranked) == top:
            break
    if not ranked:
        return None
    values = confirm([None] + [w for _, w in ranked])
    best = max(range(len(ranked)), key=lambda i: (values[i + 1], -i))
    return ranked[best][0] if values[best + 1] > values[0] else None
