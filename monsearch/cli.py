"""The ``monsearch`` command. Each command group lives in ``monsearch.commands``."""

from __future__ import annotations

import os
import sys

import click

from monsearch import __version__
from monsearch.errors import MonsearchError

#: Exit code when the reader of stdout went away (``monsearch corpus stats | head``):
#: 128 + SIGPIPE, what a shell reports for any Unix tool in that spot.
EXIT_BROKEN_PIPE = 141


class _StdoutClosed(Exception):
    """The reader of stdout closed the pipe; carried past click, which would exit 1."""


class _Group(click.Group):
    def invoke(self, ctx: click.Context):
        from monsearch.commands.consoles import StdoutClosedError, stdout_closed

        try:
            return super().invoke(ctx)
        except BrokenPipeError as exc:
            # Only our own output: a broken pipe to a worker process is a real error.
            if isinstance(exc, StdoutClosedError) or stdout_closed():
                raise _StdoutClosed() from exc
            raise


def _quiet_broken_pipe() -> None:
    """Point stdout at /dev/null, so the flush at exit cannot fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="monsearch")
def cli() -> None:
    """Evolve cheap OPSEC monitors for autonomous offensive-security agents.

    Import or synthesise a labelled corpus of agent trajectories, inspect it,
    and run monitor programs on it in a sandbox.
    """


def _register() -> None:
    from monsearch.commands.corpus import corpus
    from monsearch.commands.evolve import evolve_cmd
    from monsearch.commands.export import export as export_cmd
    from monsearch.commands.llm import llm as llm_cmd
    from monsearch.commands.runs import lineage_cmd, report_cmd, runs_cmd, show_cmd
    from monsearch.commands.sandbox import sandbox
    from monsearch.commands.score import score as score_cmd
    from monsearch.commands.test import test_cmd
    from monsearch.commands.trust import trust_cmd

    cli.add_command(corpus)
    cli.add_command(sandbox)
    cli.add_command(test_cmd)
    cli.add_command(evolve_cmd)
    cli.add_command(runs_cmd)
    cli.add_command(lineage_cmd)
    cli.add_command(show_cmd)
    cli.add_command(report_cmd)
    cli.add_command(export_cmd)
    cli.add_command(score_cmd)
    cli.add_command(llm_cmd)
    cli.add_command(trust_cmd)


_register()


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, standalone_mode=False)
    except _StdoutClosed:
        # `monsearch ... | head`: the reader has what it wanted. No message, no traceback.
        _quiet_broken_pipe()
        sys.exit(EXIT_BROKEN_PIPE)
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
