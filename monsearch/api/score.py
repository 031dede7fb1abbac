"""Scoring trajectories with a monitor (``monsearch score``), one typed record each.

The monitor is an exported plugin folder (``monsearch export``), or a run, whose
selected strategy is exported to a temporary folder first: either way the scores
come from the plugin code, so they are the ones users of the plugin get. A run's
plugin is built from its verified frozen source with monsearch's own files; nothing
in a run folder is ever imported (a folder with a ``config.json`` is a run).

    for r in monsearch.score("monitor-dir", ["examples/trajectories"]):
        print(r.input, r.score, r.decision)

:func:`score` returns every record at once; :func:`scoring` opens the monitor once and
yields the records as the inputs are read (the command line prints each as it comes).
An input that cannot be read is a record too (``status`` ``unreadable``, ``error`` says
why), so one bad file never stops the others.
"""

from __future__ import annotations

import importlib
import json
import math
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from monsearch.corpora.errors import InputError
from monsearch.errors import MonsearchError

from .score_inputs import error_text, expand_inputs, read_documents, read_stdin

#: Largest document read by default (a file, a JSONL line, stdin's document), in MB:
#: past it a trajectory is refused unread. Every trajectory up to this size scores in
#: about a second with its findings, in a few hundred MB (bench/hostile_inputs.py).
MAX_MB = 10
#: Findings kept per trajectory by default.
TOP = 3
#: The status of an input that could not be read as a trajectory.
UNREADABLE = "unreadable"


@dataclass(frozen=True)
class TrajectoryScore:
    """One trajectory's score, or why an input could not be scored.

    ``status`` is the plugin's: ``ok`` when the program returned a score, else why not
    (``error``, ``timeout``, ``memory``: ``score`` is then the run's fallback and
    ``decision`` repeats the status); :data:`UNREADABLE` when the input was not read
    (``error`` says why; nothing else is set). ``decision`` is ``audit``, ``tie`` or
    ``pass`` at ``budget`` (the share of benign runs audited), against ``threshold``,
    the val benign score that flags that share. ``findings`` are the plugin's steps that
    raised the score most (JSON-ready dicts, ``delta`` rounded); ``findings_partial``
    says how much of a run too long to search every prefix they cover; ``escalate``
    whether the score is in the monitor's judge band (monitors that have one).
    """

    input: str
    trajectory_id: str | None = None
    score: float | None = None
    status: str = UNREADABLE
    decision: str | None = None
    budget: float | None = None
    threshold: float | None = None
    findings: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    findings_partial: dict[str, Any] | None = None
    escalate: bool | None = None

    @property
    def readable(self) -> bool:
        return self.status != UNREADABLE

    def to_dict(self) -> dict[str, Any]:
        """The record as ``monsearch score --json`` prints it (keys in this order;
        optional ones only when set)."""
        if not self.readable:
            return {"input": self.input, "error": self.error}
        out: dict[str, Any] = {
            "input": self.input,
            "trajectory_id": self.trajectory_id,
            "score": self.score,
            "status": self.status,
            "decision": self.decision,
            "budget": self.budget,
            "threshold": self.threshold,
            "findings": self.findings,
        }
        if self.findings_partial is not None:
            out["findings_partial"] = self.findings_partial
        if self.escalate is not None:
            out["escalate"] = self.escalate
        if self.error:
            out["error"] = self.error
        return out


def _plugin_package(folder: Path) -> str | None:
    found = sorted(p.parent.name for p in (folder / "src").glob("*/_meta.py"))
    return found[0] if found else None


def load_monitor(ref: str | Path, runs_dir: str | Path | None, keep: list[Any]) -> Any:
    """The plugin module for ``ref``: a plugin folder, else a run (exported on the fly
    into a temporary folder appended to ``keep``, for the caller to clean up)."""
    from monsearch.search.runs import CONFIG_FILE

    ref = str(ref)
    folder = Path(ref)
    is_run = (folder / CONFIG_FILE).is_file()  # never imported from, whatever it holds
    package = _plugin_package(folder) if folder.is_dir() and not is_run else None
    if package is None:
        from monsearch.search.runs import RunError

        # Not monsearch.export: its errors would name its keywords, which are not score's.
        from .export import export_plugin

        tmp = tempfile.TemporaryDirectory(prefix="monsearch-score-")
        keep.append(tmp)
        try:
            monitor = export_plugin(
                ref, Path(tmp.name) / "plugin", runs_dir=runs_dir, verify=False
            )
        except RunError as exc:
            raise MonsearchError(
                f"--monitor {ref!r}: neither an exported plugin folder (with src/<package>/) "
                f"nor a run ({exc})"
            ) from None
        folder, package = Path(tmp.name) / "plugin", monitor.package
    src = str((folder / "src").resolve())
    if src not in sys.path:
        sys.path.insert(0, src)
    return importlib.import_module(package)


class Scoring:
    """A monitor opened for scoring: iterate for one :class:`TrajectoryScore` per
    trajectory of the inputs, in order. Close it (or use it as a context manager) to
    stop the plugin's worker process and remove a run's temporary plugin."""

    def __init__(
        self,
        monitor: str | Path,
        inputs: Iterable[str | Path],
        *,
        budget: float | None = None,
        top: int = TOP,
        max_mb: float = MAX_MB,
        runs_dir: str | Path | None = None,
        stdin: BinaryIO | None = None,
    ) -> None:
        if budget is not None and not 0.0 <= budget <= 1.0:
            raise ValueError(f"budget must be in [0, 1], got {budget!r}")
        if top < 0:
            raise ValueError(f"top must be 0 or more, got {top!r}")
        if not (max_mb > 0 and math.isfinite(max_mb)):
            raise ValueError(f"max_mb must be a positive number, got {max_mb!r}")
        self.inputs = tuple(str(i) for i in inputs)
        self.budget, self.top = budget, top
        self.max_bytes = int(max_mb * 1024 * 1024)
        self.stdin = stdin
        self._keep: list[Any] = []
        self._plugin: Any = None
        try:
            self._plugin = load_monitor(monitor, runs_dir, self._keep)
        except BaseException:
            self.close()
            raise
        #: The plugin's ``MONITOR`` metadata (name, strategy hash, thresholds...).
        self.monitor: dict[str, Any] = self._plugin.MONITOR

    def __enter__(self) -> Scoring:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        plugin, self._plugin = self._plugin, None
        try:
            if plugin is not None and hasattr(plugin, "close"):
                plugin.close()  # its worker process, before its folder may go
        finally:
            keep, self._keep = self._keep, []
            for tmp in keep:
                tmp.cleanup()

    def __iter__(self) -> Iterator[TrajectoryScore]:
        if self._plugin is None:
            raise MonsearchError("this scoring is closed")
        plugin = self._plugin
        for label, traj in self._trajectories(plugin):
            if isinstance(traj, str):
                yield TrajectoryScore(input=label, error=traj)
            else:
                yield _scored(plugin, label, traj, self.budget, self.top)

    def _trajectories(self, plugin: Any) -> Iterator[tuple[str, Any]]:
        """``(name, trajectory or why it could not be read)`` for every input, in order."""
        for name, path, problem in expand_inputs(self.inputs):
            if problem is not None:
                yield name, problem
                continue
            documents = (
                read_stdin(max_bytes=self.max_bytes, stream=self.stdin)
                if path is None
                else read_documents(path, name, max_bytes=self.max_bytes)
            )
            for label, doc in documents:
                if isinstance(doc, InputError):
                    yield label, error_text(doc)
                    continue
                try:
                    # A dict is read as it is; any other JSON value goes back as JSON
                    # text (as a plain str it would be taken for a path), for the plugin
                    # to refuse.
                    loaded = plugin.load(
                        doc if isinstance(doc, dict) else json.dumps(doc).encode()
                    )
                except plugin.InputError as err:
                    yield label, error_text(err, doc)
                    continue
                yield label, loaded


def _scored(plugin: Any, label: str, traj: Any, budget: float | None, top: int) -> TrajectoryScore:
    from monsearch.export.display import finding_steps

    if top:
        # findings() scores the whole trajectory first, with a fresh program instance as
        # evaluate() does: its score and status are evaluate's, and the view is built
        # once, not twice.
        found = plugin.findings(traj, top=top)
        score, error, status = found["score"], found["error"], found.get("status", "ok")
    else:
        result = plugin.evaluate(traj)
        found, score, error = {"steps": []}, result.score, result.error
        status = getattr(result, "status", "ok")  # plugins from before statuses: always ok
    decision = plugin.decide(score, budget)
    # A program that did not finish has no decision: its status stands instead, with no
    # findings.
    if status != "ok":
        decision = {"decision": status, "budget": decision["budget"]}
        found = {"steps": []}
    return TrajectoryScore(
        input=label,
        trajectory_id=traj.id,
        score=score,
        status=status,
        decision=decision["decision"],
        budget=decision["budget"],
        threshold=decision.get("tau"),
        findings=finding_steps(found["steps"]),
        error=error or None,
        # a long run: not every prefix was scored (plugin.findings)
        findings_partial=_partial(found["partial"]) if "partial" in found else None,
        escalate=decision.get("escalate"),
    )


def _partial(partial: dict[str, Any]) -> dict[str, Any]:
    from monsearch.export.display import rounded

    out = dict(partial)
    out["stretches"] = [{**s, "rise": rounded(s["rise"])} for s in partial.get("stretches", [])]
    return out


def scoring(
    monitor: str | Path,
    inputs: Iterable[str | Path],
    *,
    budget: float | None = None,
    top: int = TOP,
    max_mb: float = MAX_MB,
    runs_dir: str | Path | None = None,
    stdin: BinaryIO | None = None,
) -> Scoring:
    """Open ``monitor`` (a plugin folder, or a run id or folder) to score ``inputs``
    (files, folders, globs; ``-`` reads ``stdin``, default the process's) lazily: see
    :class:`Scoring`. Raises :class:`~monsearch.errors.MonsearchError` when the monitor
    is neither a plugin nor a run."""
    return Scoring(
        monitor, inputs, budget=budget, top=top, max_mb=max_mb, runs_dir=runs_dir, stdin=stdin
    )


def score(
    monitor: str | Path,
    inputs: Iterable[str | Path],
    *,
    budget: float | None = None,
    top: int = TOP,
    max_mb: float = MAX_MB,
    runs_dir: str | Path | None = None,
    stdin: BinaryIO | None = None,
) -> list[TrajectoryScore]:
    """Score every trajectory of ``inputs`` with ``monitor``: one record per trajectory,
    in input order, unreadable inputs included (see :class:`TrajectoryScore`).

    ``budget`` is the audit budget of the decision (default: the monitor's), ``top``
    the findings kept per trajectory (0: none, and no prefix scoring), ``max_mb`` the
    largest document read. The monitor's worker process is stopped before returning."""
    with scoring(
        monitor, inputs, budget=budget, top=top, max_mb=max_mb, runs_dir=runs_dir, stdin=stdin
    ) as s:
        return list(s)
