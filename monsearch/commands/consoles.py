"""The rich consoles every command prints through: tables to stdout, progress to stderr.

Also :func:`fitted_table`, the table layout of every report: it fits the
console's width (80 columns included) by wrapping the name column at readable
places instead of cutting cells with "…", and :func:`print_note`, the plain
sentence under a table that says what its numbers mean.
"""

from __future__ import annotations

import io
import math
import os
import re
import sys

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

# Tables are wide; when the output is a file or a pipe, do not squeeze them to 80 columns
# (unless COLUMNS says how wide the reader wants them).
PIPE_WIDTH = 160

#: Narrowest the name column gets; a console narrower than that still cuts cells.
MIN_NAME_WIDTH = 12
#: An entry of a row list that draws a rule between the rows above and below it.
SECTION = None

#: ``(cells, style)`` or :data:`SECTION`.
Row = tuple[list[str], str | None] | None


class StdoutClosedError(BrokenPipeError):
    """The reader of our output went away (``monsearch ... | head``)."""


def stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (a write would fail with EPIPE)."""
    try:
        import select

        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(ev & select.POLLERR for _, ev in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll(), no real stdout...
        return False


class _Console(Console):
    def on_broken_pipe(self) -> None:
        # rich exits 1 here; let monsearch.cli.main end quietly as `| head` users expect.
        self.quiet = True
        raise StdoutClosedError("the reader of the output went away")


def stdout_console() -> Console:
    console = _Console(highlight=False)
    if not console.is_terminal and not os.environ.get("COLUMNS", "").isdigit():
        console = _Console(highlight=False, width=PIPE_WIDTH)
    return console


def stderr_console(*, quiet: bool = False) -> Console:
    return _Console(stderr=True, highlight=False, quiet=quiet)


def wrap_name(name: str, width: int) -> str:
    """``name`` broken into lines of at most ``width`` characters, at readable places.

    Breaks after ``/`` and spaces first (``arcee-ai/`` + ``trinity-large-thinking``),
    then after ``-`` or ``_`` inside a part still too long, and cuts only a part
    without such a place. Nothing is dropped: the lines joined give back ``name``
    (less the spaces at the breaks).
    """
    if len(name) <= width:
        return name
    pieces: list[str] = []
    for major in re.split(r"(?<=[/ ])", name):
        if len(major.rstrip()) <= width:
            pieces.append(major)
            continue
        for minor in re.split(r"(?<=[-_])", major):
            while len(minor.rstrip()) > width:
                pieces.append(minor[:width])
                minor = minor[width:]
            pieces.append(minor)
    lines: list[str] = []
    line = ""
    for piece in pieces:
        if line and len((line + piece).rstrip()) > width:
            lines.append(line)
            line = ""
        line += piece
    lines.append(line)
    return "\n".join(ln.rstrip() for ln in lines if ln)


def _natural_width(table: Table) -> int:
    """The width ``table`` takes when nothing has to be wrapped."""
    probe = Console(width=10_000, file=io.StringIO(), color_system=None)
    with probe.capture() as cap:
        probe.print(table)
    return max((len(line.rstrip()) for line in cap.get().splitlines()), default=0)


def fitted_table(
    console: Console,
    title: str,
    headers: list[str],
    rows: list[Row],
    *,
    names: int = 1,
) -> Table:
    """A table of text cells that fits ``console``'s width without cutting anything.

    The first ``names`` columns hold names (left-aligned, wrapped when the table
    is too wide: see :func:`wrap_name`); the others hold short values
    (right-aligned, never wrapped). Each row is ``(cells, style)``;
    :data:`SECTION` draws a rule. Cells are plain text, never rich markup.
    """
    target = console.width

    def build(name_width: int | None) -> Table:
        table = Table(
            title=Text(title),
            title_justify="left",
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            collapse_padding=True,
        )
        for i, header in enumerate(headers):
            if i < names:
                table.add_column(header, overflow="fold", min_width=MIN_NAME_WIDTH)
            else:
                table.add_column(header, justify="right", no_wrap=True)
        for row in rows:
            if row is SECTION:
                table.add_section()
                continue
            cells, style = row
            texts = [
                Text(c if i >= names or name_width is None else wrap_name(c, name_width))
                for i, c in enumerate(cells)
            ]
            table.add_row(*texts, style=style)
        return table

    table = build(None)
    natural = _natural_width(table)
    if natural > target:
        longest = max(
            len(cell)
            for row in rows
            if row is not SECTION
            for cell in row[0][:names] + headers[:names]
        )
        table = build(max(MIN_NAME_WIDTH, longest - math.ceil((natural - target) / names)))
    table.min_width = min(len(title), target)
    return table


def print_note(console: Console, text: str) -> None:
    """The plain sentence under a table that says what its numbers mean."""
    console.print(Text(text, style="dim"))
    console.print()
