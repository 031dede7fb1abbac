"""Text from a run or from inputs made safe to print on a terminal.

What ``lineage``, ``show`` and ``score`` print comes from files someone else wrote:
model answers, program sources, descriptions, error texts, ids, file names, reader
messages. Printed raw, an ANSI or OSC escape sequence in them would drive the terminal
(colours, the window title, hyperlinks, clearing the screen), a carriage return would
overwrite the line, a newline would start a line that looks like the command's own
output (a fake ``skipped ...`` message), bidi controls would reorder what is shown
("Trojan Source"), and bytes that are not UTF-8 would stop the print with an encoding
error. Each is shown as an escape a reader can see and nothing can obey, in the style
of ``repr``: ``\\n``, ``\\x1b``, ``\\u202e``, an undecodable byte of a file name as
``\\xff``. JSON output needs none of this: ``json.dumps`` escapes control characters.

:func:`one_line` escapes line breaks and tabs too (an id, a name, a table cell);
:func:`text_block` keeps newlines and tabs (a program, a multi-line message), for
callers that indent the lines they print; :func:`printable` escapes every character
``str.isprintable`` refuses and, in text that needed escaping, doubles backslashes so
the escapes read one way (file names and what a model wrote, where any Unicode
control may hide).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["one_line", "printable", "text_block"]

# C0 controls but tab and newline, DEL and C1, the Arabic letter mark, left-to-right and
# right-to-left marks, the line and paragraph separators, bidirectional embeddings,
# overrides and isolates.
_UNSAFE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_IN_BLOCK = re.compile(f"[{_UNSAFE}]")
_IN_LINE = re.compile(f"[{_UNSAFE}\t\n]")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def _escape(c: str) -> str:
    short = _SHORT.get(c)
    if short is not None:
        return short
    o = ord(c)
    if 0xDC80 <= o <= 0xDCFF:  # a byte os.fsdecode could not decode (surrogateescape)
        return f"\\x{o - 0xDC00:02x}"
    if o < 0x100:
        return f"\\x{o:02x}"
    if o < 0x10000:
        return f"\\u{o:04x}"
    return f"\\U{o:08x}"


def _visible(match: re.Match[str]) -> str:
    return _escape(match.group(0))


def one_line(value: Any) -> str:
    """``value`` as text on one line, every control character shown as an escape."""
    return _IN_LINE.sub(_visible, str(value))


def text_block(value: Any) -> str:
    """``value`` as text whose newlines and tabs are kept; any other control character is
    shown as an escape (a carriage return included: it would overwrite the line)."""
    return _IN_BLOCK.sub(_visible, str(value).replace("\r\n", "\n"))


def printable(text: str) -> str:
    """``text`` with every character a terminal could act on escaped visibly (see the
    module docstring); ``text`` itself when it holds none."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() and c != "\\" else _escape(c) for c in text)
