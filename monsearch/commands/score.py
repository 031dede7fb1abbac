"""``monsearch score --monitor DIR|RUN FILE_OR_DIR...``: score trajectories with a monitor.

Parses the options, calls :func:`monsearch.api.score.scoring` (which loads the monitor,
reads the inputs and scores them) and prints each record as it comes: a table, or one
JSON object per trajectory with ``--json``; unreadable inputs on stderr.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from monsearch.api.score import MAX_MB, TOP, TrajectoryScore
from monsearch.commands.consoles import Row, fitted_table, print_note, stdout_console
from monsearch.commands.printable import printable

#: Exit code when any input could not be read: bad input, by the project's rule (0
#: success, 1 the work ran but its subject failed, 2 bad input or usage).
EXIT_UNREADABLE = 2


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
    default=TOP,
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
    each, and skipped (the others are still scored); the exit code is 2 when
    any were, 0 otherwise. Names and texts from the inputs are printed with
    control characters escaped (\\n, \\x1b), and the table starts each line
    with the command's own text, never with a wrapped name; --json output is
    JSON-escaped.
    """
    from monsearch.api.score import scoring

    unreadable = scored = 0
    rows: list[TrajectoryScore] = []
    with scoring(
        monitor_ref, inputs, budget=budget, top=top, max_mb=max_mb, runs_dir=runs_dir
    ) as results:
        for r in results:
            if not r.readable:
                unreadable += 1
                # Plain echo: one line per input, never wrapped (scripts grep it); the
                # name and the message may hold what an agent wrote.
                click.echo(f"skipped {printable(r.input)}: {printable(r.error)}", err=True)
                if as_json:
                    click.echo(json.dumps(r.to_dict()))
                continue
            scored += 1
            if as_json:
                click.echo(json.dumps(r.to_dict()))
            else:
                rows.append(r)
        if rows:
            _print_table(stdout_console(), rows, results.monitor)
    if unreadable:
        done = f"; {scored} scored" if scored else "; none scored"
        click.echo(f"{unreadable} input(s) could not be read{done}", err=True)
        sys.exit(EXIT_UNREADABLE)


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


def _print_table(console: Any, rows: list[TrajectoryScore], monitor: dict[str, Any]) -> None:
    from monsearch.commands import cells
    from monsearch.export.display import percent

    table_rows: list[Row] = []
    for r in rows:
        decision = (r.decision or "") + (" (escalate)" if r.escalate else "")
        if r.error:
            decision += " [program did not finish: fallback score]"
        partial = [] if r.findings_partial is None else [_partial_text(r.findings_partial)]
        table_rows.append(
            (
                [
                    f"{r.score:.4g}",
                    decision,
                    printable(r.input),
                    "\n".join([printable(_finding_text(f)) for f in r.findings] + partial)
                    or "-",
                ],
                "bold" if r.decision == "audit" else None,
            )
        )
    title = printable(f"monitor {monitor['name']} ({monitor['strategy_hash'][:12]})")
    # One budget for every row: it goes in the header, not in each cell. The score
    # leads each row: a name wrapped onto a second line (a folder named "skipped
    # x.json: ...") then starts indented, never where the command's own lines start.
    headers = ["score", f"decision at {percent(rows[0].budget)}", "trajectory", "top findings"]
    kinds = [cells.NUMBER, cells.STATUS, cells.PATH, cells.TEXT]
    console.print(fitted_table(console, title, headers, table_rows, kinds=kinds))
    print_note(console, SCORE_NOTE)
