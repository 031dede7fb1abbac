"""``monsearch export RUN --out DIR``: write a run's frozen strategy as a monitor plugin."""

from __future__ import annotations

from pathlib import Path

import click

from monsearch.api.results import install_target
from monsearch.commands.consoles import stderr_console

__all__ = ["export", "install_target"]


@click.command("export")
@click.argument("run")
@click.option(
    "--out",
    "out",
    required=True,
    metavar="DIR",
    type=click.Path(path_type=Path, file_okay=False),
    help="Folder to write the plugin package into (new or empty).",
)
@click.option(
    "--program",
    "program_id",
    metavar="ID",
    default=None,
    help="Export this candidate of the run's lineage instead of the selected strategy.",
)
@click.option(
    "--name",
    metavar="NAME",
    default=None,
    help="Monitor name: lower-case letters, digits and _, starting with a letter; the "
    "package is monsearch_<name>. [default: opsec_<first 10 hex digits of the strategy "
    "hash>]",
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
    "random PYTHONHASHSEED) and refuse, removing the folder, unless every score "
    "equals the run's.",
)
def export(
    run: str,
    out: Path,
    program_id: str | None,
    name: str | None,
    runs_dir: Path | None,
    verify: bool,
) -> None:
    """Write RUN's selected strategy as an installable monitor plugin.

    RUN is a run id or a run folder. The plugin is a Python package that needs only
    RestrictedPython: the frozen program, monsearch's own readers and view code
    (copied, imports rewritten), thresholds per audit budget from the val benign
    scores, the run's metrics, a command line, and adapters for Inspect AI,
    ControlArena and atif-scan. Install it with pip install DIR; monsearch score
    --monitor DIR FILE... scores trajectories with it.
    """
    from monsearch.api.export import export_plugin

    console = stderr_console()
    with console.status("exporting (verifying on val)..." if verify else "exporting..."):
        monitor = export_plugin(
            run, out, program=program_id, name=name, runs_dir=runs_dir, verify=verify
        )
    console.print(f"wrote {monitor.package} to {out}", highlight=False, markup=False)
    console.print(f"  strategy {monitor.strategy_hash[:16]}... of run {monitor.run_id}",
                  markup=False)
    if monitor.verified:
        console.print(f"  verified: {monitor.verified['n']} val scores reproduced exactly")
    console.print(f"  install: {monitor.install}", highlight=False, markup=False)
