"""``monsearch export RUN --out DIR``: write a run's frozen strategy as a monitor plugin."""

from __future__ import annotations

from pathlib import Path

import click

from monsearch.commands.consoles import stderr_console


@click.command("export")
@click.argument("run")
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="Folder to write the plugin package into (new or empty).",
)
@click.option(
    "--program",
    "program_id",
    default=None,
    help="Export this candidate of the run's lineage instead of the selected strategy.",
)
@click.option(
    "--name",
    default=None,
    help="Monitor name (lower case, digits, _); the package is monsearch_<name>. "
    "[default: opsec_<hash>]",
)
@click.option(
    "--runs-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    envvar="MONSEARCH_RUNS",
    help="Where runs live [default: ./runs; env MONSEARCH_RUNS].",
)
@click.option(
    "--verify/--no-verify",
    default=True,
    show_default=True,
    help="Score every val trajectory with the written plugin (fresh interpreter, "
    "random PYTHONHASHSEED) and refuse unless all equal the run's scores.",
)
def export(
    run: str,
    out: Path,
    program_id: str | None,
    name: str | None,
    runs_dir: Path | None,
    verify: bool,
) -> None:
    """Write RUN's selected strategy as an installable monitor plugin (stdlib + RestrictedPython).

    The package carries the frozen program, monsearch's own readers and view code
    (copied, imports rewritten), thresholds per audit budget from the val benign
    scores, the run's metrics, and adapters for Inspect AI, ControlArena and atif-scan.
    """
    from monsearch.strategies.export import export as do_export

    console = stderr_console()
    with console.status("exporting (verifying on val)..." if verify else "exporting..."):
        monitor = do_export(
            run, out, program_id=program_id, name=name, runs_dir=runs_dir, verify_val=verify
        )
    verified = monitor.get("verified")
    console.print(f"wrote {monitor['package']} to {out}")
    console.print(f"  strategy {monitor['strategy_hash'][:16]}... of run {monitor['run_id']}")
    if verified:
        console.print(f"  verified: {verified['n']} val scores reproduced exactly")
    console.print(f"  install: pip install {out}")
