"""How a table cell is laid out at a given column width, by the kind of its column.

A column's kind says where its cells may break and what may never be cut:

- ``name``: wrapped at readable places (after ``/`` and spaces, then ``-`` and
  ``_``); nothing is dropped (see :func:`wrap_name`).
- ``id``: an identifier a user types again (a run id): wrapped as a name, but
  only when nothing else can give way.
- ``path``: a file path, shortened from the left behind ``…`` onto at most
  :data:`PATH_LINES` lines broken after ``/``, so that its distinguishing tail
  (the last folders and the file name) stays (see :func:`shorten_path`).
- ``number``: short values, right-aligned; wrapped at spaces only, so a number
  or a word is never cut.
- ``status``: the same, left-aligned (a decision, a run status).
- ``text``: prose such as findings; wrapped at spaces, a word longer than the
  column (a URL) broken at ``/`` and the like rather than cut.

:func:`layout` lays out a cell, :func:`min_width` is the narrowest a column of a
kind may get while its cells stay readable; ``fitted_table`` in
:mod:`monsearch.commands.consoles` shares the console's width out between them.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable

NAME, ID, PATH, NUMBER, STATUS, TEXT = "name", "id", "path", "number", "status", "text"
KINDS = (NAME, ID, PATH, NUMBER, STATUS, TEXT)
#: A text column's width before names and paths give way.
COMFORTABLE_TEXT_WIDTH = 40
#: When a table is too wide, the rounds in which columns give way (after headers alone):
#: each round narrows the named kinds down to that many characters, or to the column's
#: minimum (:func:`min_width`) if wider; 0 means the minimum. Prose gives way first, to a
#: comfortable width, then names, paths and values, then prose again, identifiers last.
SHRINK_ROUNDS: tuple[dict[str, int], ...] = (
    {TEXT: COMFORTABLE_TEXT_WIDTH},
    {PATH: 0, NAME: 0, NUMBER: 0, STATUS: 0},
    {TEXT: 0},
    {ID: 0},
)

#: Narrowest a name column gets; a console narrower than that still cuts cells.
MIN_NAME_WIDTH = 10
#: Narrowest a path column gets (its distinguishing tail may ask for more).
MIN_PATH_WIDTH = 16
#: Narrowest a text column gets: room for a few words per line.
MIN_TEXT_WIDTH = 24
#: Lines a shortened path may take.
PATH_LINES = 2
ELLIPSIS = "…"


def natural_width(text: str) -> int:
    """The width ``text`` takes when nothing is wrapped."""
    return max((len(line) for line in text.split("\n")), default=0)


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


def wrap_words(text: str, width: int, *, hyphens: bool = False) -> str:
    """``text`` wrapped at spaces (and after hyphens if ``hyphens``); its own line breaks kept.

    A word longer than ``width`` (a URL) gets lines of its own, broken at readable
    places as :func:`wrap_name` breaks a name; it is never cut short.
    """
    lines: list[str] = []
    for line in text.split("\n"):
        for wrapped in textwrap.wrap(
            line, max(width, 1), break_long_words=False, break_on_hyphens=hyphens
        ) or [""]:
            lines += wrap_name(wrapped, width).split("\n") if len(wrapped) > width else [wrapped]
    return "\n".join(lines)


def _words(text: str, *, hyphens: bool = False) -> list[str]:
    words = text.split()
    if hyphens:
        words = [part for word in words for part in re.split(r"(?<=-)(?=.)", word)]
    return words


def shorten_path(path: str, width: int, lines: int = PATH_LINES) -> str:
    """``path`` on at most ``lines`` lines of ``width``, broken after ``/``, cut from the left.

    When the whole path does not fit, the top line starts with ``…`` followed by
    exactly the ``width - 1`` characters before the lines below it, so at least
    ``width - 1`` characters of the path's tail always show.
    """
    if len(path) <= width:
        return path
    pieces = re.split(r"(?<=/)", path)
    below: list[str] = []  # finished lines, bottom first
    line = ""
    while pieces:
        piece = pieces[-1]
        if len(piece) + len(line) <= width:
            line = piece + line
            pieces.pop()
        elif line and len(below) + 1 < lines:
            below.append(line)
            line = ""
        else:
            break
    if pieces:  # the rest does not fit: its tail, behind an ellipsis
        line = ELLIPSIS + ("".join(pieces) + line)[-(width - 1) :]
    return "\n".join([line, *reversed(below)])


def distinguishing_tail(paths: Iterable[str]) -> int:
    """The fewest trailing characters that tell every two different ``paths`` apart."""
    ends = sorted({p[::-1] for p in paths})
    need = 0
    for a, b in zip(ends, ends[1:], strict=False):
        common = 0
        for x, y in zip(a, b, strict=False):
            if x != y:
                break
            common += 1
        need = max(need, common + 1)
    return need


def layout(kind: str, cell: str, width: int) -> str:
    """``cell`` laid out for a column of ``kind`` that is ``width`` wide."""
    if natural_width(cell) <= width:
        return cell
    if kind in (NAME, ID):
        return "\n".join(wrap_name(line, width) for line in cell.split("\n"))
    if kind == PATH:
        return "\n".join(shorten_path(line, width) for line in cell.split("\n"))
    return wrap_words(cell, width)


def layout_header(header: str, width: int) -> str:
    return wrap_words(header, width, hyphens=True)


def min_width(kind: str, header: str, cells: list[str]) -> int:
    """The narrowest this column may be while its header and cells stay readable."""
    natural = max([natural_width(c) for c in cells] + [natural_width(header)], default=1)
    head = max((len(w) for w in _words(header, hyphens=True)), default=1)
    if kind in (NAME, ID):
        body = MIN_NAME_WIDTH
    elif kind == PATH:
        lines = [line for c in cells for line in c.split("\n")]
        body = max(MIN_PATH_WIDTH, distinguishing_tail(lines) + len(ELLIPSIS))
    elif kind == TEXT:
        body = MIN_TEXT_WIDTH
    else:  # NUMBER, STATUS: a word is never cut
        body = max((len(w) for c in cells for w in _words(c)), default=1)
    return min(natural, max(head, body))
