"""The sealed one-time test of a run's frozen strategy (``monsearch test RUN``).

Reads the run through :func:`monsearch.search.frozen.verify_run` (a tampered run folder is
refused), checks and records the ledger (:mod:`monsearch.eval.sealed_ledger`), loads the
sealed splits through the one door that may (:func:`monsearch.corpora.sealed.open_sealed`),
scores them in the sandbox and computes the figures (:func:`monsearch.eval.sealed.evaluate_targets`).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from monsearch.eval import sealed as _sealed
from monsearch.eval.costs import CostModel
from monsearch.eval.options import EvaluationOptions
from monsearch.eval.sealed import (
    REPORT_FORMAT,
    REPORT_VERSION,
    Options,
    ScoredSplit,
    Scorer,
    SealedTestError,
    SplitRun,
    evaluate_targets,
    summary_rows,
)
from monsearch.eval.sealed_ledger import Ledger, LedgerKey, RunRef
from monsearch.search.frozen import FrozenProgram
from monsearch.search.runs import CorpusRef

from .corpus import run_corpus
from .python_names import speaks_python
from .results import SealedTestReport


def _program(verified: Any, program_id: str | None) -> FrozenProgram:
    """The verified run's frozen strategy, or candidate ``program_id`` of its lineage."""
    from monsearch.search.runs import RunError

    try:
        return verified.program(program_id)
    except RunError as exc:
        raise SealedTestError(str(exc)) from None


def _strategy_dict(p: FrozenProgram) -> dict[str, Any]:
    return {
        "id": p.id,
        "strategy_hash": p.strategy_hash,
        "program_hash": p.program_hash,
        "selected": p.selected,
        "val_fitness": p.fitness,
        "val_fitness_low": p.fitness_low,
    }


def run_sealed_test(
    run: Any,
    *,
    program_id: str | None = None,
    force: bool = False,
    costs: CostModel | None = None,
    workers: int = 1,
    ledger: Ledger | None = None,
    scorer: Scorer | None = None,
    progress: Callable[[str], None] | None = None,
    loss_tolerance: float | None = None,
) -> dict[str, Any]:
    """Evaluate the run's frozen strategy on its sealed splits, once; the report as a dict.

    ``loss_tolerance``: a shifted view's loss vs val whose whole bootstrap interval lies
    above it is flagged (default 0.05).

    The run is read through :func:`monsearch.search.frozen.verify_run` (a run folder
    that differs from what the run recorded is refused, exit 2). Refuses
    (:class:`.sealed_ledger.SealedTestRefused`) before reading any sealed split when
    the ledger already holds the key, or holds another program of this run opened on
    this corpus (selecting on test), unless ``force``; the report's
    ``ledger.other_programs`` names the run's programs opened there before. The ledger entry is written
    after scoring and before anything is reported; it counts the run's openings (and
    the earlier reports in the run's ``test/`` folder).
    """
    from monsearch.corpora.sealed import open_sealed, read_identity
    from monsearch.eval.sealed_reports import earlier_reports
    from monsearch.oracle.session import replay_scores_from
    from monsearch.search.frozen import verify_run

    say = progress or (lambda _m: None)
    costs = costs or CostModel()
    ledger = ledger or Ledger()
    verified = verify_run(run, ledger=ledger)
    config = verified.config
    opts = Options.of(EvaluationOptions.from_config(config))
    if loss_tolerance is not None:
        opts = replace(opts, loss_tolerance=float(loss_tolerance))
    strategy = _program(verified, program_id)
    path = run_corpus(config)
    ident, sealed_names = read_identity(path)
    recorded = CorpusRef.from_config(config)
    differ = recorded.differs(ident.content_hash, ident.assignment_hash)
    if differ:
        key = differ[0]
        raise SealedTestError(
            f"the corpus at {path} is not the one run {run.id} searched on: its {key} is "
            f"{str(getattr(ident, key))[:12]}, the run's {str(getattr(recorded, key))[:12]}"
            + (
                " (a re-split: its test split may hold runs the search saw)"
                if key == "assignment_hash"
                else ""
            )
        )
    if not sealed_names:
        raise SealedTestError(f"the corpus at {path} has no sealed splits")
    key = LedgerKey(
        strategy.strategy_hash, ident.content_hash, ident.assignment_hash, strategy.program_hash
    )
    # The run's other sources (a live corpus): their own test splits are sealed too, and
    # opened once each, as cross-source corpora (val's thresholds transferred).
    other_sources = _other_sources(config, strategy)
    # Refused here, before any sealed split is read: this program opened on this corpus
    # already, or another program of the run (selecting on test), unless ``force``.
    ledger.check(key, force=force, run=RunRef(run.id, verified.uid))
    for _name, _path, source_key in other_sources:
        ledger.check(source_key, force=force, run=RunRef(run.id, verified.uid))

    say(f"loading corpus {ident.name}")
    corp = open_sealed(path)
    # Looked up at call time: tests stand a scripted scorer in for the sandbox's.
    scorer = scorer or _sealed.sandbox_scorer(config, opts, progress)
    names = ["val", *(s for s in corp.split_names if s == "test"), *corp.cross_generator_splits]
    where: dict[str, tuple[Any, str]] = {n: (corp, n) for n in names}
    for group, source_path, _key in other_sources:
        source = open_sealed(source_path)
        if "test" in source.split_names:
            names.append(f"{group}:test")
            where[f"{group}:test"] = (source, "test")

    def one(name: str) -> tuple[str, SplitRun, list[Any]]:
        holder, split = where[name]
        trajs = holder.split(split)
        if not trajs:
            return name, SplitRun("empty", "no trajectories"), trajs
        part = holder.manifest.parts[split]
        identity = f"corpus {holder.content_hash} split {split} part {part.sha256}"
        return name, scorer(name, strategy.source, trajs, identity), trajs

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = list(pool.map(one, names))
    runs = {name: (r, trajs) for name, r, trajs in results}
    val_run, val_trajs = runs["val"]
    if val_run.status != "ok" or val_run.scores is None:
        raise SealedTestError(
            f"the strategy did not score val ({val_run.status}: {val_run.message}); "
            "nothing sealed was evaluated"
        )

    def scored(name: str) -> ScoredSplit:
        r, trajs = runs[name]
        assert r.scores is not None
        return ScoredSplit.from_trajectories(
            name, trajs, r.scores, oracle_calls=r.oracle_calls, judge=replay_scores_from(trajs),
            cell_keys=opts.cells,
        )

    val = scored("val")
    targets = {
        n: scored(n)
        for n in names[1:]
        if runs[n][0].status == "ok" and runs[n][0].scores is not None
    }
    if not targets:
        raise SealedTestError(
            "the strategy scored no sealed split: "
            + "; ".join(f"{n}: {runs[n][0].status} {runs[n][0].message}" for n in names[1:])
        )
    say("computing the sealed figures")
    body = evaluate_targets(val, targets, opts, costs)
    for n in names[1:]:
        r = runs[n][0]
        if n in body["corpora"]:
            body["corpora"][n]["status"] = "ok"
            if r.message:
                body["corpora"][n]["message"] = r.message
        else:
            body["corpora"][n] = {"status": r.status, "message": r.message, "n": len(runs[n][1])}

    for group, _path, source_key in other_sources:
        ledger.record(
            source_key,
            {"run_id": run.id, "program_id": strategy.id, "corpus_name": group, "splits": ["test"],
             "chain_length": verified.chain.length, "chain_head": verified.chain.head,
             "path": str(run.dir.resolve())},
            force=force, run=RunRef(run.id, verified.uid),
        )  # fmt: skip
    entry, previous = ledger.record(
        key,
        {
            "run_id": run.id,
            "program_id": strategy.id,
            "corpus_name": ident.name,
            "splits": names[1:],
            # The chain head now: a later rewrite of the run folder is found against it.
            "chain_length": verified.chain.length,
            "chain_head": verified.chain.head,
            "path": str(run.dir.resolve()),
        },
        force=force,
        run=RunRef(run.id, verified.uid),
        earlier_reports=len(earlier_reports(run.dir)),
    )
    report: dict[str, Any] = {
        "format": REPORT_FORMAT,
        "version": REPORT_VERSION,
        "run_id": run.id,
        "strategy": _strategy_dict(strategy),
        "corpus": {**ident.to_dict(), "sealed_splits": names[1:]},
        "evaluation": opts.to_dict(),
        "costs": costs.to_dict(),
        "ledger": {
            "key": key.to_dict(),
            "path": str(ledger.path),
            "opened_at": entry["opened_at"],
            "reopened": entry["reopened"],
            "reasons": entry["reasons"],
            "opening": entry["opening"],
            "run_opening": entry["run_opening"],
            "run_uid": verified.uid,
            "other_programs": entry.get("other_programs", []),
            "previous": [
                {k: e.get(k) for k in ("opened_at", "run_id", "program_id")} for e in previous
            ],
        },
        "reopened": entry["reopened"],
        "val_scores_reproduced": _val_reproduced(strategy, val_run.scores),
        **body,
    }
    report["summary"] = summary_rows(report)
    return report


def _other_sources(config: dict[str, Any], strategy: FrozenProgram) -> list[tuple[str, Path, LedgerKey]]:
    """The run's other sources: (group, folder, ledger key), each checked to be the corpus
    the run searched on."""
    from monsearch.corpora.sealed import read_identity

    out = []
    for info in config.get("sources_corpora") or []:
        path = Path(info.get("resolved_path") or info.get("path") or "")
        ident, _names = read_identity(path)
        if ident.content_hash != info.get("content_hash") or ident.assignment_hash != info.get("assignment_hash"):
            raise SealedTestError(
                f"the source at {path} is not the one run searched on (its content or split "
                "assignment changed)"
            )
        key = LedgerKey(strategy.strategy_hash, ident.content_hash, ident.assignment_hash, strategy.program_hash)
        out.append((str(info.get("group") or ident.name), path, key))
    return out


def _val_reproduced(strategy: FrozenProgram, scores: np.ndarray) -> bool | None:
    """Whether val scores equal those the lineage stored (None: nothing to compare)."""
    stored = strategy.val_scores
    if stored is None or stored.shape != scores.shape:
        return None
    return bool(np.array_equal(stored, scores))


@speaks_python(
    {
        "--force": "force=True",
        "--program": "program",
        "--runs-dir": "runs_dir",
        "--costs": "costs",
        "--loss-tolerance": "loss_tolerance",
    }
)
def test(
    run: str | Path,
    *,
    program: str | None = None,
    force: bool = False,
    costs: CostModel | None = None,
    workers: int = 1,
    runs_dir: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    loss_tolerance: float | None = None,
) -> SealedTestReport:
    """``monsearch test RUN`` as a function: evaluate the run's frozen strategy (or
    candidate ``program``) once on its sealed splits.

    Returns a :class:`~monsearch.api.results.SealedTestReport` (its ``to_dict()`` is
    the document ``report.json`` holds; ``write(folder)`` writes the report files).
    Writes nothing but the ledger entry. Raises
    :class:`~monsearch.eval.sealed_ledger.SealedTestRefused` when the ledger records
    this program tested on this corpus already (``force=True`` evaluates again, the
    report marked re-opened). ``workers``: splits scored at a time; ``costs``: the
    escalation cost model (default built in); ``loss_tolerance``: a shifted view's
    loss vs val whose whole bootstrap interval lies above it is flagged (0.05)."""
    from monsearch.search.runs import resolve_run

    report = run_sealed_test(
        resolve_run(str(run), runs_dir),
        program_id=program,
        force=force,
        costs=costs,
        workers=workers,
        progress=progress,
        loss_tolerance=loss_tolerance,
    )
    return SealedTestReport.from_report(report)
