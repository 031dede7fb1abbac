"""``monsearch evolve`` and ``monsearch.evolve`` refuse a setting no run can use with
one line and exit 2 before any work (issue 33, class 3): ``workers = 1000000`` once
started 110 processes, ``max_usd = nan`` made the spending cap one that never trips,
``budget = 1e12`` and ``rho = nan`` ended in tracebacks."""

from __future__ import annotations

import importlib
import math

import pytest
from cli_support import WorkStarted, run_main

import monsearch
from monsearch.search.config import ConfigError


@pytest.fixture
def no_work(monkeypatch):
    """Starting the search fails the test (and keeps a regression from spawning a
    million workers)."""

    def refuse(*args, **kwargs):
        raise WorkStarted("the search started before its settings were checked")

    # (``monsearch.api.evolve`` the attribute is the function; the module is this one)
    monkeypatch.setattr(importlib.import_module("monsearch.api.evolve"), "run_search", refuse)


@pytest.mark.parametrize(
    "toml, args, named",
    [
        ("workers = 1000000\n", [], "workers 1000000"),
        ("max_usd = nan\n", [], "max_usd nan"),
        ("budget = 1e12\n", [], "budget 1000000000000.0"),
        ("[evaluation]\nrho = nan\n", [], "evaluation.rho nan"),
        ('[llm]\nmodel = "m"\ntimeout = inf\n', [], "llm.timeout inf"),
        (None, ["--workers", "1000000"], "workers 1000000"),
        (None, ["--max-usd", "nan"], "max_usd nan"),
        (None, ["--rho", "nan"], "evaluation.rho nan"),
        (None, ["--b-hi", "nan"], "evaluation.b_hi nan"),
        (None, ["--seed", str(10**30)], "seed 1000000000000000000000000000000"),
        (None, ["--llm-model", "m", "--llm-timeout", "inf"], "timeout inf"),
        (None, ["--llm-model", "m", "--llm-deadline", "nan"], "deadline nan"),
    ],
)
def test_a_setting_no_run_can_use_is_refused_before_any_work(
    capsys, tmp_path, no_work, toml, args, named
):
    runs = tmp_path / "runs"
    argv = ["evolve", "--runs-dir", str(runs), "--run-id", "r", *args]
    if toml is not None:
        config = tmp_path / "c.toml"
        config.write_text(toml)
        argv += ["--config", str(config)]
    code, out, err = run_main(capsys, *argv)
    assert code == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert named in err
    assert "Traceback" not in err and out == ""
    assert not runs.exists()


def test_the_python_api_refuses_them_too(tmp_path, no_work):
    runs = tmp_path / "runs"
    with pytest.raises(ConfigError, match="workers 1000000"):
        monsearch.evolve(settings={"workers": 1_000_000}, runs_dir=runs)
    with pytest.raises(ConfigError, match="max_usd nan"):
        monsearch.evolve(config={"max_usd": math.nan}, runs_dir=runs)
    with pytest.raises(ConfigError, match="evaluation.rho nan"):
        monsearch.evolve(settings={"evaluation.rho": math.nan}, runs_dir=runs)
    with pytest.raises(ConfigError, match="budget 1000000000000: a whole number"):
        monsearch.evolve(budget=10**12, runs_dir=runs)
    assert not runs.exists()


def test_settings_that_contradict_each_other_are_refused_before_any_work(
    capsys, tmp_path, monkeypatch
):
    def refuse(*args, **kwargs):
        raise WorkStarted("the search started before its settings were checked")

    # The search's first step (reading the seed programs), then everything after it.
    monkeypatch.setattr("monsearch.search.engine.seed_sources", refuse)
    runs = tmp_path / "runs"
    code, _out, err = run_main(
        capsys, "evolve", "--runs-dir", str(runs), "--run-id", "r",
        "--b-lo", "0.5", "--b-hi", "0.1",
    )  # fmt: skip
    assert code == 2, err
    assert "budget range [0.5, 0.1]" in err and err.count("\n") == 1
    assert not runs.exists()
