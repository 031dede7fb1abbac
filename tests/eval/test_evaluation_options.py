"""A run's evaluation options (``config.json``'s ``evaluation``): one typed reading of them."""

from __future__ import annotations

import json
from dataclasses import fields, replace

import pytest

from monsearch.eval.options import EvaluationOptions, EvaluationOptionsError
from monsearch.eval.sealed import Options
from monsearch.search.config import EvaluationConfig, EvolveConfig
from monsearch.search.runs import Run

#: The keys the first search wrote (before ``fitness``, ``cells`` and ``cell_mass``).
OLD_RUN = {
    "b_hi": 0.1,
    "b_lo": 0.01,
    "n_boot": 200,
    "n_budgets": 41,
    "on_small": "warn",
    "oracle": "replay",
    "per_traj_cap": 1,
    "rho": 0.05,
    "select_top": 10,
}


def _written(tmp_path, evaluation) -> dict:
    """config.json as a run writes it, read back."""
    run = Run(tmp_path / "r")
    run.dir.mkdir()
    run.write_config({"evaluation": evaluation, "seed": 0})
    return run.config()


def _text(record: dict) -> str:
    return json.dumps(record, indent=2, sort_keys=True)


def test_a_new_runs_record_round_trips_byte_for_byte(tmp_path):
    ev = EvolveConfig(evaluation=EvaluationConfig(rho=0, cells=("task", "generator")))
    config = _written(tmp_path, ev.to_dict()["evaluation"])
    opts = EvaluationOptions.from_config(config)
    assert _text(opts.to_dict()) == _text(config["evaluation"])
    assert list(opts.to_dict()) == list(config["evaluation"])
    # the typed reading is what the search was configured with
    assert (opts.fitness, opts.cells, opts.rho, opts.oracle) == (
        "invariant", ("task", "generator"), 0, "replay")  # fmt: skip
    assert type(opts.rho) is int  # kept as recorded: the export shows it as recorded


def test_a_new_run_differs_from_an_old_one_in_its_defaults_only():
    # The search writes the record at a new run's defaults. A run without a key was
    # made before it existed: only its fitness was scored otherwise then (plain), and
    # rho is None where a run recorded none.
    names = [f.name for f in fields(EvaluationOptions) if f.init]
    new_run, old_run = EvaluationConfig(), EvaluationOptions()
    assert isinstance(new_run, EvaluationOptions)
    assert [n for n in names if getattr(new_run, n) != getattr(old_run, n)] == ["rho", "fitness"]
    assert old_run.fitness == "plain" and old_run.rho is None
    assert list(EvolveConfig().to_dict()["evaluation"]) == names
    # a record read through the search's class still reads as an old run
    assert type(EvaluationConfig.from_dict({})) is EvaluationOptions


def test_an_old_run_reads_with_todays_defaults_and_gains_no_keys(tmp_path):
    config = _written(tmp_path, OLD_RUN)
    opts = EvaluationOptions.from_config(config)
    assert (opts.fitness, opts.cells, opts.cell_mass) == ("plain", ("task", "outcome"), "minority")
    assert _text(opts.to_dict()) == _text(OLD_RUN)
    # no record at all, or a null one: every default, and nothing written back
    for config in ({}, {"evaluation": None}):
        assert EvaluationOptions.from_config(config) == EvaluationOptions()
        assert EvaluationOptions.from_config(config).to_dict() == {}
    # a null value reads as a missing key; an empty cells list or oracle as the
    # sealed test always read them; each is written back as recorded
    odd = {"rho": None, "cells": [], "oracle": "", "per_traj_cap": 0}
    opts = EvaluationOptions.from_dict(odd)
    assert (opts.rho, opts.cells, opts.oracle, opts.per_traj_cap) == (
        None, ("task", "outcome"), "replay", 0)  # fmt: skip
    assert opts.to_dict() == odd


def test_the_sealed_tests_options_are_the_records():
    opts = Options.of(EvaluationOptions.from_dict({**OLD_RUN, "b_hi": 1, "cells": ["generator"]}))
    assert opts == Options(b_hi=1.0, rho=0.05, cells=("generator",))
    assert type(opts.b_hi) is float  # the sealed report has always shown floats


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"b_lo": "abc"}, "evaluation.b_lo"),
        ({"rho": [0.1]}, "evaluation.rho"),
        ({"per_traj_cap": True}, "evaluation.per_traj_cap"),
        ({"n_budgets": 1.5}, "evaluation.n_budgets"),
        ({"n_budgets": 1}, "evaluation.n_budgets"),
        ({"cells": "task"}, "evaluation.cells"),
        ({"cells": ["task", "colour"]}, "evaluation.cells"),
        ({"fitness": "flat"}, "evaluation.fitness"),
        ({"on_small": "ignore"}, "evaluation.on_small"),
        ({"cell_mass": "all"}, "evaluation.cell_mass"),
        ({"oracle": "llm"}, "evaluation.oracle"),
        ({"b_lo": 0.2, "b_hi": 0.1}, "evaluation.b_lo, evaluation.b_hi"),
        (["b_lo", 0.01], "evaluation: expected an object"),
    ],
)
def test_a_malformed_value_is_refused_naming_its_field(record, field):
    with pytest.raises(EvaluationOptionsError) as err:
        EvaluationOptions.from_config({"evaluation": record}, "runs/r/config.json")
    assert str(err.value).startswith(f"runs/r/config.json: {field}")
    assert err.value.exit_code == 2


def test_a_whole_float_is_a_count():
    opts = EvaluationOptions.from_dict({"n_budgets": 41.0, "per_traj_cap": 2.0})
    assert (opts.n_budgets, opts.per_traj_cap) == (41, 2)
    assert type(opts.n_budgets) is int


def test_differs_compares_the_records_as_recorded():
    a = EvaluationOptions.from_dict(OLD_RUN)
    assert a.differs(EvaluationOptions.from_dict(dict(OLD_RUN))) == []
    assert a.differs(EvaluationOptions.from_dict({**OLD_RUN, "b_lo": 0.05})) == ["b_lo"]
    # a key on one side only differs, even at its default value...
    assert a.differs(EvaluationOptions.from_dict({**OLD_RUN, "fitness": "plain"})) == ["fitness"]
    # ...and so does 1 against 1.0 (the lineage hashes the text)
    assert a.differs(EvaluationOptions.from_dict({**OLD_RUN, "per_traj_cap": 1.0})) == [
        "per_traj_cap"
    ]


def test_a_record_changed_in_code_writes_its_fields():
    changed = replace(EvaluationOptions.from_dict(OLD_RUN), b_lo=0.02)
    assert changed.to_dict()["b_lo"] == 0.02
    assert changed.to_dict()["cells"] == ["task", "outcome"]
    assert set(changed.to_dict()) == {f.name for f in fields(EvaluationConfig) if f.init}
