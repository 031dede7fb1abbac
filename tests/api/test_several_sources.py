"""A run on several sources: every source's val counts, each as a group held to the
best seed (docs/DESIGN.md, "Several sources")."""

from __future__ import annotations

import json
import sqlite3

import pytest
from run_fixtures import build_small_corpus, evolve

from monsearch.search.config import EvolveConfig


@pytest.fixture(scope="module")
def second_source(tmp_path_factory):
    return build_small_corpus(tmp_path_factory.mktemp("second"), seed=9)


def _candidates(run):
    con = sqlite3.connect(run / "lineage.sqlite")
    try:
        rows = con.execute("select id, status, fitness, fitness_json from candidates order by seq").fetchall()
    finally:
        con.close()
    return [(i, s, f, json.loads(j) if j else None) for i, s, f, j in rows]


def test_every_candidate_is_scored_on_both_sources_and_held_to_the_best_seed(tmp_path, small_corpus, second_source):
    evolve(tmp_path, small_corpus, "--source", str(second_source), run_id="two", budget=10)
    run = tmp_path / "two"
    config = json.loads((run / "config.json").read_text())
    assert config["sources"] == [str(second_source)]
    assert len(config["sources_corpora"]) == 1 and config["sources_corpora"][0]["content_hash"]
    rows = _candidates(run)
    scored = [r for r in rows if r[3] and r[3].get("groups")]
    assert len(scored) >= 8
    for _, status, fitness, fj in scored:
        sources = {k for k in fj["groups"] if not k.startswith("_") and "@" not in k}
        views = {k for k in fj["groups"] if "@" in k}
        assert len(sources) == 2 and "corpus" in sources
        # each source under the quiet and the noisy benign mix, for selection
        assert views == {f"{s}@{v}" for s in sources for v in ("quiet", "noisy")}
        if status == "ok":  # the mean of the sources (views left out), less the penalty
            per = [fj["groups"][n]["fitness"] for n in sources]
            guard = fj["groups"].get("_guard") or {"penalty": 0.0}
            assert fitness == pytest.approx(sum(per) / 2 - guard["penalty"])
    seeds = [r for r in rows if r[0] in ("c00000", "c00001")]
    best = max((r for r in seeds if r[1] == "ok"), key=lambda r: r[2])
    ref = best[3]["groups"]
    for _, status, _, fj in scored[2:]:
        caught = [(n, d, v) for n, g in ref.items() if "@" not in n and not n.startswith("_")
                  for d, v in (g.get("by_dimension") or {}).items() if v >= 0.05]  # fmt: skip
        mine = fj["groups"]
        lost = [1 for n, d, v in caught if (mine[n].get("by_dimension") or {}).get(d, 0.0) < 0.5 * v]
        if status == "ok":  # no dimension the best seed catches is lost
            assert not lost
        elif status == "regressed":
            assert lost and "loses what the seed caught" in (fj.get("reason") or "")
    selected = json.loads((run / "selected.json").read_text())
    assert "several sources" in selected["selection"]["rule"]
    chosen = next(r for r in rows if r[0] == selected["id"])
    for name, g in ref.items():  # at least the best seed in every group, views included
        if not name.startswith("_") and g.get("status") == "ok":
            assert chosen[3]["groups"][name]["fitness"] >= g["fitness"] - 1e-12


def test_a_source_that_changed_under_a_run_refuses_its_resume(tmp_path, small_corpus, second_source, tmp_path_factory):
    other = build_small_corpus(tmp_path_factory.mktemp("other"), seed=11)
    evolve(tmp_path, small_corpus, "--source", str(other), run_id="r2", budget=4)
    # replace the source folder's corpus by another one
    import shutil

    shutil.rmtree(other)
    shutil.copytree(second_source, other)
    done = evolve(tmp_path, small_corpus, "--resume", "r2", budget=6, check=False)
    assert done.returncode == 2 and "mix two corpora" in done.stderr


def test_a_default_run_adds_the_configured_live_corpus(tmp_path, monkeypatch, second_source):
    import importlib

    from monsearch.api.live import configure_live_source

    api_evolve = importlib.import_module("monsearch.api.evolve")

    monkeypatch.setenv("MONSEARCH_CACHE", str(tmp_path / "cache"))
    cfg, said = api_evolve.resolve_live_source(EvolveConfig())
    assert cfg.sources == () and "one source only" in said
    configure_live_source(second_source)
    cfg, said = api_evolve.resolve_live_source(EvolveConfig())
    assert cfg.sources == (str(second_source.resolve()),) and "two sources" in said
    assert api_evolve.resolve_live_source(EvolveConfig(live_source="off"))[0].sources == ()
    assert api_evolve.resolve_live_source(EvolveConfig(corpus_path="x"))[0].sources == ()
