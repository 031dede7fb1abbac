"""``monsearch score --monitor DIR|RUN FILE_OR_DIR...``: score trajectories with a monitor.

The monitor is an exported plugin folder (``monsearch export``), or a run, whose
selected strategy is exported to a temporary folder first: either way the scores
come from the plugin code, so they are the ones users of the plugin get.
"""

from __future__ import annotations

import glob
import importlib
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from monsearch.commands.consoles import stdout_console
from monsearch.errors import MonsearchError

#: File name of a trajectory in a StealthBench results tree (its other JSON files are
#: verdicts and metadata, not trajectories).
STEALTHBENCH_FILE = "trajectory.atif.json"
EXIT_UNREADABLE = 1


def _plugin_package(folder: Path) -> str | None:
    found = sorted(p.parent.name for p in (folder / "src").glob("*/_meta.py"))
    return found[0] if found else None


def load_monitor(ref: str, runs_dir: Path | None, keep: list[Any]) -> Any:
    """The plugin module for ``ref``: a plugin folder, else a run (exported on the fly)."""
    folder = Path(ref)
    package = _plugin_package(folder) if folder.is_dir() else None
    if package is None:
        from monsearch.search.runs import RunError
        from monsearch.strategies.export import export

        tmp = tempfile.TemporaryDirectory(prefix="monsearch-score-")
        keep.append(tmp)
        try:
            monitor = export(ref, Path(tmp.name) / "plugin", runs_dir=runs_dir, verify_val=False)
        except RunError as exc:
            raise MonsearchError(
                f"--monitor {ref!r}: neither an exported plugin folder (with src/<package>/) "
                f"nor a run ({exc})"
            ) from None
        folder, package = Path(tmp.name) / "plugin", monitor["package"]
    src = str((folder / "src").resolve())
    if src not in sys.path:
        sys.path.insert(0, src)
    return importlib.import_module(package)


def _is_glob(text: str) -> bool:
    return any(c in text for c in "*?[")


def expand_inputs(args: tuple[str, ...]) -> Iterator[tuple[str, Path | None, str | None]]:
    """``(name, path or None for stdin, error)`` for every input named on the command line."""
    for arg in args:
        if arg == "-":
            yield "-", None, None
            continue
        path = Path(arg)
        if not path.exists() and _is_glob(arg):
            matches = sorted(glob.glob(arg, recursive=True))
            if not matches:
                yield arg, None, "no file matches this pattern"
            for m in matches:
                yield from expand_inputs((m,))
            continue
        if path.is_dir():
            sb = sorted(path.rglob(STEALTHBENCH_FILE))
            files = sb or sorted(
                p for p in path.rglob("*") if p.suffix in (".json", ".jsonl") and p.is_file()
            )
            if not files:
                yield arg, None, "no .json or .jsonl files in this folder"
            for f in files:
                yield str(f), f, None
            continue
        if not path.is_file():
            yield arg, None, "no such file"
            continue
        yield arg, path, None


def _read_stdin(plugin: Any) -> Iterator[tuple[str, Any]]:
    data = sys.stdin.buffer.read()
    try:
        yield "-", plugin.load(data)
        return
    except plugin.InputError as err:
        first = err
    lines = [ln for ln in data.splitlines() if ln.strip()]
    if len(lines) < 2:
        yield "-", first
        return
    for i, line in enumerate(lines, 1):
        try:
            yield f"-:{i}", plugin.load(line)
        except plugin.InputError as err:
            yield f"-:{i}", err


def _finding_text(f: dict[str, Any]) -> str:
    ev = f["evidence"][0]["what"] if f["evidence"] else f["tool"]
    return f"step {f['index']} +{f['delta']:.3g}: {ev}"


@click.command("score")
@click.option(
    "--monitor",
    "monitor_ref",
    required=True,
    help="An exported plugin folder, or a run (id or folder) whose selected strategy is used.",
)
@click.argument("inputs", nargs=-1, required=True)
@click.option(
    "--budget",
    type=click.FloatRange(0.0, 1.0),
    default=None,
    help="Audit budget for the decision (fraction of benign runs audited). "
    "[default: the monitor's, 0.05]",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per trajectory on stdout.")
@click.option(
    "--top",
    type=click.IntRange(0, 50),
    default=3,
    show_default=True,
    help="Findings shown per trajectory.",
)
@click.option(
    "--runs-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    envvar="MONSEARCH_RUNS",
    help="Where runs live [default: ./runs; env MONSEARCH_RUNS].",
)
def score(
    monitor_ref: str,
    inputs: tuple[str, ...],
    budget: float | None,
    as_json: bool,
    top: int,
    runs_dir: Path | None,
) -> None:
    """Score trajectories (files, folders, globs, - for stdin) with a monitor.

    One result per trajectory: the score, the decision at the audit budget
    (audit / tie / pass, from the val benign thresholds) and the top findings.
    Inputs that cannot be read are reported by name and skipped; the exit code
    is 1 when any were, 0 otherwise.
    """
    from monsearch.strategies.export.display import finding_steps

    keep: list[Any] = []
    plugin = None
    try:
        plugin = load_monitor(monitor_ref, runs_dir, keep)
        out = stdout_console()
        unreadable = 0
        rows = []
        for name, path, problem in expand_inputs(inputs):
            if problem is not None:
                items: Any = [(name, problem)]
            elif path is None:
                items = _read_stdin(plugin)
            else:
                items = plugin.iter_trajectories(path)
            for label, traj in items:
                if isinstance(traj, (str, plugin.InputError)):
                    unreadable += 1
                    message = str(traj)
                    # Plain echo: one line per input, never wrapped (scripts grep it).
                    click.echo(f"skipped {label}: {message}", err=True)
                    if as_json:
                        click.echo(json.dumps({"input": label, "error": message}))
                    continue
                result = plugin.evaluate(traj)
                decision = plugin.decide(result.score, budget)
                # A program that did not finish (plugins from before statuses: always ok)
                # has no decision: its status stands instead, with no findings.
                status = getattr(result, "status", "ok")
                if status != "ok":
                    decision = {"decision": status, "budget": decision["budget"]}
                found = (
                    finding_steps(plugin.findings(traj, top=top)["steps"])
                    if top and status == "ok"
                    else []
                )
                record = {
                    "input": label,
                    "trajectory_id": traj.id,
                    "score": result.score,
                    "status": status,
                    "decision": decision["decision"],
                    "budget": decision["budget"],
                    "threshold": decision.get("tau"),
                    "findings": found,
                }
                if "escalate" in decision:
                    record["escalate"] = decision["escalate"]
                if result.error:
                    record["error"] = result.error
                if as_json:
                    click.echo(json.dumps(record))
                else:
                    rows.append(record)
        if not as_json:
            _print_table(out, rows, plugin.MONITOR)
    finally:
        if hasattr(plugin, "close"):
            plugin.close()  # its worker process, before its folder may go
        for tmp in keep:
            tmp.cleanup()
    if unreadable:
        click.echo(f"{unreadable} input(s) could not be read", err=True)
        sys.exit(EXIT_UNREADABLE)


def _print_table(console: Any, rows: list[dict[str, Any]], monitor: dict[str, Any]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from monsearch.strategies.export.display import percent

    table = Table(title=f"monitor {monitor['name']} ({monitor['strategy_hash'][:12]})")
    table.add_column("trajectory")
    table.add_column("score", justify="right")
    table.add_column("decision")
    table.add_column("top findings")
    for r in rows:
        decision = r["decision"] + (" (escalate)" if r.get("escalate") else "")
        if r.get("error"):
            decision += " [program did not finish: fallback score]"
        table.add_row(
            escape(r["input"]),
            f"{r['score']:.4g}",
            f"{escape(decision)} @ {percent(r['budget'])}",  # [..] is not markup
            escape("\n".join(_finding_text(f) for f in r["findings"]) or "-"),
        )
    console.print(table)
