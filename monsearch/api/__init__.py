"""monsearch as a library: what the command line does, as functions with typed results.

    import monsearch
    corpus = monsearch.load_corpus()                  # the embedded default corpus
    result = monsearch.evolve(budget=100, seed=0)     # a run under ./runs
    print(result.selected.hash, result.selected.fitness)
    report = monsearch.test(result.run.id)            # the sealed test, once
    for row in report.corpora:
        print(row.corpus, row.transferred_bauc, row.recalibrated_bauc)
    plugin = monsearch.export(result.run.id, "monitor-dir")
    print(plugin.package, plugin.escalation_band, plugin.install)
    for r in monsearch.score("monitor-dir", ["examples/trajectories"]):
        print(r.input, r.score, r.decision)

Each command of the CLI parses its options, calls one of these and prints the result.
Results are typed records: :class:`EvolveResult`, :class:`SealedTestReport`,
:class:`ExportedMonitor`, :class:`TrajectoryScore` (the last three's ``to_dict()`` is the
document the command writes). Errors are :class:`monsearch.errors.MonsearchError`
subclasses whose messages name these functions' keyword arguments (``force=True``),
not the command line's options (``--force``).
"""

from .corpus import default_corpus, load_corpus, resolve_corpus, run_corpus
from .evolve import EvolveResult, evolve
from .export import export
from .results import ExportedMonitor, SealedCorpusFigures, SealedTestReport
from .score import Scoring, TrajectoryScore, score, scoring
from .sealed_test import test

__all__ = [
    "EvolveResult",
    "ExportedMonitor",
    "SealedCorpusFigures",
    "SealedTestReport",
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
