"""The configuration of one run: every knob of ``monsearch evolve``, resolved.

Defaults < ``--config FILE`` (TOML) < command-line options. Each record checks its
fields when it is built (type, finiteness, range: :mod:`monsearch.search.config_rules`),
so a file, an option and the Python API are refused alike, before any work;
:meth:`EvolveConfig.validate` adds the checks that relate fields. The resolved
configuration is written to ``runs/<id>/config.json`` before the first
evaluation; ``--resume`` reads it back, so a resumed run cannot silently change
its seed, corpus or search settings (only the budget and spend caps may grow).
"""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from monsearch.errors import MonsearchError
from monsearch.eval.options import EvaluationOptions

from . import config_rules as rules


class ConfigError(MonsearchError):
    """A configuration file or option that cannot be used."""


def _values(record: Any) -> dict[str, Any]:
    return {f.name: getattr(record, f.name) for f in fields(record) if f.init}


def _init_names(cls: type) -> set[str]:
    return {f.name for f in fields(cls) if f.init}


def _refuse(problems: list[str]) -> None:
    if problems:
        raise ConfigError("; ".join(problems))


@dataclass(frozen=True)
class EvaluationConfig(EvaluationOptions):
    """How candidates are scored on val (and later, by the sealed test, elsewhere): the
    options a run records (:class:`~monsearch.eval.options.EvaluationOptions`, which
    documents them), at a new run's defaults."""

    #: Mean oracle calls per benign trajectory a candidate may make (docs/DESIGN.md: rho).
    rho: float = 0.05
    fitness: str = "invariant"

    def __post_init__(self) -> None:
        _refuse(rules.number_problems(_values(self), rules.EVALUATION, "evaluation."))


@dataclass(frozen=True)
class SearchConfig:
    """The evolution loop and the program database (openevolve's MAP-Elites + islands)."""

    islands: int = 3
    population: int = 200
    archive: int = 40
    #: Candidates proposed from one database state and evaluated together. Fixed by
    #: the config, not by the number of workers, so the lineage does not depend on it.
    batch: int = 4
    migration_interval: int = 20
    migration_rate: float = 0.1
    exploration_ratio: float = 0.2
    exploitation_ratio: float = 0.7
    num_inspirations: int = 2
    #: Optuna trials per tuned candidate (on train; not counted in --budget), 0: off.
    optuna_trials: int = 12
    #: Optuna trials asked at once and scored concurrently (fixed here, not by the
    #: number of workers, so the tuning does not depend on the machine).
    optuna_batch: int = 2
    #: Tune the PARAMS of every k-th proposed candidate (0: never).
    optuna_every: int = 4
    #: Train trajectories the tuner scores on (a fixed, stratified subset; 0: all).
    train_subset: int = 1500
    #: Train trajectories the proposers read: what detectors are mined from, which
    #: failures the parent misses, the LLM's feedback (a fixed, stratified subset;
    #: 0: all). All by default: a detector's counts on a 1,500-run subset are too few
    #: to trust (one looked 20 failures / 2 passes there, 57 / 14 on all of train,
    #: and cost 0.16 budget-AUC on two unseen generators).
    proposer_subset: int = 0
    #: Attempts to get a program not evaluated before, before a duplicate is recorded.
    dedup_attempts: int = 3

    def __post_init__(self) -> None:
        _refuse(rules.number_problems(_values(self), rules.SEARCH, "search."))


#: The embedded default corpus: the generator's defaults (monsearch.synth.generate;
#: a test keeps the two equal). A run records them when it uses it.
DEFAULT_CORPUS = {"seed": 0, "size": 15_000}


def _default_corpus() -> dict[str, int]:
    return dict(DEFAULT_CORPUS)


@dataclass(frozen=True)
class ProposerSpec:
    name: str
    weight: float = 1.0

    def __post_init__(self) -> None:
        problem = rules.text_problem("proposers[].name", self.name)
        problems = [problem] if problem else []
        problem = rules.WEIGHT.problem(f"proposers[{self.name!r}].weight", self.weight)
        _refuse(problems + ([problem] if problem else []))


@dataclass(frozen=True)
class EvolveConfig:
    run_id: str = ""
    seed: int = 0
    budget: int = 100
    max_usd: float | None = None
    max_tokens: int | None = None
    #: None: the embedded default corpus (``corpus_default`` says which).
    corpus_path: str | None = None
    corpus_default: dict[str, int] = field(default_factory=lambda: _default_corpus())
    #: More corpora the run searches on beside its corpus (eval/sources.py: each one a
    #: group whose fitness counts and is guarded), as folders.
    sources: tuple[str, ...] = ()
    #: "auto": a run on the default corpus also searches on the configured live corpus
    #: (``monsearch corpus live``), when one is; "off": never.
    live_source: str = "auto"
    seeds: tuple[str, ...] = ("baseline", "stronger")
    proposers: tuple[ProposerSpec, ...] = (ProposerSpec("offline"),)
    llm: dict[str, Any] = field(default_factory=dict)
    evaluation: EvaluationConfig = EvaluationConfig()
    search: SearchConfig = SearchConfig()
    workers: int = 2
    #: Where val evaluations run: "local" (sandbox worker processes here), "dask"
    #: (an existing scheduler at ``scheduler``), "dask-local" (a LocalCluster).
    backend: str = "local"
    scheduler: str | None = None
    wall_s: float = 60.0
    cpu_s: float = 30.0
    memory_mb: int = 1024

    def __post_init__(self) -> None:
        _refuse(_top_problems(self))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["evaluation"] = self.evaluation.to_dict()
        d["seeds"] = list(self.seeds)
        d["sources"] = list(self.sources)
        d["proposers"] = [asdict(p) for p in self.proposers]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "configuration") -> EvolveConfig:
        try:
            return _build(cls, d, where)
        except ConfigError as exc:
            if str(exc).startswith(where):
                raise
            raise ConfigError(f"{where}: {exc}") from None  # a field's own check: say where

    def with_overrides(self, **options: Any) -> EvolveConfig:
        """Apply command-line options (None: not given). Dotted names reach sub-configs."""
        top: dict[str, Any] = {}
        sub: dict[str, dict[str, Any]] = {"evaluation": {}, "search": {}}
        known = {
            "": _init_names(EvolveConfig),
            "evaluation": _init_names(EvaluationConfig),
            "search": _init_names(SearchConfig),
        }
        for key, value in options.items():
            if value is None:
                continue
            section, _, name = key.partition(".")
            if not name:
                section, name = "", key
            if name not in known.get(section, ()) or key in ("evaluation", "search"):
                raise ConfigError(
                    f"unknown setting {key!r} (the keys of config.json; a section's as "
                    "'evaluation.rho' or 'search.islands')"
                )
            if section:
                sub[section][name] = value
            else:
                top[key] = value
        cfg = replace(self, **top)
        if sub["evaluation"]:
            cfg = replace(cfg, evaluation=replace(cfg.evaluation, **sub["evaluation"]))
        if sub["search"]:
            cfg = replace(cfg, search=replace(cfg.search, **sub["search"]))
        return cfg

    def validate(self) -> EvolveConfig:
        problems: list[str] = []
        if self.budget < 1:
            problems.append(f"budget {self.budget}: must be at least 1")
        ev, se = self.evaluation, self.search
        if not 0 < ev.b_lo < ev.b_hi <= 1:
            problems.append(f"budget range [{ev.b_lo}, {ev.b_hi}]: need 0 < b_lo < b_hi <= 1")
        if ev.rho < 0:
            problems.append(f"rho {ev.rho}: must be >= 0")
        if ev.on_small not in ("warn", "refuse"):
            problems.append(f"on_small {ev.on_small!r}: 'warn' or 'refuse'")
        if ev.fitness not in ("invariant", "plain"):
            problems.append(f"fitness {ev.fitness!r}: 'invariant' or 'plain'")
        from monsearch.eval.priors import CELL_KEYS

        if ev.cell_mass not in ("minority", "kept"):
            problems.append(f"cell_mass {ev.cell_mass!r}: 'minority' or 'kept'")
        cells = ev.cells if isinstance(ev.cells, tuple | list) else ()
        if not cells or any(k not in CELL_KEYS for k in cells):
            problems.append(f"cells {ev.cells!r}: one or more of {', '.join(CELL_KEYS)}")
        if ev.oracle not in ("replay", "none"):
            problems.append(f"oracle {ev.oracle!r}: 'replay' or 'none'")
        if se.exploration_ratio + se.exploitation_ratio > 1:
            problems.append(
                f"search: exploration_ratio {se.exploration_ratio} + exploitation_ratio "
                f"{se.exploitation_ratio}: at most 1 together (the rest is random sampling)"
            )
        if not self.proposers:
            problems.append("proposers: at least one")
        if sum(p.weight for p in self.proposers) <= 0:
            problems.append("proposers: the weights sum to 0")
        known = {"offline", "perturb", "llm"}
        for p in self.proposers:
            if p.name not in known:
                problems.append(f"proposer {p.name!r}: one of {', '.join(sorted(known))}")
        if self.backend not in ("local", "dask", "dask-local"):
            problems.append(f"backend {self.backend!r}: local, dask or dask-local")
        if self.backend == "dask" and not self.scheduler:
            problems.append("backend dask needs --scheduler ADDRESS")
        problems += _top_problems(self)
        if problems:
            raise ConfigError("; ".join(problems))
        return self


def _build(cls: type, d: Any, where: str) -> Any:
    if not isinstance(d, dict):
        raise ConfigError(f"{where}: expected a table, got {type(d).__name__}")
    names = {f.name: f for f in fields(cls) if f.init}
    unknown = sorted(set(d) - set(names))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}")
    kwargs: dict[str, Any] = {}
    for key, value in d.items():
        if key == "evaluation":
            kwargs[key] = _build(EvaluationConfig, value, f"{where}: evaluation")
        elif key == "search":
            kwargs[key] = _build(SearchConfig, value, f"{where}: search")
        elif key == "proposers":
            if not isinstance(value, list):
                raise ConfigError(f"{where}: proposers must be a list of tables")
            kwargs[key] = tuple(_build(ProposerSpec, p, f"{where}: proposers") for p in value)
        elif key in ("seeds", "cells", "sources") and isinstance(value, (list, tuple)):
            kwargs[key] = tuple(value)
        else:
            kwargs[key] = value
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def load_config_file(path: str | Path) -> EvolveConfig:
    """An :class:`EvolveConfig` from a TOML file (keys as in ``config.json``)."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such config file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: unreadable ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML ({exc})") from None
    return EvolveConfig.from_dict(data, str(p))


def parse_proposers(text: str) -> tuple[ProposerSpec, ...]:
    """``offline``, ``offline:0.7,llm:0.3`` → proposer specs."""
    specs = []
    for part in text.split(","):
        name, _, weight = part.strip().partition(":")
        try:
            specs.append(ProposerSpec(name.strip(), float(weight) if weight else 1.0))
        except ValueError:
            raise ConfigError(f"--proposer {text!r}: weight {weight!r} is not a number") from None
    return tuple(specs)


def _top_problems(cfg: EvolveConfig) -> list[str]:
    """What in the top level of ``cfg`` no run can use (its sections check themselves)."""
    problems = rules.number_problems(_values(cfg), rules.TOP, "")
    for name, optional in (("run_id", False), ("corpus_path", True), ("backend", False),
                           ("scheduler", True)):  # fmt: skip
        problem = rules.text_problem(name, getattr(cfg, name), optional=optional)
        problems += [problem] if problem else []
    if cfg.live_source not in ("auto", "off"):
        problems.append(f"live_source {cfg.live_source!r}: 'auto' or 'off'")
    if not isinstance(cfg.sources, tuple | list):
        problems.append(f"sources {cfg.sources!r}: expected a list of corpus folders")
    else:
        for i, src in enumerate(cfg.sources):
            problem = rules.text_problem(f"sources[{i}]", src)
            problems += [problem] if problem else []
    if not isinstance(cfg.seeds, tuple | list):
        problems.append(f"seeds {cfg.seeds!r}: expected a list of seed names or files")
    else:
        for i, seed in enumerate(cfg.seeds):
            problem = rules.text_problem(f"seeds[{i}]", seed)
            problems += [problem] if problem else []
    if not isinstance(cfg.proposers, tuple | list) or not all(
        isinstance(p, ProposerSpec) for p in cfg.proposers
    ):
        problems.append("proposers: expected a list of tables (name, weight)")
    if not isinstance(cfg.evaluation, EvaluationConfig):
        problems.append("evaluation: expected a table")
    if not isinstance(cfg.search, SearchConfig):
        problems.append("search: expected a table")
    default = cfg.corpus_default
    if not isinstance(default, dict) or set(default) - set(DEFAULT_CORPUS):
        problems.append(
            f"corpus_default: expected a table of {', '.join(DEFAULT_CORPUS)}"
        )
    else:
        problems += rules.number_problems(default, rules.CORPUS_DEFAULT, "corpus_default.")
    if cfg.llm:
        problems += rules.llm_problems(cfg.llm)
    return problems
