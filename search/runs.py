"""Run folders: where a run lives on disk and how commands find it.

Layout of ``runs/<run-id>/`` (the default root is ``./runs``; ``MONSEARCH_RUNS`` or
``--runs-dir`` move it)::

    config.json       the resolved configuration (search.config.EvolveConfig.to_dict())
    lineage.sqlite    every candidate ever evaluated (search.lineage.LineageStore), linked
                      in a hash chain with every freezing of the selected strategy
    selected.json     the frozen selected strategy (SelectedStrategy.to_dict()): a copy
                      of the last freezing in the chain
    selected.py       its source, byte for byte what strategy_hash covers
    test/NNN/         the report of the sealed test's NNN-th opening (monsearch test)
    report.html       monsearch report
    .monsearch.lock   held by the one evolve writing the run (never two at once)

A run is referred to by its id (a folder under the root) or by a path to its folder.
Commands that act on the frozen strategy read the run through
:func:`.frozen.verify_run`, never these files as found; :meth:`Run.selected` is for
commands that only show a run.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from monsearch.errors import MonsearchError
from monsearch.files import atomic_write, exclusive_lock

from .lineage import LineageStore, source_hash

CONFIG_FILE = "config.json"
LINEAGE_FILE = "lineage.sqlite"
SELECTED_FILE = "selected.json"
SELECTED_SOURCE = "selected.py"
RUN_LOCK = ".monsearch.lock"

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class RunError(MonsearchError):
    """No such run, or a run folder that cannot be read."""


def runs_root(root: str | Path | None = None) -> Path:
    """The folder runs live in: ``root``, else ``$MONSEARCH_RUNS``, else ``./runs``."""
    if root is not None:
        return Path(root)
    env = os.environ.get("MONSEARCH_RUNS")
    return Path(env) if env else Path("runs")


def check_run_id(run_id: str) -> str:
    if not _RUN_ID.match(run_id):
        raise RunError(
            f"run id {run_id!r}: use letters, digits, '.', '_' or '-' (at most 100 characters)"
        )
    return run_id


@dataclass(frozen=True)
class CorpusRef:
    """The corpus a run searched on, as ``config.json`` records it (``corpus``) and its
    frozen strategy copies it: where it was, or the seed and size of the generated
    default corpus, and its identity (content and split-assignment hashes).

    The one reading of that record: resuming, the sealed test, the export and the
    integrity check compare a corpus with a run through :meth:`differs`.
    """

    path: str | None = None
    #: ``{"seed": ..., "size": ...}`` when the run used the generated default corpus.
    default: dict[str, Any] | None = None
    #: The folder ``path`` resolved to when the run started (it may be relative).
    resolved_path: str | None = None
    name: str | None = None
    content_hash: str | None = None
    assignment_hash: str | None = None
    #: The split names the run read as train and val.
    splits: dict[str, str] = field(default_factory=dict)
    sealed_splits: list[str] = field(default_factory=list)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> CorpusRef:
        """The record in a run's configuration (a run from before ``corpus.default``
        kept it at the top level, as ``corpus_default``)."""
        ref = cls.from_dict(config.get("corpus"))
        if not ref.default and not ref.path and isinstance(config.get("corpus_default"), dict):
            return replace(ref, default=dict(config["corpus_default"]))
        return ref

    @classmethod
    def from_dict(cls, d: Any) -> CorpusRef:
        d = d if isinstance(d, dict) else {}
        return cls(
            path=d.get("path") or None,
            default=d.get("default") if isinstance(d.get("default"), dict) else None,
            resolved_path=d.get("resolved_path") or None,
            name=d.get("name"),
            content_hash=d.get("content_hash"),
            assignment_hash=d.get("assignment_hash"),
            splits=dict(d.get("splits") or {}),
            sealed_splits=list(d.get("sealed_splits") or []),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def split(self, role: str) -> str:
        """The name of the split the run read as ``role`` (``train``, ``val``)."""
        return self.splits.get(role, role)

    def differs(self, content_hash: Any, assignment_hash: Any = None, *,
                strict: bool = False) -> list[str]:
        """The identity keys (``content_hash``, ``assignment_hash``) on which a corpus
        differs from this record. Only keys this record holds are compared, unless
        ``strict`` (then a key missing on one side only differs too)."""
        found = {"content_hash": content_hash, "assignment_hash": assignment_hash}
        return [
            key
            for key, theirs in found.items()
            if (strict or getattr(self, key)) and getattr(self, key) != theirs
        ]


@dataclass(frozen=True)
class SelectedStrategy:
    """The frozen strategy of a run: chosen by the bootstrap lower bound on ``val``.

    ``fitness_json`` is the candidate's ``Fitness.to_dict()`` on val (with
    ``fitness_low``); ``evaluation`` the options every later evaluation must reuse
    (budget range, oracle caps); ``corpus`` identifies the corpus the run used.
    """

    run_id: str
    id: str
    source: str
    strategy_hash: str
    fitness: float
    fitness_low: float | None
    fitness_json: dict[str, Any]
    corpus: dict[str, Any]
    evaluation: dict[str, Any]
    selection: dict[str, Any] = field(default_factory=dict)

    @property
    def hash(self) -> str:
        """The sha256 of the frozen source (``selected.py``): the strategy's identity."""
        return self.strategy_hash

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SelectedStrategy:
        sel = cls(**d)
        if source_hash(sel.source) != sel.strategy_hash:
            raise RunError(
                f"selected strategy {sel.id} of run {sel.run_id}: its source does not match "
                "its hash (the file was edited after the run froze it)"
            )
        return sel


@dataclass(frozen=True)
class Run:
    """One run folder."""

    dir: Path

    @property
    def id(self) -> str:
        return self.dir.name

    @property
    def lineage_path(self) -> Path:
        return self.dir / LINEAGE_FILE

    def config(self) -> dict[str, Any]:
        return _read_json(self.dir / CONFIG_FILE, "run configuration")

    def corpus(self) -> CorpusRef:
        """The corpus record of ``config.json`` (:class:`CorpusRef`)."""
        return CorpusRef.from_config(self.config())

    def store(self, *, readonly: bool = True) -> LineageStore:
        return LineageStore(self.lineage_path, readonly=readonly)

    def selected(self) -> SelectedStrategy | None:
        path = self.dir / SELECTED_FILE
        if not path.exists():
            return None
        return SelectedStrategy.from_dict(_read_json(path, "selected strategy"))

    def write_selected_files(self, selected: SelectedStrategy) -> None:
        """The derived copies of a freezing (only :func:`.frozen.freeze` calls this)."""
        atomic_write(self.dir / SELECTED_SOURCE, selected.source, durable=True)
        atomic_write(
            self.dir / SELECTED_FILE, json.dumps(selected.to_dict(), indent=2) + "\n", durable=True
        )

    def write_config(self, config: dict[str, Any]) -> None:
        atomic_write(
            self.dir / CONFIG_FILE, json.dumps(config, indent=2, sort_keys=True) + "\n", durable=True
        )


def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunError(f"{path}: no {what} (not a run folder, or the run never started)") from None
    except (OSError, ValueError) as exc:
        raise RunError(f"{path}: unreadable {what} ({exc})") from None
    if not isinstance(data, dict):
        raise RunError(f"{path}: {what} is not a JSON object")
    return data


def resolve_run(ref: str, root: str | Path | None = None) -> Run:
    """The run named ``ref``: a run id under the root, or a path to a run folder."""
    base = runs_root(root)
    candidates = [base / ref] if _RUN_ID.match(ref) else []
    candidates.append(Path(ref))
    for path in candidates:
        if (path / CONFIG_FILE).is_file():
            return Run(path)
    known = ", ".join(r.id for r in list_runs(base)[-5:]) or "none"
    raise RunError(f"no run {ref!r} (looked in {base}/; recent runs: {known})")


def list_runs(root: str | Path | None = None) -> list[Run]:
    """Run folders under the root, oldest first (by folder name, which starts with a date)."""
    base = runs_root(root)
    if not base.is_dir():
        return []
    return [Run(p) for p in sorted(base.iterdir()) if (p / CONFIG_FILE).is_file()]


def enclosing_run(path: str | Path) -> Path | None:
    """The run folder ``path`` is, or lies inside (one holding ``config.json`` and
    ``lineage.sqlite``), if any: runs are never written inside another run."""
    start = Path(path).expanduser().absolute()
    for folder in (start, *start.parents):
        with contextlib.suppress(OSError):
            if (folder / CONFIG_FILE).is_file() and (folder / LINEAGE_FILE).is_file():
                return folder
    return None


def holds_anything(folder: Path) -> bool:
    """Whether ``folder`` holds anything but the run lock."""
    return folder.is_dir() and any(p.name != RUN_LOCK for p in folder.iterdir())


def hold_run(run: Run, held: contextlib.ExitStack) -> None:
    """Take the run's lock for as long as ``held`` lasts: one process writes a run at a
    time. :class:`RunError` at once when another holds it (no waiting: the other is a
    whole search). The kernel drops the lock when its holder dies, however it dies."""
    try:
        held.enter_context(exclusive_lock(run.dir / RUN_LOCK, wait=False))
    except BlockingIOError:
        raise RunError(
            f"run {run.id!r} is in use: another monsearch process is writing it "
            f"({run.dir}); wait for it to end, or pick another --run-id"
        ) from None
    except OSError as exc:
        raise RunError(f"{run.dir}: cannot lock the run folder: {exc.strerror or exc}") from None
