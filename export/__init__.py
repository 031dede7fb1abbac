"""Export a frozen strategy as an installable monitor plugin (``monsearch export``).

The plugin is a small setuptools package::

    DIR/pyproject.toml            entry points: monsearch.monitors, inspect_ai, control_arena
    DIR/README.md                 what it detects, its numbers, how to use it
    DIR/src/<package>/core.py     load -> view -> restricted run -> score / findings / decide
    DIR/src/<package>/_meta.py    PROGRAM (the frozen source) and MONITOR (metadata)
    DIR/src/<package>/_vendor/    monsearch's readers, view and sandbox modules, copied
                                  with only their imports rewritten (see .vendor)
    DIR/src/<package>/{inspect_scorer,control_arena_monitor,atifscan_plugin}.py  adapters
    DIR/src/<package>/{_isolation,_worker,_wire,_limits}.py  the worker process the
                                  program runs in, under a time budget and a memory cap
    DIR/src/<package>/_display.py how numbers are printed (a copy of .display)

:func:`export` writes it, then (unless ``verify=False``) scores every val trajectory
with the written plugin in a separate interpreter with a random ``PYTHONHASHSEED``
and refuses the export unless every score equals the run's stored val score exactly.
"""

from __future__ import annotations

import ast
import contextlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monsearch.errors import MonsearchError
from monsearch.eval.escalation import ScoredSet
from monsearch.eval.options import EvaluationOptions
from monsearch.oracle.prompt import PROMPT_VARIANTS
from monsearch.search.frozen import FrozenProgram
from monsearch.search.runs import CorpusRef

from .vendor import MODULES, monsearch_version, vendored_sources

PLUGIN_DIR = Path(__file__).with_name("plugin")
#: Plugin files copied as they are (``_orjson``/``_re2`` go to ``_vendor``).
PLUGIN_FILES = (
    "core.py",
    "_limits.py",
    "_isolation.py",
    "_wire.py",
    "_worker.py",
    "_rises.py",
    "_evidence.py",
    "_messages.py",
    "inspect_scorer.py",
    "_inspect_registry.py",
    "control_arena_monitor.py",
    "atifscan_plugin.py",
    "__main__.py",
)
SHIM_FILES = ("_orjson.py", "_re2.py")
#: Audit budgets whose thresholds are listed in the metadata and README.
BUDGETS = (0.01, 0.02, 0.05, 0.10)
DEFAULT_BUDGET = 0.05
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,60}$")


class ExportError(MonsearchError):
    """The strategy cannot be exported (or the written plugin does not reproduce it)."""


@dataclass(frozen=True)
class Strategy:
    """What is exported: a verified program of a run (its one frozen record,
    :class:`monsearch.search.frozen.FrozenProgram`), the run's config and the newest
    sealed-test report of that program."""

    program: FrozenProgram
    config: dict[str, Any]
    test_report: dict[str, Any] | None

    @property
    def run_id(self) -> str:
        return self.program.run_id

    @property
    def program_id(self) -> str:
        return self.program.id

    @property
    def source(self) -> str:
        return self.program.source

    @property
    def strategy_hash(self) -> str:
        return self.program.strategy_hash

    @property
    def selected(self) -> bool:
        return self.program.selected

    @property
    def fitness_json(self) -> dict[str, Any]:
        return self.program.fitness_json

    @property
    def val_scores(self) -> list[float]:
        assert self.program.val_scores is not None
        return [float(x) for x in self.program.val_scores]


# --------------------------------------------------------------------------- run


def load_strategy(run_ref: str, program_id: str | None = None, runs_dir: Any = None) -> Strategy:
    """The selected strategy of a run (or candidate ``program_id`` of its lineage), as
    verified against the run's chain (``monsearch.search.frozen``)."""
    from monsearch.eval.sealed_reports import latest_report
    from monsearch.search.frozen import verify_run
    from monsearch.search.runs import RunError, resolve_run

    run = resolve_run(run_ref, runs_dir)
    verified = verify_run(run)
    if program_id is None and verified.frozen is None:
        raise ExportError(
            f"run {run.id} has no selected strategy yet; name a candidate with --program"
        )
    try:
        program = verified.program(program_id)
    except RunError as exc:
        raise ExportError(str(exc)) from None
    if program.val_scores is None:
        raise ExportError(f"candidate {program.id} of run {run.id} has no val scores")
    return Strategy(program, verified.config, latest_report(run.dir, program.strategy_hash))


def corpus_path(config: dict[str, Any]) -> Path:
    """The run's corpus as it recorded it (the folder it resolved to). The library's and
    the command's export pass the corpus explicitly (:func:`monsearch.api.corpus.run_corpus`
    rebuilds a default corpus the cache lost)."""
    corpus = CorpusRef.from_config(config)
    for where in (corpus.resolved_path, corpus.path):
        if where and Path(where).exists():
            return Path(where)
    raise ExportError(
        "the run's corpus is not where the run recorded it "
        f"({corpus.resolved_path or corpus.path or 'the default corpus'})"
    )


def load_val(config: dict[str, Any], corpus: Path | None = None) -> list[Any]:
    from monsearch.corpora.store import load_corpus

    ref = CorpusRef.from_config(config)
    # The run may have read its val split under another name (config corpus.splits).
    split = ref.split("val")
    corpus = load_corpus(corpus or corpus_path(config), [split])
    want = ref.content_hash
    if "content_hash" in ref.differs(corpus.content_hash):
        raise ExportError(
            f"the corpus found for this run has content hash {corpus.content_hash[:16]}..., "
            f"the run used {want[:16]}..."
        )
    return corpus.split(split)


# --------------------------------------------------------------------------- metadata


def thresholds(benign_sorted: list[float], budgets: tuple[float, ...]) -> dict[str, Any]:
    """``{budget: {tau, g}}`` with monsearch's own threshold rule (eval.metrics)."""
    import numpy as np

    from monsearch.eval.metrics import np_threshold

    if not benign_sorted:
        return {}
    tau, g = np_threshold(np.asarray(benign_sorted), np.asarray(budgets))
    return {
        f"{b:g}": {"tau": float(t), "g": float(x)} for b, t, x in zip(budgets, tau, g, strict=True)
    }


@dataclass(frozen=True)
class _ValSet(ScoredSet):
    """val as the escalation fit reads it, the oracle calls per benign run given as their
    mean (all the fit reads of them; the search keeps no count per run)."""

    benign_calls: float = 0.0

    @property
    def mean_benign_oracle_calls(self) -> float:
        return self.benign_calls


def val_escalation(strategy: Strategy, val: list[Any]) -> dict[str, Any]:
    """The escalation rules fitted on val (``EscalationFit.to_dict()`` by rule), exactly
    as ``monsearch test`` fits them (:func:`monsearch.eval.sealed.fit_on_val`, the
    default cost model): the run's val scores, panel labels, the corpus's stored judge
    verdicts, and the oracle calls per benign run the search recorded. Nothing sealed,
    so a plugin exported before the sealed test carries the same band as one after.
    Empty when val has no verdict for some run, or lacks failures or benign runs."""
    import numpy as np

    from monsearch.eval.costs import CostModel
    from monsearch.eval.sealed import fit_on_val
    from monsearch.oracle.session import replay_scores_from

    judged = replay_scores_from(val)
    keep = [i for i, t in enumerate(val) if t.label is not None]
    y = np.array([val[i].label.is_failure for i in keep], dtype=bool)
    judge = np.array([judged.get(val[i].id, math.nan) for i in keep], dtype=float)
    if not keep or y.all() or not y.any() or not np.all(np.isfinite(judge)):
        return {}
    scores = np.asarray(strategy.val_scores, dtype=float)[keep]
    # The search keeps the mean over benign runs, computed as ScoredSet computes it.
    calls = float(((strategy.fitness_json.get("oracle") or {}).get("rho")) or 0.0)
    checked = ScoredSet.of(scores, judge, y)
    val_set = _ValSet(checked.program, checked.judge, checked.is_failure, None, calls)
    _, fits = fit_on_val(val_set, CostModel())
    return {rule: fit.to_dict() for rule, fit in fits.items()}


def _number(x: Any) -> float | None:
    # Open band ends are written as "inf"/"-inf" (JSON has no infinities).
    try:
        value = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def _band(fits: dict[str, Any]) -> dict[str, Any] | None:
    """One band a host can apply: the monotone ``band`` rule's (else ``np``'s) policy at
    the cheapest cost budget where it escalates anything. Every policy is kept in
    ``MONITOR["escalation"]`` for hosts that budget differently."""
    for rule in ("band", "np"):
        fit = fits.get(rule)
        for p in sorted((fit or {}).get("policies", []), key=lambda p: p.get("budget", 0)):
            lo, hi = _number(p.get("lower")), _number(p.get("upper"))
            if not p.get("feasible") or lo is None or hi is None or not lo < hi:
                continue
            if not p.get("escalation_rate"):
                continue
            return {
                "low": p["lower"],
                "high": p["upper"],
                "rule": rule,
                "cost_budget": p.get("budget"),
                "recall": p.get("recall"),
                "escalation_rate": p.get("escalation_rate"),
                "usd_per_unit": (fit.get("costs") or {}).get("usd_per_unit"),
            }
    return None


def _compact_test(report: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the plugin keeps of a sealed-test report: headline rows and the test split's
    panel-label metrics (no ledger: it names a file of the exporting machine)."""
    if report is None:
        return None
    corpora = report.get("corpora") or {}
    test = corpora.get("test") or {}
    panel = test.get("panel") or {}
    keep = ("bauc", "bauc_pooled", "recall_at", "flag_rate_at", "n_benign", "n_failures")
    return {
        "reopened": report.get("reopened"),
        "val_scores_reproduced": report.get("val_scores_reproduced"),
        "summary": report.get("summary"),
        "test": {
            "n": test.get("n"),
            "status": test.get("status"),
            **{
                kind: {k: v for k, v in (panel.get(kind) or {}).items() if k in keep}
                for kind in ("transferred", "recalibrated")
            },
        },
    }


def build_metadata(strategy: Strategy, val: list[Any], name: str, package: str) -> dict[str, Any]:
    """The plugin's ``MONITOR`` dict (JSON data); ``val``: the run's val trajectories."""
    labels = [t.label.is_failure if t.label is not None else None for t in val]
    if len(labels) != len(strategy.val_scores):
        raise ExportError(
            f"the run stored {len(strategy.val_scores)} val scores but the corpus has "
            f"{len(labels)} val trajectories"
        )
    benign = sorted(s for s, y in zip(strategy.val_scores, labels, strict=True) if y is False)
    evaluation = EvaluationOptions.from_config(strategy.config)
    # Paths name the exporting machine's folders: not part of what ships.
    corpus = {k: v for k, v in (strategy.config.get("corpus") or {}).items() if "path" not in k}
    metrics = strategy.fitness_json.get("metrics") or {}
    fits = val_escalation(strategy, val)
    val_record = {
        "fitness": strategy.fitness_json.get("fitness"),
        "fitness_low": strategy.fitness_json.get("fitness_low"),
        "status": strategy.fitness_json.get("status"),
        "metrics": metrics,
        "metrics_true": strategy.fitness_json.get("metrics_true"),
        "oracle": strategy.fitness_json.get("oracle"),
    }
    return {
        "name": name,
        "package": package,
        "monsearch_version": monsearch_version(),
        "run_id": strategy.run_id,
        "program_id": strategy.program_id,
        "selected": strategy.selected,
        "strategy_hash": strategy.strategy_hash,
        "corpus": corpus,
        "evaluation": evaluation.to_dict(),
        "query_caps": {
            "per_traj_cap": evaluation.per_traj_cap,
            "rho": evaluation.rho,
            "oracle": evaluation.oracle,
            # The names ``oracle(traj, variant)`` accepts, as in the sandbox.
            "variants": list(PROMPT_VARIANTS),
        },
        "val": val_record,
        "test": _compact_test(strategy.test_report),
        "default_budget": DEFAULT_BUDGET,
        "thresholds": thresholds(benign, BUDGETS),
        "calibration": {"split": "val", "labels": "panel", "val_benign_scores": benign},
        "fallback_score": min(strategy.val_scores) if strategy.val_scores else 0.0,
        "escalation": fits or None,
        "escalation_band": _band(fits),
        "vendored": [f"{mod} -> _vendor/{file}.py" for mod, file in MODULES],
    }


# --------------------------------------------------------------------------- writing


def _pyproject(package: str, name: str, version: str) -> str:
    dist = package.replace("_", "-")
    # google-re2 always: on stdlib re, a pattern can backtrack for minutes on text the
    # monitored agent writes (see plugin/_re2.py).
    deps = ['"RestrictedPython>=9.0,<10"', '"google-re2>=1.1,<2"']
    return f"""[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{dist}"
version = "{version}"
description = "monsearch OPSEC monitor {name} (exported frozen strategy)"
readme = "README.md"
requires-python = ">=3.11"
dependencies = [{", ".join(deps)}]

[project.optional-dependencies]
inspect = ["inspect-ai>=0.3.285"]
control-arena = ["control-arena>=20.1"]
atif-scan = ["atif-scan>=0.7,<0.8"]

[project.scripts]
{dist} = "{package}.__main__:main"

[project.entry-points."monsearch.monitors"]
{name} = "{package}.core:score"

[project.entry-points.inspect_ai]
{package} = "{package}._inspect_registry"

[project.entry-points.control_arena]
{package} = "{package}.control_arena_monitor"

[tool.setuptools.packages.find]
where = ["src"]

# monsearch's lint rules, so the package is judged as the code it came from wherever it
# is written: ruff reads the nearest pyproject.toml with a [tool.ruff] table.
[tool.ruff]
line-length = 100
target-version = "py311"
src = ["src"]

[tool.ruff.lint]
select = ["E", "F", "W", "I", "B", "UP", "SIM"]
# as in monsearch (the _vendor modules are its own); _meta.py also has two long lines
ignore = ["E501"]

[tool.ruff.lint.isort]
known-first-party = ["{package}"]
"""


def _meta_module(source: str, monitor: dict[str, Any]) -> str:
    text = json.dumps(monitor, indent=1, sort_keys=True, allow_nan=False)
    return (
        '"""Generated by monsearch export: the frozen program and its metadata. Do not edit:\n'
        'the program\'s sha256 is MONITOR["strategy_hash"]."""\n\n'
        "import json\n\n"
        f"PROGRAM = {source!r}\n\n"
        f"MONITOR = json.loads({text!r})\n"
    )


_INIT = '''"""monsearch OPSEC monitor {name}: exported frozen strategy (see README.md)."""

from .core import (
{imports}
)

__version__ = "{version}"
__all__ = [
{names}
]
'''


def _core_exports() -> list[str]:
    """``plugin/core.py``'s ``__all__``: the plugin package exports exactly what its core
    does (read from the template's source: the template is not a module of monsearch)."""
    tree = ast.parse((PLUGIN_DIR / "core.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
        ):
            return list(ast.literal_eval(node.value))
    raise RuntimeError("plugin/core.py has no __all__")


def _init_source(name: str, version: str) -> str:
    names = _core_exports()
    return _INIT.format(
        name=name,
        version=version,
        imports="\n".join(f"    {n}," for n in names),
        names="\n".join(f'    "{n}",' for n in names),
    )


def check_out(out: Path) -> None:
    """Refuse, before any work, an ``out`` that cannot become the plugin's folder: one
    that cannot be created or written (under a file, under /proc), or that holds files."""
    from monsearch.files import ensure_writable_dir

    ensure_writable_dir(out, "plugin folder")
    if out.is_dir() and any(out.iterdir()):
        raise ExportError(f"{out}: not empty; choose a new folder for the plugin")


def write_plugin(out: Path, package: str, source: str, monitor: dict[str, Any]) -> None:
    """Write the plugin package into ``out`` (which must be empty or absent)."""
    from .readme import render_readme

    check_out(out)
    src = out / "src" / package
    vendor = src / "_vendor"
    vendor.mkdir(parents=True)
    version = f"0.1.0+{monitor['strategy_hash'][:12]}"
    (out / "pyproject.toml").write_text(
        _pyproject(package, monitor["name"], version),
        encoding="utf-8",
    )
    (out / "README.md").write_text(render_readme(monitor), encoding="utf-8")
    (src / "__init__.py").write_text(
        _init_source(monitor["name"], version), encoding="utf-8"
    )
    (src / "_meta.py").write_text(_meta_module(source, monitor), encoding="utf-8")
    for f in PLUGIN_FILES:
        text = (PLUGIN_DIR / f).read_text(encoding="utf-8")
        if f == "control_arena_monitor.py":
            # ControlArena registers monitors by function name: one per plugin.
            text = text.replace("def monsearch_monitor(", f"def {package}(")
        (src / f).write_text(text, encoding="utf-8")
    (vendor / "__init__.py").write_text(
        '"""monsearch modules copied at export time (imports rewritten only)."""\n',
        encoding="utf-8",
    )
    # How numbers are printed: the module monsearch score uses too.
    shutil.copyfile(Path(__file__).with_name("display.py"), src / "_display.py")
    for f in SHIM_FILES:
        shutil.copyfile(PLUGIN_DIR / f, vendor / f)
    for f, text in vendored_sources().items():
        (vendor / f).write_text(text, encoding="utf-8")


# --------------------------------------------------------------------------- verifying

_VERIFY = """
import json, sys
sys.path.insert(0, sys.argv[1])
import {package} as plugin
rows = []
with open(sys.argv[2], "rb") as fh:
    for line in fh:
        rows.append(json.loads(line))
with open(sys.argv[3], "rb") as fh:
    answers = json.load(fh)
judge = None if answers is None else (lambda traj, variant: answers.get(traj.id))
results = plugin.score_many(rows, oracle=judge)
leaked = sorted(m for m in sys.modules if m == "monsearch" or m.startswith("monsearch."))
json.dump({{"scores": [r.score.hex() for r in results],
           "errors": sum(1 for r in results if r.error),
           "status": [r.status for r in results], "leaked": leaked}}, sys.stdout)
"""


def plugin_scores(
    out: Path,
    package: str,
    records: list[dict[str, Any]],
    *,
    hashseed: str = "random",
    env: dict[str, str] | None = None,
    judge_answers: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Score codec records with the plugin in a fresh interpreter (``PYTHONHASHSEED`` set).

    ``judge_answers`` ({trajectory id: answer}) is the host judge the plugin is given,
    as ``oracle=``; without it ``oracle()`` answers None, as in a host with no judge."""
    # The interpreter runs in a temporary folder: every path it is handed is absolute.
    src = Path(out, "src").resolve()
    with tempfile.TemporaryDirectory(prefix="monsearch-export-") as name:
        tmp = Path(name).resolve()
        data = tmp / "val.jsonl"
        with data.open("w", encoding="utf-8") as fh:
            for r in records:
                fh.write(json.dumps(r) + "\n")
        answers = tmp / "judge.json"
        answers.write_text(json.dumps(judge_answers), encoding="utf-8")
        run_env = {**os.environ, "PYTHONHASHSEED": hashseed, **(env or {})}
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                _VERIFY.format(package=package),
                str(src),
                str(data),
                str(answers),
            ],
            capture_output=True,
            text=True,
            env=run_env,
            cwd=tmp,
            check=False,
        )
    if proc.returncode != 0:
        raise ExportError(f"the written plugin failed to score val: {proc.stderr[-2000:]}")
    got = json.loads(proc.stdout)
    got["scores"] = [float.fromhex(x) for x in got["scores"]]
    return got


def run_judge_answers(config: dict[str, Any], trajectories: list[Any]) -> dict[str, float] | None:
    """What ``oracle(traj)`` answered in the run: the corpus's stored judge verdicts
    (the replay backend, as the search and ``monsearch test`` score), or None for a run
    without an oracle."""
    from monsearch.oracle.session import replay_scores_from

    if EvaluationOptions.from_config(config).oracle != "replay":
        return None
    return replay_scores_from(trajectories)


def verify(
    out: Path,
    package: str,
    trajectories: list[Any],
    expected: list[float],
    judge_answers: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Score val with the written plugin and compare with the run's scores, exactly.

    The run's ``oracle()`` answered from the corpus's stored verdicts: the plugin is
    given the same answers as its host judge (``judge_answers``), so trajectories the
    strategy escalates are compared too."""
    from monsearch.corpora.codec import trajectory_to_dict

    records = [trajectory_to_dict(t) for t in trajectories]
    got = plugin_scores(out, package, records, judge_answers=judge_answers)
    differ = [i for i, (a, b) in enumerate(zip(got["scores"], expected, strict=True)) if a != b]
    if got["leaked"]:
        raise ExportError(f"the plugin imported monsearch modules: {got['leaked'][:5]}")
    if differ:
        i = differ[0]
        raise ExportError(
            f"the written plugin gives other scores than the run on {len(differ)} of "
            f"{len(expected)} val trajectories (first: {trajectories[i].id}: plugin "
            f"{got['scores'][i]!r} ({got['status'][i]}), run {expected[i]!r})"
        )
    return {
        "split": "val",
        "n": len(expected),
        "equal": True,
        "pythonhashseed": "random",
        "statuses": sorted(set(got["status"])),
        "judge": "none" if judge_answers is None else "replay of the corpus's stored verdicts",
    }


# --------------------------------------------------------------------------- entry


def default_name(strategy: Strategy) -> str:
    return f"opsec_{strategy.strategy_hash[:10]}"


def check_name(name: str) -> None:
    if not _NAME.match(name):
        raise ExportError(f"--name {name!r}: use lower-case letters, digits and '_'")


def _remove(out: Path, existed: bool) -> None:
    """Take back what the export wrote: the folder, or its contents when it was there
    (empty) before."""
    shutil.rmtree(out, ignore_errors=True)
    if existed:
        with contextlib.suppress(OSError):
            out.mkdir(parents=True, exist_ok=True)


def export(
    run_ref: str,
    out: Path,
    *,
    program_id: str | None = None,
    name: str | None = None,
    runs_dir: Any = None,
    verify_val: bool = True,
    corpus: Path | None = None,
) -> dict[str, Any]:
    """Write the plugin of a run's strategy into ``out``; returns its ``MONITOR`` dict.

    ``corpus``: the run's corpus folder (None: where the run recorded it)."""
    out = Path(out)
    if name is not None:
        check_name(name)
    check_out(out)  # before the run and its corpus are read: a refusal costs nothing
    strategy = load_strategy(run_ref, program_id, runs_dir)
    name = name or default_name(strategy)
    check_name(name)
    package = name if name.startswith("monsearch_") else f"monsearch_{name}"
    val = load_val(strategy.config, corpus)
    monitor = build_metadata(strategy, val, name, package)
    existed = out.exists()
    try:
        write_plugin(out, package, strategy.source, monitor)
    except OSError as exc:  # e.g. the disk filled up: no half-written plugin stays
        _remove(out, existed)
        raise ExportError(f"{out}: cannot write the plugin ({exc.strerror or exc})") from None
    if verify_val:
        try:
            monitor["verified"] = verify(
                out,
                package,
                val,
                strategy.val_scores,
                run_judge_answers(strategy.config, val),
            )
        except BaseException:
            _remove(out, existed)
            raise
        # Record the check in the plugin itself (metadata and README).
        from .readme import render_readme

        (out / "src" / package / "_meta.py").write_text(
            _meta_module(strategy.source, monitor), encoding="utf-8"
        )
        (out / "README.md").write_text(render_readme(monitor), encoding="utf-8")
    return monitor
