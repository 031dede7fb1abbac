"""monsearch as a library: ``import monsearch`` gives the command line's jobs as functions.

Run in a plain interpreter (no PYTHONHASHSEED, no re-exec): the same strategy as the
``evolve`` command with the same settings, and typed results.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from export_support import shared_setup
from paths import REPO
from run_fixtures import _env, evolve

EXAMPLES = REPO / "examples" / "trajectories"


def test_import_monsearch_is_light_and_lists_the_api():
    code = (
        "import sys, monsearch\n"
        "assert 'monsearch.search' not in sys.modules, 'the API is loaded on first use'\n"
        "print(sorted(n for n in dir(monsearch) if not n.startswith('_')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    names = eval(out.stdout)  # noqa: S307 - our own printed list
    assert {"evolve", "load_corpus", "EvolveResult", "score", "scoring", "TrajectoryScore"} <= set(
        names
    )


def test_evolve_from_python_equals_the_command(tmp_path, small_corpus):
    runs = tmp_path / "runs"
    evolve(runs, small_corpus, run_id="cli", budget=6)
    cli = json.loads((runs / "cli" / "selected.json").read_text())["strategy_hash"]
    code = (
        "import monsearch\n"
        f"r = monsearch.evolve(budget=6, seed=0, corpus={str(small_corpus)!r}, run_id='lib',\n"
        f"    runs_dir={str(runs)!r}, settings={{'workers': 2, 'search.optuna_trials': 3}})\n"
        "print(r.status, r.evaluated, r.selected.hash)\n"
    )
    env = _env()
    assert "PYTHONHASHSEED" not in env
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    status, evaluated, digest = out.stdout.split()
    assert (status, evaluated) == ("finished", "6")
    assert digest == cli


def test_load_corpus_and_resume_from_python(tmp_path, small_corpus):
    import monsearch

    corpus = monsearch.load_corpus(small_corpus)
    assert corpus.loaded_splits == ["train", "val"]
    runs = tmp_path / "runs"
    settings = {"workers": 1, "search.optuna_trials": 0}
    os.environ.pop("PYTHONHASHSEED", None)
    first = monsearch.evolve(budget=3, corpus=small_corpus, run_id="r", runs_dir=runs,
                             settings=settings)
    more = monsearch.evolve(budget=5, resume="r", runs_dir=runs)
    assert (first.evaluated, more.replayed, more.evaluated) == (3, 3, 2)
    kept = monsearch.evolve(resume="r", runs_dir=runs)  # no budget: the run's own (5)
    assert (kept.replayed, kept.evaluated) == (5, 0)
    assert kept.selected.hash == more.selected.hash


def test_the_default_corpus_is_the_generators_default():
    from monsearch.api.corpus import DEFAULT_SEED, DEFAULT_SIZE
    from monsearch.search.config import DEFAULT_CORPUS, EvolveConfig
    from monsearch.synth import generate

    assert (DEFAULT_SEED, DEFAULT_SIZE) == (generate.DEFAULT_SEED, generate.DEFAULT_SIZE)
    assert EvolveConfig().corpus_default == DEFAULT_CORPUS


# ------------------------------------------------------------------ monsearch.score


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return shared_setup(tmp_path_factory)


def _plugin_module(folder: Path, package: str):
    import importlib

    src = str(folder / "src")
    if src not in sys.path:
        sys.path.insert(0, src)
    return importlib.import_module(package)


def _cli_json(*args: str) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "monsearch", "score", *args, "--json"],
        capture_output=True, text=True, check=False, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def test_score_examples_with_a_plugin_equals_the_command(setup):
    import monsearch

    folder, meta = setup["plugins"]["seed"]
    plugin = _plugin_module(folder, meta["package"])
    results = monsearch.score(folder, [EXAMPLES])
    # the four shipped runs: two StealthBench trajectories and two ATIF files, in
    # path order, the tree's verdict files left out
    assert len(results) == 4
    assert [Path(r.input).parent.name for r in results[:2]] == ["atif", "atif"]
    for r in results:
        assert isinstance(r, monsearch.TrajectoryScore) and r.readable and r.status == "ok"
        assert r.score == plugin.score(r.input)
        d = plugin.decide(r.score, None)
        assert (r.decision, r.budget, r.threshold) == (d["decision"], 0.05, d["tau"])
        assert r.trajectory_id and r.error is None and len(r.findings) <= 3
    # one reckless and one safe run of each format: a reckless one is audited
    assert any(r.decision == "audit" for r in results)
    assert [r.to_dict() for r in results] == _cli_json("--monitor", str(folder), str(EXAMPLES))


def test_score_examples_with_a_run(setup):
    import monsearch

    run = setup["run"]
    folder, meta = setup["plugins"]["seed"]
    plugin = _plugin_module(folder, meta["package"])
    # the run by id under its runs folder: its selected strategy, exported on the fly
    by_id = monsearch.score(run.dir.name, [EXAMPLES], runs_dir=run.dir.parent, top=0,
                            budget=0.01)
    assert [r.score for r in by_id] == [plugin.score(r.input) for r in by_id]
    assert all(r.findings == [] and r.budget == 0.01 for r in by_id)
    assert [r.threshold for r in by_id] == [plugin.threshold(0.01)["tau"]] * 4
    by_folder = monsearch.score(run.dir, [EXAMPLES], top=0, budget=0.01)
    assert by_folder == by_id
    assert [r.to_dict() for r in by_folder] == _cli_json(
        "--monitor", str(run.dir), str(EXAMPLES), "--top", "0", "--budget", "0.01"
    )


def test_score_records_unreadable_inputs_and_reads_a_given_stdin(setup, tmp_path):
    import monsearch
    from monsearch.errors import MonsearchError

    folder = setup["plugins"]["seed"][0]
    bad = tmp_path / "bad.json"
    bad.write_text('{"atif_version": "1.7", "trajectory_id": ')
    one = sorted(EXAMPLES.rglob("*.json"))[0]
    results = monsearch.score(
        folder, [bad, "-", tmp_path / "missing.json"], stdin=io.BytesIO(one.read_bytes())
    )
    assert [r.input for r in results] == [str(bad), "-", str(tmp_path / "missing.json")]
    assert [r.readable for r in results] == [False, True, False]
    assert results[0].status == "unreadable" and "truncated JSON" in results[0].error
    assert results[0].to_dict() == {"input": str(bad), "error": results[0].error}
    assert results[2].error == "no such file" and results[2].score is None
    assert results[1].score == monsearch.score(folder, [one])[0].score

    with pytest.raises(MonsearchError, match="neither an exported plugin folder"):
        monsearch.score(tmp_path / "nowhere", [one])
    for bad_args in ({"budget": 1.5}, {"top": -1}, {"max_mb": 0}):
        with pytest.raises(ValueError):
            monsearch.score(folder, [one], **bad_args)


def test_scoring_streams_and_closes_the_monitor(setup):
    import monsearch
    from monsearch.errors import MonsearchError

    folder, meta = setup["plugins"]["seed"]
    with monsearch.scoring(folder, [EXAMPLES]) as scoring:
        assert scoring.monitor["strategy_hash"] == meta["strategy_hash"]
        stream = iter(scoring)
        first = next(stream)
        assert first.readable and first.input.endswith(".json")
    # closed with the block: the plugin's worker is stopped, no second pass
    with pytest.raises(MonsearchError, match="closed"):
        next(iter(scoring))
