"""Small corpora and real run folders for the sealed-test tests.

A run folder is written from its contract (``search/runs.py``): a real program is
scored in the sandbox on the corpus's real ``val`` split and its fitness, val
scores and source go into ``config.json``, ``lineage.sqlite`` and ``selected.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from monsearch.corpora.store import load_corpus
from monsearch.eval import evaluate_fitness
from monsearch.oracle.session import OracleConfig, replay_scores_from
from monsearch.sandbox.evaluate import SandboxPool
from monsearch.sandbox.examples.seed_monitor import SEED_MONITOR
from monsearch.search.frozen import freeze
from monsearch.search.lineage import CandidateRecord, LineageStore, source_hash
from monsearch.search.runs import Run, SelectedStrategy

#: A second program: the seed monitor with one constant changed (another strategy hash,
#: and another normalised program: a comment alone would not be).
OTHER_MONITOR = SEED_MONITOR.replace('"bias": 0.0', '"bias": 0.5')


def make_corpus(root: Path, *, seed: int = 3, size: int = 1000) -> Path:
    from monsearch.synth.generate import synthesize_corpus

    out = root / f"corpus-s{seed}-n{size}"
    synthesize_corpus(out, seed=seed, size=size)
    return out


def make_run(
    root: Path,
    corpus: Path,
    *,
    run_id: str = "20261201-000000-test",
    sources: tuple[str, ...] = (SEED_MONITOR, OTHER_MONITOR),
) -> Run:
    """A run folder under ``root`` whose first source is the selected strategy."""
    corp = load_corpus(corpus, ["val"])
    val = corp.split("val")
    y = np.array([t.label.is_failure for t in val])
    dims = np.array([t.dimension.value for t in val])
    run = Run(root / run_id)
    run.dir.mkdir(parents=True)
    evaluation = {
        "b_lo": 0.01,
        "b_hi": 0.1,
        "n_budgets": 41,
        "rho": 0.5,
        "per_traj_cap": 1,
        "on_small": "warn",
        "oracle": "replay",
    }
    corpus_info = {
        "path": str(corpus),
        "default": None,
        "name": corp.name,
        "content_hash": corp.content_hash,
        "assignment_hash": corp.manifest.assignment_hash,
    }
    run.write_config(
        {"run_id": run_id, "seed": 0, "corpus": corpus_info, "evaluation": evaluation, "workers": 1}
    )
    oracle = OracleConfig(backend="replay", per_traj_cap=1, replay_scores=replay_scores_from(val))
    selected = None
    with SandboxPool(val, workers=1, oracle=oracle) as pool, LineageStore(run.lineage_path) as st:
        for seq, source in enumerate(sources):
            res = pool.evaluate(source)
            assert res.ok, res.message
            fit = evaluate_fitness(res.scores, y, dims, split="val", rho=0.5)
            rec = CandidateRecord(
                seq=seq,
                id=f"c{seq:04d}",
                parent_ids=() if seq == 0 else ("c0000",),
                generation=seq,
                island=0,
                proposer="seed" if seq == 0 else "offline",
                operator="seed" if seq == 0 else "retune",
                description="test candidate",
                source=source,
                source_hash=source_hash(source),
                diff="",
                status=fit.status,
                sandbox_status=res.status,
                fitness=fit.fitness,
                fitness_json=fit.to_dict(),
            )
            st.add(rec, val_scores=res.scores)
            if seq == 0:
                selected = SelectedStrategy(
                    run_id=run_id,
                    id=rec.id,
                    source=source,
                    strategy_hash=rec.source_hash,
                    fitness=fit.fitness,
                    fitness_low=None,
                    fitness_json=fit.to_dict(),
                    corpus=corpus_info,
                    evaluation=evaluation,
                )
    assert selected is not None
    freeze(run, selected)
    return run


def resplit(corpus: Path, out: Path, seed: int = 99) -> Path:
    """The same trajectories under another split assignment (same content hash)."""
    from monsearch.corpora.splits import make_split
    from monsearch.corpora.store import write_corpus

    corp = load_corpus(corpus)
    trajs = corp.trajectories()
    xgen = sorted(corp.manifest.split_info["cross_generators"].values())
    split = make_split(trajs, seed=seed, cross_generators=xgen)
    write_corpus(out, trajs, name=corp.name, assignment=split.assignment, split_info=split.info)
    return out


def read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


_SHARED: dict[str, Path] = {}


def shared_corpus() -> Path:
    """One small corpus per test process (both sealed-test files use it)."""
    if "corpus" not in _SHARED:
        import tempfile

        _SHARED["corpus"] = make_corpus(Path(tempfile.mkdtemp(prefix="monsearch-sealed-")))
    return _SHARED["corpus"]


def fake_scorer(name: str, source: str, trajs: list, identity: str | None):
    """A fast stand-in for the sandbox: scores from the run's length and id (no labels)."""
    import hashlib

    from monsearch.eval.sealed import SplitRun

    scores = np.array(
        [
            len(t.steps) + int(hashlib.sha256(t.id.encode()).hexdigest()[:6], 16) / 2**24
            for t in trajs
        ]
    )
    return SplitRun("ok", "", scores, {t.id: 0 for t in trajs})
