"""What each setting of a run may hold: type, finiteness and range, field by field.

A run's configuration comes from defaults, a ``--config`` TOML file, command-line
options and the Python API (``monsearch.evolve(config=..., settings=...)``); every one
of those builds the dataclasses of :mod:`monsearch.search.config`, whose
``__post_init__`` checks each field against the rules here, so a value no run can use
(``workers = 1000000``, ``max_usd = nan``, ``budget = 1e12``, ``rho = nan``) is refused
with one line naming it before any work starts. The ``[llm]`` table is checked the same
way, key by key, before the LLM proposer reads it.

Every number must be finite and within its range; a whole-number setting must be an
int (``1e12`` or ``2.5`` name no count), and a boolean is never a number. The upper
bounds keep one value from flooding the machine (``workers`` starts that many
processes, ``search.batch`` and ``optuna_batch`` that many threads) while leaving every
sensible setting free.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

#: Sandbox worker processes a run may start (``workers``): each is a process with the
#: run's memory limit, so the count is bounded whatever the machine.
MAX_WORKERS = 64
#: Candidate evaluations a run may be given (``budget``).
MAX_BUDGET = 1_000_000
#: Seconds any single time limit may be (a day).
MAX_SECONDS = 86_400.0


@dataclass(frozen=True)
class Rule:
    """A number from ``lo`` to ``hi`` (both included); ``whole``: an int; ``optional``:
    None allowed (the setting is off or left to a default)."""

    lo: float
    hi: float
    whole: bool = False
    optional: bool = False
    #: Said after the range in the error (what the bound protects).
    note: str = ""
    #: ``lo`` itself is not allowed (a time limit of 0 s).
    lo_open: bool = False

    def problem(self, name: str, value: Any) -> str | None:
        """Why ``value`` cannot be the setting ``name`` (None: it can)."""
        if value is None and self.optional:
            return None
        ok = type(value) is int or (type(value) is float and not self.whole)
        if ok:
            ok = math.isfinite(value) and (value > self.lo if self.lo_open else value >= self.lo)
            ok = ok and value <= self.hi
        if ok:
            return None
        return f"{name} {_show(value)}: {self.describe()}"

    def describe(self) -> str:
        kind = "a whole number" if self.whole else "a finite number"
        low = f"above {_num(self.lo)}" if self.lo_open else f"from {_num(self.lo)}"
        text = f"{kind} {low} to {_num(self.hi)}"
        if self.optional:
            text += " (or left out)"
        return f"{text}{self.note}"


def _num(value: float) -> str:
    return f"{value:,}" if float(value).is_integer() and abs(value) < 1e16 else f"{value:g}"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _whole(lo: int, hi: int, *, optional: bool = False, note: str = "") -> Rule:
    return Rule(lo, hi, whole=True, optional=optional, note=note)


def _real(lo: float, hi: float, *, optional: bool = False, lo_open: bool = False) -> Rule:
    return Rule(lo, hi, optional=optional, lo_open=lo_open)


_SECONDS = _real(0.0, MAX_SECONDS, lo_open=True)
_SHARE = _real(0.0, 1.0)

#: EvolveConfig's numbers (its other fields: :func:`top_problems`).
TOP: dict[str, Rule] = {
    "seed": _whole(-(2**63), 2**63 - 1),
    "budget": _whole(1, MAX_BUDGET),
    "max_usd": _real(0.0, 1e9, optional=True),
    "max_tokens": _whole(0, 10**15, optional=True),
    "workers": _whole(
        1,
        MAX_WORKERS,
        note=f" (each worker is a process; this machine has {os.cpu_count() or 1} cores)",
    ),
    "wall_s": _SECONDS,
    "cpu_s": _SECONDS,
    "memory_mb": _whole(64, 1 << 20),
}

#: EvaluationConfig's numbers.
EVALUATION: dict[str, Rule] = {
    "b_lo": _real(0.0, 1.0, lo_open=True),
    "b_hi": _real(0.0, 1.0, lo_open=True),
    "n_budgets": _whole(2, 10_000),
    "rho": _real(0.0, 1e6),
    "per_traj_cap": _whole(0, 1_000),
    "n_boot": _whole(1, 100_000),
    "select_top": _whole(1, 10_000),
}

#: SearchConfig's numbers (every field of it is one).
SEARCH: dict[str, Rule] = {
    "islands": _whole(1, 1_000),
    "population": _whole(4, 1_000_000),
    "archive": _whole(0, 1_000_000),
    "batch": _whole(1, 64, note=" (candidates scored at once, one thread each)"),
    "migration_interval": _whole(1, MAX_BUDGET),
    "migration_rate": _SHARE,
    "exploration_ratio": _SHARE,
    "exploitation_ratio": _SHARE,
    "num_inspirations": _whole(0, 100),
    "optuna_trials": _whole(0, 10_000),
    "optuna_batch": _whole(1, 64, note=" (trials scored at once)"),
    "optuna_every": _whole(0, MAX_BUDGET),
    "train_subset": _whole(0, 10**9),
    "proposer_subset": _whole(0, 10**9),
    "dedup_attempts": _whole(0, 100),
}

#: The default corpus's generator settings (``corpus_default``).
CORPUS_DEFAULT: dict[str, Rule] = {
    "seed": _whole(-(2**63), 2**63 - 1),
    "size": _whole(1, 1_000_000),
}

#: ``weight`` of a proposer.
WEIGHT = _real(0.0, 1e6)

#: Numbers of the ``[llm]`` table, at its top level (the single-``model`` form keeps a
#: model's keys there too) and in each of ``models``.
LLM_NUMBERS: dict[str, Rule] = {
    # the proposer's
    "timeout": _SECONDS,
    "deadline": _SECONDS,
    "slots": _whole(1, 64),
    "retries": _whole(0, 5),
    "retry_delay": _real(0.0, 3_600.0),
    "rewrite_probability": _SHARE,
    "max_consecutive_failures": _whole(1, 1_000),
    "max_prompt_chars": _whole(2_000, 10_000_000),
    "max_answer_chars": _whole(1_000, 10_000_000),
    "n_missed": _whole(0, 100),
    "n_false_alarms": _whole(0, 100),
    "max_inspirations": _whole(0, 100),
    "oracle_per_traj_cap": _whole(0, 1_000, optional=True),
    "oracle_rho": _real(0.0, 1e6, optional=True),
    "repair_turns": _whole(0, 3),
    # a model's
    "weight": WEIGHT,
    "temperature": _real(0.0, 10.0),
    "top_p": _real(0.0, 1.0, optional=True),
    "max_tokens": _whole(1, 10_000_000, optional=True),
    "price_input_per_mtok": _real(0.0, 1e6),
    "price_output_per_mtok": _real(0.0, 1e6),
}
#: Model-level keys that may be None (a model's timeout and deadline: the config's).
_LLM_OPTIONAL = {"timeout", "deadline"}
#: Text keys of the table (either level); None allowed except for a model's name.
LLM_TEXT = (
    "model",
    "name",
    "base_url",
    "api_key_env",
    "api_key",
    "reasoning_effort",
    "edit",
    "retry",
    "parent",
)
LLM_FLAGS = ("stream", "send_seed", "oracle_available", "api_key_set")


def number_problems(values: Mapping[str, Any], rules: Mapping[str, Rule], where: str) -> list[str]:
    """One problem per value in ``values`` that breaks its rule (keys without a rule are
    someone else's to check)."""
    out = []
    for name, rule in rules.items():
        if name in values:
            problem = rule.problem(f"{where}{name}", values[name])
            if problem:
                out.append(problem)
    return out


def text_problem(name: str, value: Any, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if isinstance(value, str) and "\x00" not in value:
        return None
    return f"{name} {_show(value)}: expected text"


def llm_problems(table: Any) -> list[str]:
    """What in an ``[llm]`` table (as ``config.json`` records it) no proposer could use:
    a number out of type or range, text that is not text, a flag that is not a boolean.
    Unknown keys and the choices are left to the proposer's own reading."""
    if not isinstance(table, Mapping):
        return [f"llm: expected a table, got {type(table).__name__}"]
    problems = _llm_level(table, "llm.", model_level=False)
    models = table.get("models")
    if models is not None:
        if isinstance(models, str) or not isinstance(models, list | tuple):
            return [*problems, "llm.models: expected a list of tables"]
        for i, m in enumerate(models):
            where = f"llm.models[{i}]."
            if isinstance(m, str):
                problem = text_problem(f"{where}name", m)
                problems += [problem] if problem else []
            elif isinstance(m, Mapping):
                problems += _llm_level(m, where, model_level=True)
                if "name" not in m:
                    problems.append(f"{where}name: missing (every model needs a name)")
            else:
                problems.append(f"{where[:-1]}: expected a table or a model name")
    return problems


def _llm_level(table: Mapping[str, Any], where: str, *, model_level: bool) -> list[str]:
    rules = dict(LLM_NUMBERS)
    if model_level:
        rules.update({k: replace(rules[k], optional=True) for k in _LLM_OPTIONAL})
    problems = number_problems(table, rules, where)
    for key in LLM_TEXT:
        if key in table:
            optional = not (model_level and key == "name")
            problem = text_problem(f"{where}{key}", table[key], optional=optional)
            problems += [problem] if problem else []
    for key in LLM_FLAGS:
        if key in table and not isinstance(table[key], bool):
            problems.append(f"{where}{key} {_show(table[key])}: expected true or false")
    return problems
