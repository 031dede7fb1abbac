"""Reading a printed table back into its columns, to check what a terminal shows.

A table of :func:`monsearch.commands.consoles.fitted_table` has no vertical
rules: its columns are the runs of character positions where some line has
text, separated by positions that are blank on every line. Reading it back this
way checks the layout from the outside: the number of columns found is the
number of columns a reader sees, and each column's text, read top to bottom, is
what the reader can read in it.
"""

from __future__ import annotations

from dataclasses import dataclass

RULE = "─"


@dataclass
class PrintedTable:
    title: str
    header: list[str]  # each column's header, its lines joined
    body: list[list[str]]  # each column's body lines, top to bottom
    lines: list[str]

    def column(self, header_words: str) -> list[str]:
        """The body lines of the column whose header reads ``header_words``."""
        return self.body[self.header.index(header_words)]


def _spans(lines: list[str]) -> list[tuple[int, int]]:
    width = max(len(line) for line in lines)
    used = [any(i < len(line) and line[i] != " " for line in lines) for i in range(width)]
    spans, start = [], None
    for i, u in enumerate([*used, False]):
        if u and start is None:
            start = i
        elif not u and start is not None:
            # One blank position inside a cell ("173 / 121") is not a column gap.
            if i + 1 < len(used) and used[i + 1]:
                continue
            spans.append((start, i))
            start = None
    return spans


def _joined(parts: list[str]) -> str:
    """Header lines read as one: a break after a hyphen joins without a space."""
    out = ""
    for part in parts:
        out += part if not out or out.endswith("-") else " " + part
    return out


def read_table(text: str, title: str, note_start: str | None = None) -> PrintedTable:
    """The table titled ``title`` in ``text``, up to the note that starts ``note_start``
    (or to the end)."""
    lines = text.rstrip("\n").splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith(title))
    rule = next(i for i in range(top, len(lines)) if lines[i].strip().startswith(RULE))
    end = len(lines) if note_start is None else next(
        i for i in range(rule, len(lines)) if lines[i].startswith(note_start)
    )
    head, body = lines[top + 1 : rule], lines[rule + 1 : end]
    spans = _spans(head + body)
    return PrintedTable(
        title=lines[top],
        header=[_joined([line[a:b].strip() for line in head if line[a:b].strip()]) for a, b in spans],
        body=[[line[a:b].strip() for line in body] for a, b in spans],
        lines=lines[top:end],
    )


def squeezed(text: str) -> str:
    """``text`` without whitespace: wrapped cells read the same as whole ones."""
    return "".join(text.split())


def in_order(column: list[str], cells: list[str]) -> bool:
    """Whether every cell's text is in the column, whole (wrapping aside) and in row order."""
    flat = squeezed("".join(column))
    at = 0
    for cell in cells:
        found = flat.find(squeezed(cell), at)
        if found < 0:
            return False
        at = found + len(squeezed(cell))
    return True
