"""A resume runs with the settings the run recorded, not with an edited config.json
(issue 33, class 2).

``--resume`` used to adopt whatever ``config.json`` held: a red team turned the
fitness to ``plain``, ``rho`` to 0.9 and raised the sandbox limits, and the resumed run
went on with them. The run's settings are now an entry of its sealed chain, written
when it starts and again when a resume changes them; ``config.json`` is a copy that
must agree. The budget and the spending caps are the ones a resume may change, from
the command line; an edited copy of them is ignored with a warning.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from cli_support import run_main
from run_fixtures import evolve
from run_forgery import copy_run
from sealed_support import fake_scorer

from monsearch.search.config import EvolveConfig


@pytest.fixture(autouse=True)
def fast_sealed_test(monkeypatch):
    monkeypatch.setattr(
        "monsearch.eval.sealed.sandbox_scorer", lambda config, opts, progress=None: fake_scorer
    )
    monkeypatch.setattr("monsearch.eval.sealed.ESCALATION_GRID", 20)


@pytest.fixture
def run_copy(small_run, tmp_path):
    return copy_run(small_run[0], tmp_path / "runs" / "edited")


def _edit(run: Path, **changes) -> None:
    config = json.loads((run / "config.json").read_text())
    for dotted, value in changes.items():
        section, _, name = dotted.partition("__")
        if name:
            config[section][name] = value
        else:
            config[section] = value
    (run / "config.json").write_text(json.dumps(config, indent=2))


def test_resume_refuses_an_edited_config_and_changes_nothing(run_copy, small_corpus):
    _edit(run_copy, evaluation__fitness="plain", evaluation__rho=0.9, wall_s=600.0,
          memory_mb=8192)  # fmt: skip
    files = ("config.json", "lineage.sqlite", "selected.json", "selected.py")
    before = {f: (run_copy / f).read_bytes() for f in files}
    proc = evolve(run_copy.parent, small_corpus, "--resume", str(run_copy), budget=13,
                  check=False)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "config.json differs from the configuration the run recorded" in proc.stderr
    for key in ("evaluation.fitness", "evaluation.rho", "wall_s", "memory_mb"):
        assert key in proc.stderr
    assert {f: (run_copy / f).read_bytes() for f in files} == before


def test_test_and_export_refuse_an_edited_config_too(run_copy, capsys, tmp_path):
    # The sealed test scores with the run's sandbox limits and oracle settings.
    _edit(run_copy, memory_mb=8192, llm={"base_url": "http://127.0.0.1:9/v1"})
    code, _, err = run_main(capsys, "test", str(run_copy))
    assert code == 2 and err.count("\n") == 1, err
    assert "config.json differs" in err and "memory_mb" in err and "llm" in err
    code, _, err = run_main(
        capsys, "export", str(run_copy), "--out", str(tmp_path / "p"), "--no-verify"
    )
    assert code == 2 and "config.json differs" in err


def test_an_edited_budget_or_spending_cap_is_ignored_with_a_warning(run_copy):
    from monsearch.api.evolve import prepare_run

    _edit(run_copy, budget=500, max_usd=1000.0)
    warnings: list[str] = []
    with contextlib.ExitStack() as held:
        cfg, run = prepare_run(
            EvolveConfig(), resume=str(run_copy), runs_dir=None, held=held,
            on_warning=warnings.append,
        )  # fmt: skip
    assert (cfg.budget, cfg.max_usd) == (12, None)  # what the run recorded
    assert any("budget" in w and "max_usd" in w and "ignored" in w for w in warnings), warnings
    # The command line is where a resume changes them.
    with contextlib.ExitStack() as held:
        cfg, _ = prepare_run(
            EvolveConfig(max_usd=2.0), resume=str(run_copy), runs_dir=None, held=held,
            resume_budget=20,
        )  # fmt: skip
    assert (cfg.budget, cfg.max_usd) == (20, 2.0)
