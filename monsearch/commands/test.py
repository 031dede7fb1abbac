"""``monsearch test RUN``: the sealed one-time test of a run's frozen strategy.

The figures come from :mod:`monsearch.eval.sealed`, the files from
:mod:`monsearch.eval.report`; this module parses options, shows progress on stderr
and prints the compact table (or the JSON) on stdout.
"""

from __future__ import annotations

from pathlib import Path

import click

from monsearch.commands.consoles import fitted_table, print_note, stderr_console, stdout_console
from monsearch.errors import MonsearchError


@click.command("test")
@click.argument("run_ref", metavar="RUN")
@click.option(
    "--program",
    "program_id",
    metavar="ID",
    help="Test this candidate of the run's lineage instead of the selected strategy "
    "(refused without --force once another program of the run was opened on the corpus).",
)
@click.option(
    "--force",
    is_flag=True,
    help="Evaluate again although the ledger says this strategy, or another program of "
    "the run, was opened on this corpus; the report is marked re-opened.",
)
@click.option(
    "--costs",
    "costs_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Cost model for selective escalation (TOML, a [costs] table) [default: built in].",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stdout.")
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    help="Folder for the report files (one without a report) [default: a new RUN/test/NNN/; "
    "RUN/test/NNN/ always keeps report.json].",
)
@click.option(
    "--runs-dir",
    type=click.Path(path_type=Path, file_okay=False),
    envvar="MONSEARCH_RUNS",
    help="Where runs live [default: ./runs; env MONSEARCH_RUNS].",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Splits scored at the same time (one sandbox worker each).",
)
@click.option(
    "--loss-tolerance",
    type=click.FloatRange(min=0.0),
    default=0.05,
    show_default=True,
    help="A shifted view's loss vs val whose whole 90% bootstrap interval lies above this "
    "is flagged (a drop the sampling noise cannot explain).",
)
def test_cmd(
    run_ref: str,
    program_id: str | None,
    force: bool,
    costs_file: Path | None,
    as_json: bool,
    out: Path | None,
    runs_dir: Path | None,
    workers: int,
    loss_tolerance: float,
) -> None:
    """Evaluate RUN's frozen strategy once on test and every cross-generator split.

    Thresholds are set on val and transferred (the realised benign flag rate is
    shown beside the nominal budget), and set again on each corpus's own benign
    runs; figures per dimension and per task, panel and true labels side by side,
    and the selective-escalation curves with their baselines. A ledger (a user data
    file; MONSEARCH_LEDGER moves it) records every opening: a second test of the
    same program (comments and layout aside) on the same corpus and split is
    refused unless --force, and so is another program of a run already opened on
    that corpus (trying a run's programs in turn is selecting on test); every
    opening after a run's first, whatever program, is marked re-opened, and each
    report says which opening of the run it is and names the run's other programs
    opened on the corpus.
    Writes report.json, report.md, report.html and PNG plots into a new
    RUN/test/NNN/ (NNN: the opening), or into --out with report.json also kept in
    RUN/test/NNN/; an earlier report is never replaced. Exit code 0 when done, 3 when refused by the
    ledger, 2 for bad input or a run folder that differs from what the run
    recorded.
    """
    from monsearch.api.sealed_test import run_sealed_test
    from monsearch.commands.paths import ensure_writable_dir
    from monsearch.eval.costs import load_costs
    from monsearch.eval.report import (
        BENIGN_MIX_NOTE,
        benign_mix_table,
        benign_mix_tail,
        min_per_class_of,
        report_json,
        shifted_note,
        shifted_table,
        summary_table,
        write_report,
    )
    from monsearch.eval.sealed_reports import REPORT_FILE, REPORTS_DIR, new_report_folder
    from monsearch.search.runs import resolve_run

    costs = load_costs(costs_file)
    run = resolve_run(run_ref, runs_dir)
    # Every opening leaves its report.json in the run folder, whatever --out says.
    ensure_writable_dir(run.dir / REPORTS_DIR, "report folder")
    if out is not None:
        ensure_writable_dir(out, "report folder")
        if (out / REPORT_FILE).exists():
            raise MonsearchError(
                f"--out {out}: already holds a sealed-test report; a report is never "
                "replaced: choose a new folder"
            )
    err = stderr_console()
    status = err.status("starting") if err.is_terminal else None

    def progress(message: str) -> None:
        if status is not None:
            status.update(message)
        else:
            click.echo(message, err=True)

    if status is not None:
        status.start()
    try:
        report = run_sealed_test(
            run,
            program_id=program_id,
            force=force,
            costs=costs,
            workers=workers,
            progress=progress,
            loss_tolerance=loss_tolerance,
        )
    finally:
        if status is not None:
            status.stop()
    target = out if out is not None else run.dir / REPORTS_DIR
    try:
        folder = new_report_folder(run.dir, report["ledger"]["run_opening"])
        if out is None:
            target = folder
        else:
            (folder / REPORT_FILE).write_text(report_json(report), encoding="utf-8")
        files = write_report(report, target)
    except OSError as exc:
        raise MonsearchError(
            f"{target}: cannot write the report: {exc.strerror or exc} (the test was opened "
            "and recorded in the ledger; --force writes it again)"
        ) from None
    if as_json:
        click.echo(report_json(report), nl=False)
        return
    console = stdout_console()
    strat = report["strategy"]
    ledger = report["ledger"]
    if report["reopened"]:
        from rich.markup import escape

        console.print("[bold red]RE-OPENED[/]: " + escape("; ".join(ledger["reasons"])))
    console.print(
        f"{ordinal(ledger['run_opening'])} opening of run {report['run_id']}'s sealed test",
        markup=False,
    )
    others = ledger.get("other_programs") or []
    if others:
        console.print(
            "other programs of this run already opened on this corpus: "
            + ", ".join(f"{o.get('program_id')} ({o.get('opened_at')})" for o in others),
            markup=False,
        )
    headers, rows = summary_table(report)
    title = (
        f"sealed test of run {report['run_id']}, strategy {strat['id']} "
        f"({strat['strategy_hash'][:12]}) on {report['corpus']['name']}"
    )
    console.print(fitted_table(console, title, headers, [(r, None) for r in rows]))
    print_note(
        console,
        "Budget-AUC: mean recall over audit budgets (log scale), mean over failure dimensions. "
        "From val: val's thresholds applied unchanged, with the realised benign flag rate at "
        "the nominal budget; recalibrated: thresholds set on the corpus's own benign runs. "
        "True-label BAUC is recalibrated. Loss vs val: from val / recalibrated.",
    )
    shifted_headers, shifted_rows = shifted_table(report)
    if shifted_rows:
        view = ((report.get("val") or {}).get("views") or {}).get("panel", {}).get("view", "plain")
        console.print(
            fitted_table(
                console,
                "under shifted base rates (each corpus reweighted, nothing re-run)",
                shifted_headers,
                [(r, None) for r in shifted_rows],
                # Figures all: a figure is never cut, it wraps at its spaces only.
                kinds=["name"] + ["number"] * (len(shifted_headers) - 1),
            )
        )
        print_note(
            console,
            "Flattened: every task x outcome cell at one failure share; inverted: each "
            "cell's failure share mirrored around one half, so a monitor that scores which "
            "task was solved rather than what the agent did loses. From val / recalibrated "
            f"thresholds; val under the run's fitness ({view}); worst loss: val minus the "
            f"worse figure. Cells left out: fewer than {min_per_class_of(report)} failures "
            "or passes. "
            + shifted_note(report),
        )
    mix_headers, mix_rows = benign_mix_table(report)
    if mix_rows:
        console.print(
            fitted_table(
                console,
                "under a shifted benign mix (benign runs reweighted by habit profile)",
                mix_headers,
                [(r, None) for r in mix_rows],
                kinds=["name", "name"] + ["number"] * (len(mix_headers) - 2),
            )
        )
        print_note(console, BENIGN_MIX_NOTE + " " + benign_mix_tail(report))
    for note in report.get("notes", [])[:3]:
        console.print(f"note: {note}", markup=False)
    if len(report.get("notes", [])) > 3:
        console.print(f"({len(report['notes']) - 3} more notes in the report)")
    console.print(f"report: {files['html']}", markup=False)


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 21st..."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
