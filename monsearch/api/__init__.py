"""monsearch as a library: what the command line does, as functions with typed results.

    import monsearch
    corpus = monsearch.load_corpus()                  # the embedded default corpus
    result = monsearch.evolve(budget=100, seed=0)     # a run under ./runs
    print(result.selected.hash, result.selected.fitness)
    report = monsearch.test(result.run.id)            # the sealed test, once
    plugin = monsearch.export(result.run.id, "monitor-dir")
    for r in monsearch.score("monitor-dir", ["examples/trajectories"]):
        print(r.input, r.score, r.decision)

Each command of the CLI parses its options, calls one of these and prints the result.
"""

from .corpus import default_corpus, load_corpus, resolve_corpus, run_corpus
from .evolve import EvolveResult, evolve
from .export import export
from .score import Scoring, TrajectoryScore, score, scoring
from .sealed_test import test

__all__ = [
    "EvolveResult",
    "default_corpus",
    "evolve",
    "export",
    "load_corpus",
    "resolve_corpus",
    "run_corpus",
    "Scoring",
    "score",
    "scoring",
    "test",
    "TrajectoryScore",
]
