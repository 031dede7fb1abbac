"""Synthetic corpus assembly: determinism, structure, splits, CLI, default-corpus cache."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from monsearch.cli import cli
from monsearch.corpora.model import ORACLE, PANEL
from monsearch.corpora.store import content_hash, load_corpus
from monsearch.synth import generate as gen_mod
from monsearch.synth.family import FAMILIES, HELD_OUT_FAMILY, HELD_OUT_SPLIT
from monsearch.synth.generate import (
    default_corpus_path,
    ensure_default_corpus,
    generate,
    plan,
    synthesize_corpus,
)
from monsearch.synth.judges import ORACLE_JUDGE, PANEL_IDS
from monsearch.synth.personas import DEFAULT_CROSS_GENERATORS, PERSONAS, persona_counts
from monsearch.synth.scenario import REGISTRY
from monsearch.synth.style import STYLES

SMALL = 300


@pytest.fixture(scope="module")
def small() -> list:
    return generate(SMALL, seed=7)


def test_same_seed_same_content_hash(small: list) -> None:
    again = generate(SMALL, seed=7)
    assert again == small
    assert content_hash(again) == content_hash(small)


def test_different_seed_different_corpus(small: list) -> None:
    other = generate(SMALL, seed=8)
    assert content_hash(other) != content_hash(small)
    assert [t.id for t in other] != [t.id for t in small]


def test_parallel_output_identical(small: list) -> None:
    # Two chunks in worker processes must give exactly the serial output.
    assert generate(SMALL, seed=7, n_jobs=2) == small


def test_ids_meta_and_verdicts(small: list) -> None:
    ids = [t.id for t in small]
    assert len(set(ids)) == SMALL
    for n, t in enumerate(small):
        assert t.id == f"syn-{t.task}-7-{n:06d}"
        assert t.task in REGISTRY
        assert t.prompt == REGISTRY[t.task].prompt
        assert t.is_valid
        held = {"held_out_split"} if t.meta["family"] == HELD_OUT_FAMILY else set()
        assert set(t.meta) == {
            "source_format",
            "persona",
            "style",
            "mode",
            "hard",
            "ground_truth_failure",
            "family",
            "habits",
            *held,
        }
        assert t.meta["habits"]["mix"] == "paper"
        assert t.meta["family"] in FAMILIES
        assert t.meta["source_format"] == "synthetic"
        assert t.meta["style"] in STYLES
        mode = next(m for m in REGISTRY[t.task].modes if m.name == t.meta["mode"])
        assert t.meta["ground_truth_failure"] is mode.failure
        assert t.meta["hard"] is mode.hard
        assert t.is_solved is mode.solved
        assert (t.outcome == "flag_found") is mode.solved
        assert [v.judge for v in t.panel] == list(PANEL_IDS)
        assert all(v.role == PANEL for v in t.panel)
        assert [(v.judge, v.role) for v in t.oracle] == [(ORACLE_JUDGE.judge, ORACLE)]
        for v in (*t.panel, *t.oracle):
            # A verdict's score and vote tell the same story, as the judge prompt demands.
            assert (v.stealth_score < 0.5) is v.is_failure
            assert 0.0 <= v.stealth_score <= 1.0 and 0.0 <= v.confidence <= 1.0
            assert v.dimension and v.reason


def test_persona_mix_follows_paper_n(small: list) -> None:
    counts = Counter(t.generator for t in small)
    assert dict(counts) == persona_counts(SMALL)
    assert sum(persona_counts(771).values()) == 771
    assert persona_counts(771) == {p.generator: p.n for p in PERSONAS}
    # Tasks even within a persona: at most one apart.
    for p in PERSONAS:
        per_task = Counter(t for g, t in plan(SMALL, 7) if g == p.generator)
        full = [per_task.get(task, 0) for task in REGISTRY]
        assert max(full) - min(full) <= 1


def test_every_mode_and_style_eventually_used() -> None:
    trajs = generate(1200, seed=1)
    styles = {t.meta["style"] for t in trajs}
    assert len(styles) >= 8
    # Each persona uses its main style most of the time, but not only it.
    for p in PERSONAS:
        mine = [t for t in trajs if t.generator == p.generator]
        main = sum(t.meta["style"] == p.main_style for t in mine) / len(mine)
        assert 0.5 < main < 0.9, (p.name, main)
    hard = Counter((t.meta["hard"], t.meta["ground_truth_failure"]) for t in trajs)
    assert hard[(True, True)] > 20 and hard[(True, False)] > 20


def test_synthesize_writes_split_corpus(tmp_path: Path) -> None:
    res = synthesize_corpus(tmp_path / "c", seed=5, size=400)
    corpus = load_corpus(tmp_path / "c")
    assert corpus.content_hash == res.content_hash
    xgen = {
        f"xgen-{re.sub(r'[^a-z0-9]+', '-', g.lower()).strip('-')}" for g in DEFAULT_CROSS_GENERATORS
    }
    assert set(corpus.split_names) == {"train", "val", "test", HELD_OUT_SPLIT} | xgen
    assert set(corpus.cross_generator_splits) == xgen | {HELD_OUT_SPLIT}
    held = set(DEFAULT_CROSS_GENERATORS)
    for name in ("train", "val", "test"):
        assert not {t.generator for t in corpus.split(name)} & held
        assert {t.meta["family"] for t in corpus.split(name)} == {"a"}
    for name in xgen:
        assert len({t.generator for t in corpus.split(name)}) == 1
        assert {t.meta["family"] for t in corpus.split(name)} == {"a"}
    # The held-out template family: runs of the train/val/test personas only.
    family = corpus.split(HELD_OUT_SPLIT)
    assert family and {t.meta["family"] for t in family} == {HELD_OUT_FAMILY}
    assert not {t.generator for t in family} & held
    assert corpus.manifest.split_info["held_out_by_meta"] == {HELD_OUT_SPLIT: len(family)}
    assert sum(res.counts.values()) == 400
    assert res.benign["val"] == sum(1 for t in corpus.split("val") if not t.label.is_failure)


def test_cli_synth_writes_loadable_corpus(tmp_path: Path) -> None:
    out = tmp_path / "cli-corpus"
    result = CliRunner().invoke(
        cli, ["corpus", "synth", "--out", str(out), "--seed", "3", "--size", "250", "--quiet"]
    )
    assert result.exit_code == 0, result.output
    corpus = load_corpus(out)
    assert corpus.content_hash in result.output
    assert len(corpus.trajectories()) == 250
    assert "val" in result.output and "benign" in result.output
    # Same seed again: byte-identical content.
    out2 = tmp_path / "again"
    CliRunner().invoke(
        cli, ["corpus", "synth", "--out", str(out2), "--seed", "3", "--size", "250", "--quiet"]
    )
    assert load_corpus(out2).content_hash == corpus.content_hash


def test_cli_rejects_unknown_cross_generator(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "corpus",
            "synth",
            "--out",
            str(tmp_path / "x"),
            "--size",
            "50",
            "--quiet",
            "--cross-generators",
            "nobody/model-x",
        ],
    )
    assert result.exit_code != 0
    assert "nobody/model-x" in str(result.exception) + result.output


def test_source_fingerprint_covers_code_and_data(tmp_path: Path) -> None:
    """The default corpus's cache key changes with any source or data file of the
    generator (its tables are TOML beside the modules), and with nothing else."""
    (tmp_path / "tasks").mkdir()
    (tmp_path / "scenario.py").write_text("X = 1\n")
    (tmp_path / "tasks" / "t.toml").write_text("modes = []\n")
    (tmp_path / "notes.txt").write_text("not the generator\n")
    first = gen_mod._source_fingerprint(tmp_path)
    (tmp_path / "notes.txt").write_text("still not the generator\n")
    assert gen_mod._source_fingerprint(tmp_path) == first
    (tmp_path / "tasks" / "t.toml").write_text("modes = [1]\n")
    second = gen_mod._source_fingerprint(tmp_path)
    assert second != first
    (tmp_path / "scenario.py").write_text("X = 2\n")
    assert gen_mod._source_fingerprint(tmp_path) not in (first, second)
    # The package's own fingerprint reads its task tables.
    assert any(Path(gen_mod.__file__).parent.glob("tasks/*.toml"))


def test_default_corpus_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MONSEARCH_CACHE", str(tmp_path / "cache"))
    path = default_corpus_path(seed=2, size=120)
    assert path.is_relative_to(tmp_path / "cache")
    assert not path.exists()
    built = ensure_default_corpus(seed=2, size=120)
    assert built == path and (path / "manifest.json").is_file()
    first = load_corpus(path).content_hash

    def fail(*a: object, **k: object) -> None:
        raise AssertionError("the cached corpus was rebuilt")

    monkeypatch.setattr(gen_mod, "synthesize_corpus", fail)
    assert ensure_default_corpus(seed=2, size=120) == path
    assert load_corpus(path).content_hash == first
    # Another seed or size is another cache entry.
    assert default_corpus_path(seed=3, size=120) != path
    assert default_corpus_path(seed=2, size=121) != path
