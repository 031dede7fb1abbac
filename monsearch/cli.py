"""The ``monsearch`` command. Each command group lives in ``monsearch.commands``."""

from __future__ import annotations

import sys

import click

from monsearch import __version__
from monsearch.errors import MonsearchError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="monsearch")
def cli() -> None:
    """Evolve cheap OPSEC monitors for autonomous offensive-security agents.

    Import or synthesise a labelled corpus of agent trajectories, inspect it,
    and run monitor programs on it in a sandbox.
    """


def _register() -> None:
    from monsearch.commands.corpus import corpus
    from monsearch.commands.sandbox import sandbox

    cli.add_command(corpus)
    cli.add_command(sandbox)


_register()


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, standalone_mode=False)
    except MonsearchError as exc:
        click.secho(f"error: {exc}", fg="red", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
