"""Every setting of a run is checked for type, finiteness and range when the
configuration is built, from a ``--config`` TOML file, from options and from the
Python API alike (issue 33, class 3): a value no run can use is one ConfigError line
naming it, never a traceback, a flood of processes or a cap that can never trip."""

from __future__ import annotations

import math
from dataclasses import fields

import pytest

from monsearch.search.config import (
    ConfigError,
    EvaluationConfig,
    EvolveConfig,
    SearchConfig,
    load_config_file,
    parse_proposers,
)
from monsearch.search.config_rules import MAX_WORKERS


def _load(tmp_path, text: str) -> EvolveConfig:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return load_config_file(path)


def _one_line(exc: pytest.ExceptionInfo) -> str:
    message = str(exc.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    "text, names",
    [
        ("workers = 1000000\n", ["workers 1000000", f"to {MAX_WORKERS}", "cores"]),
        ("max_usd = nan\n", ["max_usd nan", "finite"]),
        ("max_usd = -1.0\n", ["max_usd -1.0"]),
        ("budget = 1e12\n", ["budget 1000000000000.0", "whole number"]),
        ("budget = 1000000000000\n", ["budget 1000000000000", "to 1,000,000"]),
        ("[evaluation]\nrho = nan\n", ["evaluation.rho nan"]),
        ("[evaluation]\nb_lo = inf\n", ["evaluation.b_lo inf"]),
        ("[evaluation]\nn_boot = 1e9\n", ["evaluation.n_boot"]),
        ("[search]\nbatch = 100000\n", ["search.batch 100000", "thread"]),
        ("[search]\nmigration_rate = nan\n", ["search.migration_rate nan"]),
        ("[search]\nislands = true\n", ["search.islands True"]),
        ('seed = "zero"\n', ["seed 'zero'"]),
        ("wall_s = inf\n", ["wall_s inf"]),
        ("memory_mb = 0\n", ["memory_mb 0"]),
        ("seeds = [1]\n", ["seeds[0] 1", "text"]),
        ("backend = 5\n", ["backend 5"]),
        ("[corpus_default]\nsize = 1e99\n", ["corpus_default.size"]),
        ('[[proposers]]\nname = "offline"\nweight = nan\n', ["proposers['offline'].weight nan"]),
    ],
)
def test_a_config_file_value_no_run_can_use_is_one_line_naming_it(tmp_path, text, names):
    with pytest.raises(ConfigError) as exc:
        _load(tmp_path, text)
    message = _one_line(exc)
    for name in names:
        assert name in message


@pytest.mark.parametrize(
    "text, name",
    [
        ('[llm]\nmodel = "m"\ntimeout = nan\n', "llm.timeout nan"),
        ('[llm]\nmodel = "m"\ndeadline = inf\n', "llm.deadline inf"),
        ('[llm]\nmodel = "m"\nslots = 1000000\n', "llm.slots 1000000"),
        ('[llm]\nmodel = "m"\ntemperature = nan\n', "llm.temperature nan"),
        ('[llm]\nmodel = "m"\nmax_tokens = 1.5\n', "llm.max_tokens 1.5"),
        ('[llm]\nmodel = "m"\nstream = "yes"\n', "llm.stream 'yes'"),
        ('[llm]\nmodel = 7\n', "llm.model 7"),
        ('[llm]\nmodels = [{name = "m", weight = nan}]\n', "llm.models[0].weight nan"),
        ('[llm]\nmodels = [{name = "m", price_input_per_mtok = -1.0}]\n',
         "llm.models[0].price_input_per_mtok"),
        ('[llm]\nmodels = [{weight = 1.0}]\n', "llm.models[0].name"),
        ('[llm]\nmodels = "m"\n', "llm.models"),
    ],
)
def test_the_llm_table_is_checked_key_by_key(tmp_path, text, name):
    with pytest.raises(ConfigError) as exc:
        _load(tmp_path, text)
    assert name in _one_line(exc)


def test_options_and_the_python_api_are_checked_as_the_file_is():
    with pytest.raises(ConfigError, match="workers 1000000"):
        EvolveConfig().with_overrides(workers=1_000_000)
    with pytest.raises(ConfigError, match="max_usd nan"):
        EvolveConfig().with_overrides(max_usd=math.nan)
    with pytest.raises(ConfigError, match="evaluation.rho nan"):
        EvolveConfig().with_overrides(**{"evaluation.rho": math.nan})
    with pytest.raises(ConfigError, match="budget 1000000000000.0: a whole number"):
        EvolveConfig(budget=1e12)
    with pytest.raises(ConfigError, match="proposers.*weight nan"):
        parse_proposers("offline:nan")
    with pytest.raises(ConfigError, match="llm.timeout inf"):
        EvolveConfig(llm={"model": "m", "timeout": math.inf})
    # A setting the config does not have, or a section it does not have: named, not a
    # TypeError or KeyError from inside.
    with pytest.raises(ConfigError, match="unknown setting.*wokers"):
        EvolveConfig().with_overrides(wokers=2)
    with pytest.raises(ConfigError, match="unknown setting.*serch.islands"):
        EvolveConfig().with_overrides(**{"serch.islands": 2})
    with pytest.raises(ConfigError, match="unknown setting.*search.islandz"):
        EvolveConfig().with_overrides(**{"search.islandz": 2})


def test_exploration_and_exploitation_shares_leave_room_for_each_other():
    with pytest.raises(ConfigError, match="exploration_ratio.*exploitation_ratio"):
        EvolveConfig(search=SearchConfig(exploration_ratio=0.6, exploitation_ratio=0.6)).validate()


_HOSTILE = [math.nan, math.inf, -math.inf, True, "1", 10**30, -(10**30), 1e300]


def _numeric_fields(cls: type) -> list[str]:
    out = []
    for f in fields(cls):
        kind = str(f.type)
        if f.init and ("int" in kind or "float" in kind) and "dict" not in kind:
            out.append(f.name)
    return out


@pytest.mark.parametrize(
    "section, name",
    [("", n) for n in _numeric_fields(EvolveConfig)]
    + [("evaluation", n) for n in _numeric_fields(EvaluationConfig)]
    + [("search", n) for n in _numeric_fields(SearchConfig)],
)
@pytest.mark.parametrize("value", _HOSTILE, ids=repr)
def test_every_numeric_field_refuses_what_is_no_usable_number(section, name, value):
    key = f"{section}.{name}" if section else name
    with pytest.raises(ConfigError) as exc:
        EvolveConfig().with_overrides(**{key: value})
    assert key in _one_line(exc)
    table = {section: {name: value}} if section else {name: value}
    with pytest.raises(ConfigError) as exc:
        EvolveConfig.from_dict(table)
    assert key in _one_line(exc)


def test_the_defaults_and_a_recorded_config_still_load():
    cfg = EvolveConfig().validate()
    assert EvolveConfig.from_dict(cfg.to_dict()) == cfg
    # rho = 0 in a TOML file is an int, and stays one (the export's caps show it so).
    assert EvolveConfig().with_overrides(**{"evaluation.rho": 0}).evaluation.rho == 0
    assert EvolveConfig(workers=MAX_WORKERS).workers == MAX_WORKERS


_ANY = [None, 5, 1.5, "x", [], {}, [1], True, math.nan, "", ["a"], {"a": 1}]


@pytest.mark.parametrize("section, cls", [("", EvolveConfig), ("evaluation", EvaluationConfig),
                                          ("search", SearchConfig)])  # fmt: skip
def test_no_value_of_any_type_in_any_field_ends_in_a_traceback(section, cls):
    for f in fields(cls):
        if not f.init:
            continue
        key = f"{section}.{f.name}" if section else f.name
        for value in _ANY:
            table = {section: {f.name: value}} if section else {f.name: value}
            for build, arg in (
                (EvolveConfig.from_dict, table),
                (lambda overrides: EvolveConfig().with_overrides(**overrides), {key: value}),
            ):
                try:
                    build(arg).validate()
                except ConfigError as exc:
                    assert "\n" not in str(exc)


def test_no_value_in_the_llm_table_ends_in_a_traceback():
    from monsearch.search.llm_proposer import LLMProposerConfig, ModelSpec

    model_keys = {f.name for f in fields(ModelSpec)}
    for key in sorted({f.name for f in fields(LLMProposerConfig)} | model_keys):
        for value in [*_ANY, math.inf, -1, 10**30]:
            tables = [{"model": "m", key: value}]
            if key in model_keys:
                tables.append({"models": [{"name": "m", key: value}]})
            for table in tables:
                try:
                    LLMProposerConfig.from_dict(EvolveConfig(llm=table).llm)
                except ConfigError as exc:
                    assert "\n" not in str(exc)
