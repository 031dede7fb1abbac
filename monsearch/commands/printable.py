"""Text from a run made safe to print on a terminal.

What ``lineage`` and ``show`` print comes from the run's files: model answers, program
sources, descriptions, error texts, ids, operator names. Printed raw, an ANSI or OSC
escape sequence in them would drive the terminal (colours, the window title,
hyperlinks, clearing the screen), a carriage return would overwrite the line, and a
newline would start a line that looks like the command's own output. So every control
character (C0 and C1, DEL) and every invisible reordering mark (the bidirectional
overrides and isolates behind "Trojan Source", the line and paragraph separators) is
shown as a visible escape, ``\\x1b`` or ``\\u202e``; any other character, Unicode
included, is printed as it is.

:func:`one_line` escapes line breaks and tabs too (an id, a name, a table cell);
:func:`text_block` keeps newlines and tabs (a program, a multi-line message), for
callers that indent the lines they print.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["one_line", "text_block"]

# C0 controls but tab and newline, DEL and C1, the Arabic letter mark, left-to-right and
# right-to-left marks, the line and paragraph separators, bidirectional embeddings,
# overrides and isolates.
_UNSAFE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_IN_BLOCK = re.compile(f"[{_UNSAFE}]")
_IN_LINE = re.compile(f"[{_UNSAFE}\t\n]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _visible(match: re.Match[str]) -> str:
    ch = match.group(0)
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def one_line(value: Any) -> str:
    """``value`` as text on one line, every control character shown as an escape."""
    return _IN_LINE.sub(_visible, str(value))


def text_block(value: Any) -> str:
    """``value`` as text whose newlines and tabs are kept; any other control character is
    shown as an escape (a carriage return included: it would overwrite the line)."""
    return _IN_BLOCK.sub(_visible, str(value).replace("\r\n", "\n"))
