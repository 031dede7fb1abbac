"""Evolving a monitor: starting, resuming and finishing a run (corpus, pools, lineage,
selection). The library's :func:`monsearch.evolve` and the ``evolve`` command call
:func:`run_search`; the search itself is :mod:`monsearch.search`.

Nothing here depends on the interpreter's string hash seed (the program database
iterates in insertion order), so a run is the same from the command line and from
any Python program.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import platform
import shutil
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from monsearch.errors import MonsearchError
from monsearch.eval.options import EvaluationOptions
from monsearch.search.config import EvolveConfig, SearchConfig
from monsearch.search.engine import Progress, Search, SearchError, SearchOutcome, StopFlag
from monsearch.search.evaluator import SearchEvaluator
from monsearch.search.lineage import LineageStore
from monsearch.search.proposal import TrainData
from monsearch.search.runs import CorpusRef, Run, check_run_id, runs_root

from .python_names import speaks_python


def new_run_id(seed: int) -> str:
    now = _dt.datetime.now(_dt.UTC).strftime("%Y%m%d-%H%M%S")
    return f"{now}-s{seed}"


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for pkg in ("monsearch", "openevolve", "optuna", "RestrictedPython", "numpy", "scikit-learn"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "?"
    return out


def _corpus_info(cfg: EvolveConfig, corp: Any, path: Path) -> dict[str, Any]:
    return CorpusRef(
        path=cfg.corpus_path,
        default=None if cfg.corpus_path else dict(cfg.corpus_default),
        resolved_path=str(path.resolve()),
        name=corp.name,
        content_hash=corp.content_hash,
        assignment_hash=corp.assignment_hash,
        splits={"train": "train", "val": "val"},
        sealed_splits=corp.sealed_splits,
    ).to_dict()


def open_corpus(cfg: EvolveConfig, progress: Callable[[str], None] | None = None) -> tuple[Any, Path]:
    """Train and val of the run's corpus (building the default one if needed).

    Only ``train`` and ``val`` are loaded: nothing in the search can reach test or
    cross-generator labels.
    """
    from monsearch.corpora.sealed import open_for_search

    if cfg.corpus_path:
        path = Path(cfg.corpus_path)
    else:
        from .corpus import DEFAULT_SEED, DEFAULT_SIZE, default_corpus

        if progress:
            progress("building or loading the default corpus")
        path = default_corpus(
            int(cfg.corpus_default.get("seed", DEFAULT_SEED)),
            int(cfg.corpus_default.get("size") or DEFAULT_SIZE),
        )
    if progress:
        from monsearch.corpora.store import read_manifest

        # The manifest's name: the one every report and `monsearch runs` show.
        progress(f"loading train and val of corpus {read_manifest(path).name}")
    # The search's handle: train and val only; test and xgen-* cannot be read through it.
    corp = open_for_search(path)
    missing = [s for s in ("train", "val") if s not in corp.splits]
    if missing:
        raise SearchError(
            f"corpus {path}: no {' or '.join(missing)} split (split it first: "
            "monsearch corpus split)"
        )
    return corp, path


def resolve_live_source(cfg: EvolveConfig) -> tuple[EvolveConfig, str]:
    """A new run's sources, with the configured live corpus added where ``live_source``
    is ``auto`` and the run is on the default corpus (and what to say about it)."""
    from dataclasses import replace

    if cfg.corpus_path or cfg.sources or cfg.live_source != "auto":
        if cfg.sources:
            return cfg, f"searching on {1 + len(cfg.sources)} sources"
        return cfg, "searching on one source only"
    from .live import configured_live_corpus

    live = configured_live_corpus()
    if live is None:
        return replace(cfg, live_source="off"), (
            "one source only (the synthetic corpus): run `monsearch corpus live --apps DIR` "
            "once to search on runs of the real apps too"
        )
    return replace(cfg, sources=(str(live),), live_source="off"), (
        f"searching on two sources: the synthetic corpus and the live corpus {live}"
    )


def open_sources(
    cfg: EvolveConfig, progress: Callable[[str], None] | None = None
) -> list[tuple[str, Any, Path]]:
    """The run's extra sources (train and val of each), named for their groups."""
    from monsearch.corpora.sealed import open_for_search
    from monsearch.corpora.store import read_manifest

    out: list[tuple[str, Any, Path]] = []
    for folder in cfg.sources:
        path = Path(folder)
        manifest = read_manifest(path)
        gen = ((manifest.split_info or {}).get("generator") or {}).get("name", "")
        name = "live" if gen == "monsearch-live" else manifest.name
        while name in {n for n, _, _ in out} or name == "synthetic":
            name += "'"
        if progress:
            progress(f"loading train and val of source {manifest.name}")
        corp = open_for_search(path)
        missing = [s for s in ("train", "val") if s not in corp.splits]
        if missing:
            raise SearchError(f"source {path}: no {' or '.join(missing)} split")
        out.append((name, corp, path))
    return out


def _train_data(trajectories: list[Any]) -> TrainData:
    import numpy as np

    from monsearch.views.build import build_views

    return TrainData(
        trajectories=trajectories,
        views=build_views(trajectories),
        labels=np.asarray([t.label.is_failure for t in trajectories], dtype=bool),
        tasks=[t.task for t in trajectories],
        dimensions=[t.dimension.value for t in trajectories],
        ids=[t.id for t in trajectories],
    )


def _without_keys(llm: dict[str, Any]) -> dict[str, Any]:
    """The LLM settings as config.json keeps them: never an API key (name its variable
    with ``api_key_env`` instead; a resumed run reads the key from there)."""
    out = {k: v for k, v in llm.items() if k != "api_key"}
    if isinstance(out.get("models"), list):
        out["models"] = [
            {k: v for k, v in m.items() if k != "api_key"} if isinstance(m, dict) else m
            for m in out["models"]
        ]
    return out


def _val_pool_factory(cfg: EvolveConfig, corpus_path: Path) -> Any:
    """None for local sandbox workers; a Dask-backed pool factory otherwise."""
    if cfg.backend == "local":
        return None
    from monsearch.search.dask_backend import dask_pool_factory

    return dask_pool_factory(cfg, corpus_path)


def prepare_run(
    cfg: EvolveConfig,
    *,
    resume: str | None,
    runs_dir: str | Path | None,
    resume_budget: int | None = None,
    held: contextlib.ExitStack | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> tuple[EvolveConfig, Run]:
    """The run folder and its effective config.

    The one place resume is decided: a resumed run keeps the settings it recorded (an
    edited config.json is refused); only the budget (``resume_budget``; None keeps the
    run's) and the spend caps of ``cfg`` may change, and a budget below what the run
    already spent is refused.

    Nothing is written before the run's lock is held (:func:`.runs.hold_run`): for as
    long as ``held`` lasts (the caller that writes the run passes it; without it the
    lock is only checked).
    """
    with contextlib.ExitStack() as own:
        return _prepare_run(
            cfg, resume=resume, runs_dir=runs_dir, resume_budget=resume_budget,
            held=own if held is None else held, on_warning=on_warning or (lambda _m: None),
        )  # fmt: skip


def _prepare_run(
    cfg: EvolveConfig,
    *,
    resume: str | None,
    runs_dir: str | Path | None,
    resume_budget: int | None,
    held: contextlib.ExitStack,
    on_warning: Callable[[str], None],
) -> tuple[EvolveConfig, Run]:
    from monsearch.search.runs import RunError, enclosing_run, hold_run, holds_anything

    root = runs_root(runs_dir)
    if resume:
        from monsearch.search.frozen import verify_run
        from monsearch.search.runs import resolve_run

        run = resolve_run(resume, root)
        hold_run(run, held)
        if not run.lineage_path.exists():
            raise RunError(
                f"run {run.id} has no lineage.sqlite: monsearch recorded nothing of it, so "
                "its config.json cannot be told from an edited one; start a new run instead"
            )
        # Replaying a forged row would select it: the lineage must be the one written, and
        # the settings the ones it recorded. (selected.json, selected.py and config.json
        # are written again.)
        verified = verify_run(run, copies=False)
        saved = {k: v for k, v in verified.config.items() if k not in _CIRCUMSTANCES}
        if verified.settings is not None:
            saved = _recorded_limits(saved, verified.settings, on_warning)
        search = saved.get("search")
        if isinstance(search, dict) and "proposer_subset" not in search:
            # Runs made before the setting existed gave proposers the tuner's subset.
            old = search.get("train_subset", SearchConfig.train_subset)
            saved["search"] = {**search, "proposer_subset": old}
        evaluation = saved.get("evaluation")
        if isinstance(evaluation, dict) and "fitness" not in evaluation:
            # Runs made before the invariant fitness existed scored the split as it is
            # (``plain``: how the record reads a run without the key).
            saved["evaluation"] = {**evaluation, "fitness": EvaluationOptions.fitness}
        stored = EvolveConfig.from_dict(saved, str(run.dir / "config.json"))
        # Only the budget and the spend caps may change on resume.
        effective = stored.with_overrides(
            budget=resume_budget, max_usd=cfg.max_usd, max_tokens=cfg.max_tokens
        )
        _check_resume_budget(run, effective.budget)
        return effective.validate(), run
    outer = enclosing_run(root)
    if outer is not None:
        raise RunError(
            f"--runs-dir {root}: inside run folder {outer}; a run is never written inside "
            "another: choose a folder outside it"
        )
    run_id = check_run_id(cfg.run_id or new_run_id(cfg.seed))
    run = Run(root / run_id)
    if run.dir.is_symlink() or (run.dir.exists() and not run.dir.is_dir()):
        raise RunError(
            f"run id {run_id!r}: {run.dir} is a file, not a run folder; pick another --run-id"
        )
    exists = MonsearchError(
        f"run {run_id!r} already exists in {root}/ (resume it with --resume {run_id}, "
        "or pick another --run-id)"
    )
    if holds_anything(run.dir):
        raise exists
    from monsearch.files import ensure_writable_dir

    ensure_writable_dir(run.dir, "run folder")
    run.dir.mkdir(parents=True, exist_ok=True)
    hold_run(run, held)
    if holds_anything(run.dir):  # another evolve made it between the check and the lock
        raise exists
    from dataclasses import replace

    return replace(cfg, run_id=run_id).validate(), run


class _DiscardUnstarted:
    """An exit callback for a new run: stopped during start-up (Ctrl-C, a refusal of its
    corpus, an error) before it recorded a candidate, it leaves no folder behind, as there
    is nothing in it to resume or read. Once the loop has started (``started``), the run
    stays, resumable; a resumed run is never given one."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.started = False

    def __call__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        if exc_type is None or self.started:
            return False
        try:
            if self.run.lineage_path.exists():
                with self.run.store() as store:
                    if len(store):
                        return False  # candidates recorded (cannot be before the loop)
        except Exception:  # an unreadable store is not ours to remove
            return False
        shutil.rmtree(self.run.dir, ignore_errors=True)
        return False


def _recorded_limits(
    saved: dict[str, Any], recorded: dict[str, Any], on_warning: Callable[[str], None]
) -> dict[str, Any]:
    """``saved`` with the budget and spending caps the run recorded: config.json's copy of
    them is never adopted (a resume changes them on the command line)."""
    from monsearch.search.run_identity import RESUMABLE, settings_differences

    differ = settings_differences(saved, recorded, resumable=True)
    if differ:
        on_warning(
            f"warning: config.json's {', '.join(differ)} differ from what the run recorded; "
            "ignored (a resume changes them with --budget, --max-usd, --max-tokens)"
        )
    return {**saved, **{k: recorded.get(k) for k in RESUMABLE if k in recorded}}


def _check_resume_budget(run: Run, budget: int) -> None:
    """Refuse a resume budget below what the run already spent: it would re-select
    among fewer candidates and freeze another strategy over the recorded one."""
    if not run.lineage_path.exists():
        return
    with run.store() as store:
        spent = len(store)
    if budget < spent:
        raise MonsearchError(
            f"run {run.id} already recorded {spent} candidate evaluation(s); --budget "
            f"{budget} is below that (on --resume it is the new total: give at least {spent}, "
            "or leave it out to keep the run's own budget)"
        )


#: Keys of config.json that record circumstances, not settings.
_CIRCUMSTANCES = ("created", "corpus", "sources_corpora", "python_hash_seed", "versions", "runs_dir")


def run_search(
    cfg: EvolveConfig,
    *,
    resume: str | None = None,
    resume_budget: int | None = None,
    runs_dir: str | Path | None = None,
    on_stage: Callable[[str], None] | None = None,
    on_start: Callable[[EvolveConfig, Run, int], None] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    on_llm_progress: Callable[[str], None] | None = None,
    stop: StopFlag | None = None,
) -> SearchOutcome:
    """Run (or resume) a search to its budget, select and freeze the strategy, holding
    the run's lock from before its first write to the end: one writer per run."""
    with contextlib.ExitStack() as held:
        return _search(
            cfg, held, resume=resume, resume_budget=resume_budget, runs_dir=runs_dir,
            on_stage=on_stage, on_start=on_start, on_progress=on_progress,
            on_llm_progress=on_llm_progress, stop=stop,
        )  # fmt: skip


def _search(
    cfg: EvolveConfig,
    held: contextlib.ExitStack,
    *,
    resume: str | None,
    resume_budget: int | None,
    runs_dir: str | Path | None,
    on_stage: Callable[[str], None] | None,
    on_start: Callable[[EvolveConfig, Run, int], None] | None,
    on_progress: Callable[[Progress], None] | None,
    on_llm_progress: Callable[[str], None] | None,
    stop: StopFlag | None,
) -> SearchOutcome:
    t_start = time.perf_counter()
    cfg.validate()  # every setting, and how they relate, before any work
    from monsearch.search.engine import seed_sources

    seed_sources(cfg.seeds)  # a missing seed file fails before any work
    if any(p.name == "llm" and p.weight > 0 for p in cfg.proposers):
        from monsearch.search.llm_proposer import LLMProposerConfig, probe_endpoints

        # So does an unusable [llm] table, or an endpoint that does not answer.
        for warning in probe_endpoints(LLMProposerConfig.from_dict(cfg.llm)):
            (on_stage or (lambda _m: None))(f"warning: {warning}")
    if cfg.corpus_path and not resume:
        from monsearch.corpora.store import read_manifest

        read_manifest(Path(cfg.corpus_path))  # so does a folder that holds no corpus
    from monsearch.cache import cache_dir
    from monsearch.files import ensure_writable_dir

    # The default corpus and the val/train views are cached there: check it before work.
    ensure_writable_dir(cache_dir() / "corpora", "cache folder (MONSEARCH_CACHE)")
    stage = on_stage or (lambda _m: None)
    cfg, run = prepare_run(
        cfg, resume=resume, runs_dir=runs_dir, resume_budget=resume_budget, held=held,
        on_warning=stage,
    )  # fmt: skip
    unstarted = None if resume else held.push(_DiscardUnstarted(run))
    if not resume:
        cfg, said = resolve_live_source(cfg)
        stage(said)
    corp, path = open_corpus(cfg, stage)
    corpus_info = _corpus_info(cfg, corp, path)
    sources = open_sources(cfg, stage)
    if sources and cfg.backend != "local":
        raise SearchError(
            f"several sources with the {cfg.backend} backend: not supported (its workers "
            "read one corpus's val); use --backend local"
        )
    if resume:
        recorded = run.corpus()
        if recorded.content_hash != corp.content_hash:
            raise SearchError(
                f"run {run.id} was made on corpus {(recorded.content_hash or '?')[:12]}, "
                f"but {path} now holds {corpus_info['content_hash'][:12]}: resuming would "
                "mix two corpora"
            )
    source_info = [
        {"group": name, **_corpus_info(replace(cfg, corpus_path=str(p)), c, p)} for name, c, p in sources
    ]
    if resume:
        recorded_sources = {s.get("resolved_path"): s.get("content_hash") for s in run.config().get("sources_corpora") or []}
        for info in source_info:
            want = recorded_sources.get(info["resolved_path"])
            if want is not None and want != info["content_hash"]:
                raise SearchError(
                    f"run {run.id} was made on source {want[:12]}, but {info['resolved_path']} "
                    f"now holds {info['content_hash'][:12]}: resuming would mix two corpora"
                )
    config_dict = {
        **cfg.to_dict(),
        **({"sources_corpora": source_info} if source_info else {}),
        "llm": _without_keys(cfg.llm),
        "created": run.config().get("created") if resume else _dt.datetime.now(_dt.UTC).isoformat(),
        "corpus": corpus_info,
        "versions": _versions(),
    }
    from monsearch.search.frozen import record_settings

    # The settings are chained (the truth) before config.json (a copy) is written.
    record_settings(run, config_dict, created=not resume, on_warning=stage)
    run.write_config(config_dict)

    from monsearch.sandbox.evaluate import SandboxLimits

    limits = SandboxLimits(wall_s=cfg.wall_s, cpu_s=cfg.cpu_s, memory_mb=cfg.memory_mb)
    def identity(split: str) -> str | None:
        # (a run on several sources scores their splits together: all of them name it)
        more = "".join(f" + {n} {c.content_hash} part {c.part_sha256(split)}" for n, c, _ in sources)
        return f"corpus {corp.content_hash} split {split} part {corp.part_sha256(split)}{more}"

    where = {
        "local": f"{cfg.workers} local worker(s)",
        "dask-local": f"a Dask LocalCluster of {cfg.workers} worker(s)",
        "dask": f"the Dask scheduler at {cfg.scheduler}",
    }[cfg.backend]
    stage(f"starting the sandbox (val on {where}, train on 1 local worker)")
    train_runs, val_runs = list(corp.split("train")), list(corp.split("val"))
    group_of: dict[str, str] | None = None
    if sources:
        group_of = {t.id: "synthetic" if not cfg.corpus_path else "corpus" for t in (*train_runs, *val_runs)}
        for name, c, _p in sources:
            for split, into in (("train", train_runs), ("val", val_runs)):
                for t in c.split(split):
                    if t.id in group_of:
                        raise SearchError(f"source {name}: trajectory id {t.id} is in two sources")
                    group_of[t.id] = name
                    into.append(t)
    with SearchEvaluator(
        train_runs,
        val_runs,
        cfg.evaluation,
        train_subset=cfg.search.train_subset,
        proposer_subset=cfg.search.proposer_subset,
        seed=cfg.seed,
        workers=cfg.workers,
        limits=limits,
        identity=identity,
        val_pool_factory=_val_pool_factory(cfg, path),
        group_of=group_of,
    ) as evaluator, LineageStore(run.lineage_path) as store:
        stage(f"building views of {len(evaluator.train)} train trajectories for the proposers")
        train = _train_data(evaluator.train)
        store.set_meta("status", "running")
        search = Search(
            cfg, run, evaluator, train, store,
            on_progress=on_progress, on_llm_progress=on_llm_progress, on_stage=stage,
            stop=stop,
        )  # fmt: skip
        if unstarted is not None:
            unstarted.started = True  # the loop starts: from here the run is kept
        if on_start:
            on_start(cfg, run, len(search.stored))
        t_loop = time.perf_counter()
        try:
            status, reason = search.run_loop()
        except BaseException as exc:
            store.set_meta("status", "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed")
            store.set_meta("reason", f"{type(exc).__name__}: {exc}")
            search.close()
            raise
        loop_s = time.perf_counter() - t_loop
        store.set_meta("status", status)
        store.set_meta("reason", reason)
        store.set_meta(
            "timings",
            json.dumps(
                {
                    "startup_s": t_loop - t_start,
                    "loop_s": loop_s,
                    **search.clock,
                    "framework_s": loop_s - sum(search.clock.values()),
                    "evaluated": search.evaluated,
                    "replayed": search.replayed,
                }
            ),
        )
        stage("selecting the strategy (bootstrap lower bound on val)")
        selected = search.select()
        if selected is not None:
            from monsearch.search.frozen import freeze

            freeze(run, selected, store=store, on_warning=stage)
        best = search.progress()
        search.close()
        return SearchOutcome(
            run=run,
            status=status,
            reason=reason,
            evaluated=search.evaluated,
            replayed=search.replayed,
            selected=selected,
            best_id=best.best_id,
            best_fitness=best.best,
            spend=store.ledger_totals(),
        )


#: What :func:`evolve` returns: the run, how it ended, the frozen strategy (``selected``,
#: with ``.hash``, ``.source``, ``.fitness``, ``.fitness_low``), the best candidate, spend.
EvolveResult = SearchOutcome


@speaks_python(
    {
        "--resume": "resume",
        "--run-id": "run_id",
        "--budget": "budget",
        "--runs-dir": "runs_dir",
        "--seed-program": "seed_programs",
        "--proposer": "proposers",
        "--corpus": "corpus",
        "--config": "config",
        "--seed": "seed",
    }
)
def evolve(
    *,
    budget: int | None = None,
    seed: int | None = None,
    corpus: str | Path | None = None,
    config: EvolveConfig | dict[str, Any] | str | Path | None = None,
    resume: str | None = None,
    run_id: str | None = None,
    runs_dir: str | Path | None = None,
    proposers: str | None = None,
    seed_programs: tuple[str, ...] = (),
    settings: dict[str, Any] | None = None,
    on_stage: Callable[[str], None] | None = None,
    on_start: Callable[[EvolveConfig, Run, int], None] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    stop: StopFlag | None = None,
) -> EvolveResult:
    """Evolve a monitor, select and freeze it: ``monsearch evolve`` as a function.

    ``config``: an :class:`EvolveConfig`, a dict or a TOML file of its keys (default:
    the defaults). The keyword options override it (None: not given), as the
    command-line options do; ``settings`` takes any further key of the config, dotted
    names reaching the sections (``{"evaluation.rho": 0.1, "search.islands": 2,
    "workers": 1}``). ``corpus``: a corpus folder (None: the embedded default, built
    once and cached). ``resume``: a run id or folder to continue (its own settings;
    ``budget`` is the new total, None keeps the run's). Runs go under ``runs_dir``
    (default ``$MONSEARCH_RUNS`` or ``./runs``).
    """
    from monsearch.search.config import load_config_file, parse_proposers

    if isinstance(config, EvolveConfig):
        cfg = config
    elif isinstance(config, dict):
        cfg = EvolveConfig.from_dict(config)
    elif config is not None:
        cfg = load_config_file(config)
    else:
        cfg = EvolveConfig()
    cfg = cfg.with_overrides(
        budget=None if resume else budget,
        seed=seed,
        run_id=run_id,
        corpus_path=None if corpus is None else str(corpus),
        proposers=None if proposers is None else parse_proposers(proposers),
        seeds=tuple(cfg.seeds) + tuple(str(p) for p in seed_programs) if seed_programs else None,
        **(settings or {}),
    )
    return run_search(
        cfg,
        resume=resume,
        resume_budget=budget if resume else None,
        runs_dir=runs_dir,
        on_stage=on_stage,
        on_start=on_start,
        on_progress=on_progress,
        stop=stop,
    )
