"""The rich consoles every command prints through: tables to stdout, progress to stderr.

Also :func:`fitted_table`, the table layout of every report: it fits the
console's width (80 columns included) by wrapping cells at readable places
(each column by its kind, see :mod:`monsearch.commands.cells`) instead of
cutting them with "…", and :func:`print_note`, the plain
sentence under a table that says what its numbers mean.
"""

from __future__ import annotations

import io
import os
import sys

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from monsearch.commands import cells

# Tables are wide; when the output is a file or a pipe, do not squeeze them to 80 columns
# (unless COLUMNS says how wide the reader wants them).
PIPE_WIDTH = 160

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
    console = _Console(stderr=True, highlight=False, quiet=quiet)
    if not console.is_terminal:
        # A log (a file, a pipe, CI): a path or a pip line broken at 80 columns cannot be
        # pasted, so lines are never wrapped there, whatever COLUMNS says.
        console = _Console(stderr=True, highlight=False, quiet=quiet, soft_wrap=True)
    return console


def _table(title: str) -> Table:
    return Table(
        title=Text(title),
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        collapse_padding=True,
    )


def _overhead(columns: int) -> int:
    """The width a table of ours spends on padding and rules besides its ``columns`` cells
    (measured on one-character headers: rendering every row would cost more)."""
    probe_table = _table("")
    for _ in range(columns):
        probe_table.add_column("x")
    probe = Console(width=10_000, file=io.StringIO(), color_system=None)
    with probe.capture() as cap:
        probe.print(probe_table)
    return max((len(line.rstrip()) for line in cap.get().splitlines()), default=0) - columns


def _allot(natural: list[int], floors: list[list[int]], room: int) -> list[int]:
    """Column widths that sum to at most ``room`` if the floors allow.

    Each floor list is one round: the widest column still above its floor of
    that round gives up a character until the widths fit or every column is at
    its floor; then the next round's (lower) floors apply.
    """
    widths = list(natural)
    for floor in floors:
        while sum(widths) > room:
            above = [i for i, w in enumerate(widths) if w > floor[i]]
            if not above:
                break
            widest = max(above, key=lambda i: widths[i])
            widths[widest] -= 1
    return widths


def fitted_table(
    console: Console,
    title: str,
    headers: list[str],
    rows: list[Row],
    *,
    names: int = 1,
    kinds: list[str] | None = None,
) -> Table:
    """A table of text cells that fits ``console``'s width without cutting anything.

    ``kinds`` gives each column's kind (see :mod:`monsearch.commands.cells`:
    name, id, path, number, status, text); by default the first ``names``
    columns are names and the others numbers. When the table is too wide, the
    columns are narrowed in rounds, widest first within a round: first only
    headers wrap (at spaces and hyphens), then text columns down to a
    comfortable width, then names, paths and values, then text columns down to
    their minimum, then identifiers; a number or a
    status word is never cut, a path is shortened from the left keeping the
    tail that tells the rows apart. Each row
    is ``(cells, style)``; :data:`SECTION` draws a rule. Cells are plain text,
    never rich markup.
    """
    kinds = kinds or [cells.NAME] * names + [cells.NUMBER] * (len(headers) - names)
    if len(kinds) != len(headers) or not set(kinds) <= set(cells.KINDS):
        raise ValueError(f"one kind of {cells.KINDS} per column, got {kinds}")
    body = [row for row in rows if row is not SECTION]
    columns = [[row[0][i] for row in body] for i in range(len(headers))]
    natural = [
        max([cells.natural_width(c) for c in col] + [cells.natural_width(h)], default=1)
        for h, col in zip(headers, columns, strict=True)
    ]
    minimum = [
        cells.min_width(k, h, col) for k, h, col in zip(kinds, headers, columns, strict=True)
    ]
    # Round 0 wraps headers only; then the kinds give way in cells.SHRINK_ROUNDS.
    floor = [
        max(lo, max((cells.natural_width(c) for c in col), default=1))
        for lo, col in zip(minimum, columns, strict=True)
    ]
    floors = [floor]
    for shrink in cells.SHRINK_ROUNDS:
        floor = [
            min(f, max(lo, shrink[k])) if k in shrink else f
            for k, lo, f in zip(kinds, minimum, floor, strict=True)
        ]
        floors.append(floor)

    def build(widths: list[int] | None) -> Table:
        table = _table(title)
        for i, header in enumerate(headers):
            kind = kinds[i]
            width = None if widths is None else widths[i]
            fixed = kind in (cells.NUMBER, cells.STATUS)
            table.add_column(
                header if width is None else cells.layout_header(header, width),
                justify="right" if kind == cells.NUMBER else "left",
                no_wrap=fixed,
                overflow="ellipsis" if fixed else "fold",
                min_width=minimum[i],
                width=width,
            )
        for row in rows:
            if row is SECTION:
                table.add_section()
                continue
            texts, style = row
            table.add_row(
                *(
                    Text(c if widths is None else cells.layout(kinds[i], c, widths[i]))
                    for i, c in enumerate(texts)
                ),
                style=style,
            )
        return table

    table = build(None)
    room = console.width - _overhead(len(headers))
    if sum(natural) > room:
        widths = _allot(natural, floors, room)

        def laid_width(i: int, width: int) -> int:
            return max(
                [cells.natural_width(cells.layout(kinds[i], c, width)) for c in columns[i]]
                + [cells.natural_width(cells.layout_header(headers[i], width))]
            )

        # A column whose cells wrapped narrower than its share gives the rest back,
        # to the most squeezed columns first.
        laid = [laid_width(i, w) for i, w in enumerate(widths)]
        for i in sorted(range(len(laid)), key=lambda i: laid[i] - natural[i]):
            spare = room - sum(laid)
            if spare > 0 and laid[i] < natural[i]:
                laid[i] = laid_width(i, laid[i] + spare)
        table = build(laid)
    table.min_width = min(len(title), console.width)
    return table


def print_note(console: Console, text: str) -> None:
    """The plain sentence under a table that says what its numbers mean."""
    console.print(Text(text, style="dim"))
    console.print()
