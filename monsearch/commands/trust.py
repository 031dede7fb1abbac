"""``monsearch trust RUN``: adopt a run folder no key of yours sealed."""

from __future__ import annotations

import json
from pathlib import Path

import click

_BEFORE = {
    "unsealed": "lineage.sqlite carried no seal (made before monsearch sealed its runs)",
    "foreign": "lineage.sqlite was sealed under another monsearch key ({key_id})",
}


@click.command("trust")
@click.argument("run_ref", metavar="RUN")
@click.option(
    "--runs-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    envvar="MONSEARCH_RUNS",
    help="Where runs live [default: ./runs; env MONSEARCH_RUNS].",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was adopted as JSON.")
def trust_cmd(run_ref: str, runs_dir: Path | None, as_json: bool) -> None:
    """Adopt RUN: seal its history as found with your run key.

    test, export, score --monitor and evolve --resume refuse a run whose history is
    not sealed with your run key: one made before monsearch sealed its runs, or made
    by another user or on another machine. Trust it only if you trust where the
    folder came from: its history is checked as by every reader (no entry edited,
    added or removed; the selected strategy and config.json agree with it), but a
    history rewritten consistently before it reached you cannot be told from a real
    one. A run your key sealed whose seal no longer matches is never adopted.
    """
    from monsearch.api.trust import trust_run

    done = trust_run(run_ref, runs_dir=runs_dir)
    if as_json:
        click.echo(json.dumps(done, indent=2))
        return
    what = f"run {done['run_id']} ({done['path']})"
    if not done["adopted"]:
        click.echo(f"{what}: already sealed with your run key; nothing to do")
        return
    before = _BEFORE[done["state"]].format(key_id=done["key_id"])
    click.echo(
        f"{what}: {before}; its history ({done['chain_length']} entries, head "
        f"{done['chain_head'][:12]}) is now sealed with your run key"
    )
    click.echo("test, export, score --monitor and evolve --resume accept it from now on")
