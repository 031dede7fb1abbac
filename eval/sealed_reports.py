"""Where sealed-test reports live in a run folder: one folder per opening, never replaced.

``RUN/test/NNN/`` holds the report of the run's NNN-th opening (``report.json`` at
least; the HTML, Markdown and plots too unless ``--out`` sent them elsewhere). A
folder is created exclusively: a report of an earlier opening is never overwritten,
whatever the ledger says. The reports found there are evidence of earlier openings:
the ledger marks the next one re-opened when they outnumber its own record
(:meth:`.sealed_ledger.Ledger.record`). Runs made before this layout kept one report
at ``RUN/test/report.json``; it counts as an earlier opening.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from monsearch.errors import MonsearchError

REPORTS_DIR = "test"
REPORT_FILE = "report.json"


def _numbered(root: Path) -> list[tuple[int, Path]]:
    if not root.is_dir():
        return []
    out = []
    for child in root.iterdir():
        if child.name.isdigit() and (child / REPORT_FILE).is_file():
            out.append((int(child.name), child / REPORT_FILE))
    return sorted(out)


def earlier_reports(run_dir: Path) -> list[Path]:
    """Every sealed-test report in the run folder, oldest opening first."""
    root = Path(run_dir) / REPORTS_DIR
    legacy = [root / REPORT_FILE] if (root / REPORT_FILE).is_file() else []
    return legacy + [p for _, p in _numbered(root)]


def new_report_folder(run_dir: Path, opening: int) -> Path:
    """A new, empty ``RUN/test/NNN/`` (``NNN`` = ``opening``, or the next free number)."""
    root = Path(run_dir) / REPORTS_DIR
    root.mkdir(parents=True, exist_ok=True)
    n = max(1, opening)
    while True:
        folder = root / f"{n:03d}"
        try:
            os.mkdir(folder)  # exclusive: two openings never share a folder
        except FileExistsError:
            n += 1
            continue
        return folder


def latest_report(run_dir: Path, strategy_hash: str) -> dict[str, Any] | None:
    """The newest sealed-test report of the program ``strategy_hash`` in the run folder."""
    found = None
    for path in earlier_reports(run_dir):
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise MonsearchError(f"{path}: unreadable sealed-test report ({exc})") from None
        strategy = report.get("strategy") if isinstance(report, dict) else None
        if isinstance(strategy, dict) and strategy.get("strategy_hash") == strategy_hash:
            found = report
    return found
