"""A candidate whose PARAMS no tuner can search (1.7e308, a subnormal) costs itself,
never the run: the sandbox check refuses it with a one-line reason, the lineage
records it as failed, and the tuner never builds an unbounded search range."""

from __future__ import annotations

import json

import numpy as np
import pytest
from llm_stub_server import Reply, StubLLMServer
from run_fixtures import evolve

from monsearch.sandbox import restricted
from monsearch.sandbox.check import check_program
from monsearch.search.lineage import LineageStore
from monsearch.search.tuning import tune_params


def _program(*values: str) -> str:
    entries = ", ".join(f'"p{i}": {v}' for i, v in enumerate(values))
    return (
        f"PARAMS = {{{entries}}}\n\n"
        "def score(traj):\n"
        "    return 0.01 * len(traj.requests) + 0.0 * PARAMS[\"p0\"]\n"
    )


def _answer(source: str) -> str:
    return f"Idea: scale up.\n```python\n{source}```\n"


@pytest.mark.parametrize("value", ["1.7e308", "-1.7e308", "5e-324", "1e13", "-2e-13", "10**13"])
def test_the_check_refuses_a_value_outside_the_tunable_range(value):
    report = check_program(_program(value))
    assert not report.ok
    assert "PARAMS['p0']" in report.message and "1e+12" in report.message
    assert "\n" not in report.message


@pytest.mark.parametrize("value", ["0", "0.0", "1e12", "-1e12", "1e-12", "-1e-12", "3", "0.5"])
def test_the_check_accepts_values_inside_the_range(value):
    assert check_program(_program(value)).ok


def test_the_tuner_never_leaves_the_range_nor_sees_values_outside_it():
    source = _program("1e12", "1e-12", "-1e12", "1.7e308", "5e-324")
    params = restricted.extract_params(source)
    assert set(params) == {"p0", "p1", "p2"}  # the out-of-range ones are no tunable numbers
    seen: list[dict[str, float]] = []

    def score_many(overrides):
        seen.extend(o for o in overrides if o is not None)
        return [np.arange(4, dtype=float) * (len(seen) % 3) for _ in overrides]

    result = tune_params(source, score_many, lambda s: float(s.sum()), trials=8, seed=1)
    assert result is not None and seen
    for values in seen:
        for v in values.values():
            assert v == 0 or restricted.PARAM_MIN <= abs(v) <= restricted.PARAM_MAX
    tuned = restricted.extract_params(result.source)
    assert set(tuned) == {"p0", "p1", "p2"} and result.changed


def test_a_hostile_candidate_is_recorded_failed_and_the_run_goes_on(tmp_path, small_corpus):
    hostile = _answer(_program("1.7e308", "1.7e308", "1.7e308"))
    with StubLLMServer(default=Reply.text(hostile, usage=(100, 20))) as server:
        runs = tmp_path / "runs"
        config = tmp_path / "tune-every.toml"
        config.write_text("[search]\noptuna_every = 1\n")
        out = evolve(
            runs, small_corpus, "--config", str(config), "--proposer", "llm",
            "--llm-model", "stub", "--llm-base-url", server.base_url, "--optuna-trials", "2",
            "--batch", "1", run_id="hostile", budget=4, check=False,
        )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["status"] == "finished"
    with LineageStore(runs / "hostile" / "lineage.sqlite", readonly=True) as store:
        records = store.records()
    proposed = records[2:]
    assert len(proposed) == 2
    for record in proposed:
        assert record.status == "proposal_error"
        reason = record.artifacts["proposal_error"]
        assert "PARAMS['p0']" in reason and "tunable range" in reason, reason
        assert "\n" not in reason
