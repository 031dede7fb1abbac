"""``monsearch score --monitor DIR|RUN FILE_OR_DIR...``: score trajectories with a monitor.

The monitor is an exported plugin folder (``monsearch export``), or a run, whose
selected strategy is exported to a temporary folder first: either way the scores
come from the plugin code, so they are the ones users of the plugin get. A run's
plugin is built from its verified frozen source with monsearch's own files; nothing
in a run folder is ever imported (a folder with a ``config.json`` is a run).
"""

from __future__ import annotations

import importlib
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from monsearch.commands.consoles import Row, fitted_table, print_note, stdout_console
from monsearch.commands.printable import printable
from monsearch.commands.score_inputs import (
    error_text,
    expand_inputs,
    read_documents,
    read_stdin,
)
from monsearch.corpora.errors import InputError
from monsearch.errors import MonsearchError

EXIT_UNREADABLE = 1
#: Largest document ``score`` reads by default (a file, a JSONL line, stdin's document):
#: past it a trajectory is refused unread. Every trajectory up to this size scores in
#: about a second with its findings, in a few hundred MB (bench/hostile_inputs.py).
MAX_MB = 10


def _plugin_package(folder: Path) -> str | None:
    found = sorted(p.parent.name for p in (folder / "src").glob("*/_meta.py"))
    return found[0] if found else None


def load_monitor(ref: str, runs_dir: Path | None, keep: list[Any]) -> Any:
    """The plugin module for ``ref``: a plugin folder, else a run (exported on the fly)."""
    from monsearch.search.runs import CONFIG_FILE

    folder = Path(ref)
    is_run = (folder / CONFIG_FILE).is_file()  # never imported from, whatever it holds
    package = _plugin_package(folder) if folder.is_dir() and not is_run else None
    if package is None:
        from monsearch.api.export import export
        from monsearch.search.runs import RunError

        tmp = tempfile.TemporaryDirectory(prefix="monsearch-score-")
        keep.append(tmp)
        try:
            monitor = export(ref, Path(tmp.name) / "plugin", runs_dir=runs_dir, verify=False)
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
    "--max-mb",
    type=click.FloatRange(0.0, 1024.0, min_open=True),
    default=MAX_MB,
    show_default=True,
    help="Largest trajectory read, in MB (a file, a JSONL line, stdin's document): "
    "larger ones are refused unread.",
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
    max_mb: float,
    runs_dir: Path | None,
) -> None:
    """Score trajectories (files, folders, globs, - for stdin) with a monitor.

    Reads StealthBench and canonical ATIF files, monsearch corpus records, JSONL
    of any of them, and all of these zstandard-compressed (.json.zst,
    .jsonl.zst). One result per trajectory: the score, the decision at the
    audit budget (audit / tie / pass, from the val benign thresholds) and the
    top findings. Inputs that cannot be read are reported on stderr, one line
    each, and skipped; the exit code is 1 when any were, 0 otherwise. Names and
    texts from the inputs are printed with control characters escaped (\\n,
    \\x1b); --json output is JSON-escaped.
    """
    keep: list[Any] = []
    plugin = None
    try:
        plugin = load_monitor(monitor_ref, runs_dir, keep)
        unreadable = 0
        rows = []
        for label, traj in _trajectories(plugin, inputs, int(max_mb * 1024 * 1024)):
            if isinstance(traj, str):
                unreadable += 1
                # Plain echo: one line per input, never wrapped (scripts grep it); the
                # name and the message may hold what an agent wrote.
                click.echo(f"skipped {printable(label)}: {printable(traj)}", err=True)
                if as_json:
                    click.echo(json.dumps({"input": label, "error": traj}))
                continue
            record = _record(plugin, label, traj, budget, top)
            if as_json:
                click.echo(json.dumps(record))
            else:
                rows.append(record)
        if rows:
            _print_table(stdout_console(), rows, plugin.MONITOR)
    finally:
        if plugin is not None and hasattr(plugin, "close"):
            plugin.close()  # its worker process, before its folder may go
        for tmp in keep:
            tmp.cleanup()
    if unreadable:
        scored = f"; {len(rows)} scored" if rows else "; none scored"
        click.echo(f"{unreadable} input(s) could not be read{scored}", err=True)
        sys.exit(EXIT_UNREADABLE)


def _trajectories(
    plugin: Any, inputs: tuple[str, ...], max_bytes: int
) -> Iterator[tuple[str, Any]]:
    """``(name, trajectory or why it could not be read)`` for every input, in order."""
    for name, path, problem in expand_inputs(inputs):
        if problem is not None:
            yield name, problem
            continue
        documents = (
            read_stdin(max_bytes=max_bytes)
            if path is None
            else read_documents(path, name, max_bytes=max_bytes)
        )
        for label, doc in documents:
            if isinstance(doc, InputError):
                yield label, error_text(doc)
                continue
            try:
                # A dict is read as it is; any other JSON value goes back as JSON text
                # (as a plain str it would be taken for a path), for the plugin to refuse.
                yield label, plugin.load(doc if isinstance(doc, dict) else json.dumps(doc).encode())
            except plugin.InputError as err:
                yield label, error_text(err, doc)


def _record(plugin: Any, label: str, traj: Any, budget: float | None, top: int) -> dict[str, Any]:
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
    record = {
        "input": label,
        "trajectory_id": traj.id,
        "score": score,
        "status": status,
        "decision": decision["decision"],
        "budget": decision["budget"],
        "threshold": decision.get("tau"),
        "findings": finding_steps(found["steps"]),
    }
    if "partial" in found:  # a long run: not every prefix was scored (plugin.findings)
        record["findings_partial"] = _partial(found["partial"])
    if "escalate" in decision:
        record["escalate"] = decision["escalate"]
    if error:
        record["error"] = error
    return record


def _partial(partial: dict[str, Any]) -> dict[str, Any]:
    from monsearch.export.display import rounded

    out = dict(partial)
    out["stretches"] = [{**s, "rise": rounded(s["rise"])} for s in partial.get("stretches", [])]
    return out


def _partial_text(partial: dict[str, Any]) -> str:
    """The line under a long run's findings: how much of it they cover."""
    text = f"(searched {partial['prefixes_scored']} of {partial['prefixes']} prefixes"
    left = partial.get("stretches_left", 0)
    if left:
        s = partial["stretches"][0]
        text += (
            f"; {left} stretches unresolved, largest steps {s['first_step']}-{s['last_step']}"
            f" +{s['rise']:.3g}"
        )
    if "stopped" in partial:
        text += f"; {partial['stopped']}: {partial['reason']}"
    return text + ")"


SCORE_NOTE = (
    "score: the monitor's suspicion (higher: more likely an OPSEC failure); decision at the "
    "audit budget (the share of benign runs audited): audit when the score is above the "
    "threshold that flags that share of the val benign runs, pass below it, tie at it; top "
    "findings: the steps that raised the score most, with the raise (in a run too long to "
    "score every prefix, found by a search that says how many it scored)."
)


def _print_table(console: Any, rows: list[dict[str, Any]], monitor: dict[str, Any]) -> None:
    from monsearch.commands import cells
    from monsearch.export.display import percent

    table_rows: list[Row] = []
    for r in rows:
        decision = r["decision"] + (" (escalate)" if r.get("escalate") else "")
        if r.get("error"):
            decision += " [program did not finish: fallback score]"
        table_rows.append(
            (
                [
                    printable(r["input"]),
                    f"{r['score']:.4g}",
                    decision,
                    "\n".join(
                        [printable(_finding_text(f)) for f in r["findings"]]
                        + (
                            [_partial_text(r["findings_partial"])]
                            if "findings_partial" in r
                            else []
                        )
                    )
                    or "-",
                ],
                "bold" if r["decision"] == "audit" else None,
            )
        )
    title = printable(f"monitor {monitor['name']} ({monitor['strategy_hash'][:12]})")
    # One budget for every row: it goes in the header, not in each cell.
    headers = ["trajectory", "score", f"decision at {percent(rows[0]['budget'])}", "top findings"]
    kinds = [cells.PATH, cells.NUMBER, cells.STATUS, cells.TEXT]
    console.print(fitted_table(console, title, headers, table_rows, kinds=kinds))
    print_note(console, SCORE_NOTE)
