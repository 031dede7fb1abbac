"""The rich consoles every command prints through: tables to stdout, progress to stderr."""

from __future__ import annotations

from rich.console import Console

# Tables are wide; when the output is a file or a pipe, do not squeeze them to 80 columns.
PIPE_WIDTH = 160


def stdout_console() -> Console:
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=PIPE_WIDTH)
    return console


def stderr_console(*, quiet: bool = False) -> Console:
    return Console(stderr=True, highlight=False, quiet=quiet)
