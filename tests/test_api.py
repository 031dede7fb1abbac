"""monsearch as a library: ``import monsearch`` gives the command line's jobs as functions.

Run in a plain interpreter (no PYTHONHASHSEED, no re-exec): the same strategy as the
``evolve`` command with the same settings, and typed results.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from run_fixtures import _env, evolve


def test_import_monsearch_is_light_and_lists_the_api():
    code = (
        "import sys, monsearch\n"
        "assert 'monsearch.search' not in sys.modules, 'the API is loaded on first use'\n"
        "print(sorted(n for n in dir(monsearch) if not n.startswith('_')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    names = eval(out.stdout)  # noqa: S307 - our own printed list
    assert {"evolve", "load_corpus", "EvolveResult"} <= set(names)


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
