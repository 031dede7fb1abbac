"""What ``monsearch.test`` and ``monsearch.export`` return: typed, documented records.

Each keeps the whole document it was read from (``to_dict()``: the sealed test's
``report.json``, the plugin's ``MONITOR`` metadata), so nothing is lost to the typed
fields, and the command line's files and JSON stay what they were.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def install_target(folder: Path) -> str:
    """``folder`` as ``pip install`` takes it: pip reads a bare name such as
    ``monitor-r1`` as a package to download, so a relative folder is written ``./monitor-r1``."""
    text = str(folder)
    if not folder.is_absolute() and not text.startswith("."):
        text = f"./{text}"
    return shlex.quote(text)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


@dataclass(frozen=True)
class SealedCorpusFigures:
    """One sealed corpus of a sealed test: the row ``monsearch test`` prints.

    ``corpus``: ``test`` or a cross-generator corpus (``xgen-*``); ``status``: ``ok``,
    or why the strategy did not score it (the figures are then None). Budget-AUCs are
    means over failure dimensions, panel labels: ``val_bauc`` on val,
    ``transferred_bauc`` with val's thresholds applied unchanged (``flag_rate``: the
    benign share they flag here at the nominal ``flag_budget``),
    ``recalibrated_bauc`` with thresholds set on this corpus's own benign runs
    (``true_recalibrated_bauc``: the same on true labels, where the corpus has them);
    ``loss_*``: val minus that figure.
    """

    corpus: str
    n: int
    status: str
    n_benign: int | None = None
    n_failures: int | None = None
    val_bauc: float | None = None
    transferred_bauc: float | None = None
    flag_budget: float | None = None
    flag_rate: float | None = None
    recalibrated_bauc: float | None = None
    true_recalibrated_bauc: float | None = None
    loss_transferred: float | None = None
    loss_recalibrated: float | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> SealedCorpusFigures:
        """From a row of the report's ``summary``."""
        numbers = (
            "val_bauc", "transferred_bauc", "flag_budget", "flag_rate", "recalibrated_bauc",
            "true_recalibrated_bauc", "loss_transferred", "loss_recalibrated",
        )  # fmt: skip
        counts = ("n_benign", "n_failures")
        return cls(
            corpus=str(row["corpus"]),
            n=int(row.get("n") or 0),
            status=str(row.get("status", "ok")),
            **{k: _float(row.get(k)) for k in numbers},
            **{k: None if row.get(k) is None else int(row[k]) for k in counts},
        )


@dataclass(frozen=True)
class SealedTestReport:
    """The sealed one-time test of a run's frozen strategy (:func:`monsearch.test`).

    ``opening``: which opening of the run's sealed test this is (1 for the first);
    ``reopened``: the ledger had seen this program, or this run, opened before
    (``reasons`` say how): its figures are no longer an unseen test.
    ``val_scores_reproduced``: the strategy's val scores equal those the run recorded
    (None: nothing to compare). ``corpora``: one :class:`SealedCorpusFigures` per
    sealed corpus. ``to_dict()``: the whole report, as ``report.json`` and
    ``monsearch test --json`` hold it (per dimension and task, shifted base rates,
    escalation curves, notes).
    """

    run_id: str
    strategy_id: str
    strategy_hash: str
    corpus: str
    opening: int
    reopened: bool
    reasons: tuple[str, ...]
    val_scores_reproduced: bool | None
    corpora: tuple[SealedCorpusFigures, ...]
    report: dict[str, Any] = field(repr=False)

    @classmethod
    def from_report(cls, report: dict[str, Any]) -> SealedTestReport:
        """From the report document (``report.json``)."""
        strategy = report.get("strategy") or {}
        ledger = report.get("ledger") or {}
        return cls(
            run_id=str(report["run_id"]),
            strategy_id=str(strategy.get("id")),
            strategy_hash=str(strategy.get("strategy_hash")),
            corpus=str((report.get("corpus") or {}).get("name")),
            opening=int(ledger.get("run_opening") or 1),
            reopened=bool(report.get("reopened")),
            reasons=tuple(str(r) for r in ledger.get("reasons") or ()),
            val_scores_reproduced=report.get("val_scores_reproduced"),
            corpora=tuple(SealedCorpusFigures.from_row(r) for r in report.get("summary") or ()),
            report=report,
        )

    def to_dict(self) -> dict[str, Any]:
        """The report document, as ``report.json`` holds it."""
        return self.report

    def write(self, folder: str | Path) -> dict[str, Path]:
        """Write the report's files into ``folder`` (report.json, report.md, report.html
        and the PNG plots, as ``monsearch test --out`` does); returns them by kind."""
        from monsearch.eval.report import write_report

        return write_report(self.report, Path(folder))


@dataclass(frozen=True)
class ExportedMonitor:
    """A monitor plugin written by :func:`monsearch.export`.

    ``folder``: where the package was written (``pip install`` it: ``install``);
    ``package``: its import name (``monsearch_<name>``), ``name`` the monitor's name;
    ``run_id``, ``program_id``, ``strategy_hash``: what it runs (``selected``: the
    run's frozen strategy, not a candidate named by ``program=``); ``thresholds``:
    ``{audit budget: {"tau", "g"}}`` set on val's benign scores; ``escalation_band``:
    the score band to send to a judge panel (fitted on val), or None;
    ``verified``: how the written plugin reproduced every val score (None when
    ``verify=False``). ``to_dict()``: the plugin's whole ``MONITOR`` metadata.
    """

    folder: Path
    name: str
    package: str
    run_id: str
    program_id: str
    strategy_hash: str
    selected: bool
    thresholds: dict[str, dict[str, float]]
    escalation_band: dict[str, Any] | None
    verified: dict[str, Any] | None
    monitor: dict[str, Any] = field(repr=False)

    @classmethod
    def from_metadata(cls, folder: str | Path, monitor: dict[str, Any]) -> ExportedMonitor:
        """From the plugin's ``MONITOR`` metadata and the folder it was written to."""
        return cls(
            folder=Path(folder),
            name=str(monitor["name"]),
            package=str(monitor["package"]),
            run_id=str(monitor["run_id"]),
            program_id=str(monitor["program_id"]),
            strategy_hash=str(monitor["strategy_hash"]),
            selected=bool(monitor.get("selected")),
            thresholds=dict(monitor.get("thresholds") or {}),
            escalation_band=monitor.get("escalation_band"),
            verified=monitor.get("verified"),
            monitor=monitor,
        )

    @property
    def install(self) -> str:
        """The command that installs the plugin."""
        return f"pip install {install_target(self.folder)}"

    def to_dict(self) -> dict[str, Any]:
        """The plugin's ``MONITOR`` metadata (what its ``_meta.py`` holds)."""
        return self.monitor
