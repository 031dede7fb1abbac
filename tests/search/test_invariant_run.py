"""A real run under the invariant fitness (the default): what it records and shows.

The fitness is val budget-AUC with every task x outcome cell at one failure share;
the plain figure (the corpus's own rates) is recorded beside it and shown by
`show`, the run report and the lineage records; the selection's bootstrap uses the
same weights.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from cli_support import run_main

from monsearch.corpora.store import load_corpus
from monsearch.eval.priors import context_cells, prior_weights
from monsearch.eval.summary import compute_metrics
from monsearch.search.lineage import LineageStore


def test_every_candidate_records_the_invariant_and_the_plain_figure(small_run, small_corpus):
    run_dir, _ = small_run
    config = json.loads((run_dir / "config.json").read_text())
    assert config["evaluation"]["fitness"] == "invariant"
    assert config["evaluation"]["cells"] == ["task", "outcome"]
    val = [t for t in load_corpus(small_corpus, ["val"]).split("val") if t.label is not None]
    y = np.array([t.label.is_failure for t in val])
    dims = np.array([t.dimension.value for t in val])
    w = prior_weights(y, context_cells(val), dims, "flat").weights
    with LineageStore(run_dir / "lineage.sqlite", readonly=True) as store:
        scored = [(r, store.val_scores(r.seq)) for r in store.records() if r.ok]
    assert scored
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for record, scores in scored:
            fj = record.fitness_json
            assert fj["view"] == "invariant"
            # The fitness is the weighted aggregate, recomputed here from the stored scores.
            assert record.fitness == pytest.approx(
                compute_metrics(scores, y, dims, weights=w).aggregate, abs=1e-12
            )
            assert fj["metrics_plain"]["bauc"]["aggregate"] == pytest.approx(
                compute_metrics(scores, y, dims).aggregate, abs=1e-12
            )


def test_show_and_the_run_report_give_both_figures(small_run, tmp_path, capsys):
    run_dir, outcome = small_run
    code, out, err = run_main(capsys, "show", str(run_dir), "selected")
    assert code == 0, err
    assert "invariant; plain (the corpus's own rates)" in out
    code, _, err = run_main(capsys, "report", str(run_dir), "--out", str(tmp_path / "r.html"))
    assert code == 0, err
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "val budget-AUC (fitness, invariant)" in page and "plain (the corpus" in page
