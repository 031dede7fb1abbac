"""Text from inputs made safe to print: file names, reader messages, what a model wrote.

Agents write the trajectories and can name the files, so a name or a finding may hold
a newline (a forged line of output, a fake ``skipped ...`` message), a carriage
return, escape codes a terminal obeys (colours, cursor moves, a window title), bidi
controls that reorder what is shown, or bytes that are not UTF-8 (which would stop
the print with an encoding error). :func:`printable` shows each of those as an
escape a reader can see and nothing can obey, in the style of ``repr``: ``\\n``,
``\\x1b``, ``\\u202e``, and an undecodable byte of a file name as ``\\xff``. Text
that holds none of them (what ``str.isprintable`` accepts) is printed as it is; in
text that needed escaping, backslashes are doubled so the escapes read one way.
JSON output needs none of this: ``json.dumps`` escapes control characters itself.
"""

from __future__ import annotations

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


def printable(text: str) -> str:
    """``text`` with every character a terminal could act on escaped visibly (see the
    module docstring); ``text`` itself when it holds none."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() and c != "\\" else _escape(c) for c in text)
