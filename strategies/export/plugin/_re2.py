"""The regex engine behind the program's ``re_*`` helpers.

monsearch's sandbox runs the helpers on RE2 (``google-re2``). When that package
is installed here too, it is used (its own engine and wrapper, with a shorter str
path for ASCII text), so matching is the sandbox's. Without
it, patterns are translated from RE2 syntax to stdlib ``re`` with the same
meaning: ``\\d \\w \\s \\b`` stay ASCII as in RE2, ``$`` means end of text unless
``(?m)``, POSIX classes are expanded, and what RE2 refuses (look-around,
backreferences, possessive and atomic groups) is refused here too. Iteration,
``split`` and ``sub`` follow the google-re2 wrapper's rules. Constructs with no
exact stdlib equivalent (``\\p{..}``, ``(?U)``, flags in mid-group) raise
:data:`error`, so the program sees the same failure mode as a refused pattern;
``monsearch export`` checks the program's literal patterns and makes google-re2
a hard dependency of the plugin when any of them needs it.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import re
from typing import Any

try:  # the sandbox's own engine, unless the host asks for the fallback (tests do)
    if os.environ.get("MONSEARCH_PLUGIN_NO_RE2"):
        raise ImportError
    import re2 as _engine
except ImportError:
    _engine = None

ENGINE = "re2" if _engine is not None else "re"


class _FallbackError(Exception):
    pass


class _FallbackOptions:
    __slots__ = ("log_errors", "max_mem")

    def __init__(self) -> None:
        self.log_errors = True
        self.max_mem = 8 << 20


_WORD = "0-9A-Za-z_"
_SPACE = "\\t\\n\\f\\r "
_BOUNDARY = f"(?:(?<=[{_WORD}])(?![{_WORD}])|(?<![{_WORD}])(?=[{_WORD}]))"
_NOT_BOUNDARY = f"(?:(?<=[{_WORD}])(?=[{_WORD}])|(?<![{_WORD}])(?![{_WORD}]))"
_OUTSIDE = {
    "d": "[0-9]",
    "D": "[^0-9]",
    "w": f"[{_WORD}]",
    "W": f"[^{_WORD}]",
    "s": f"[{_SPACE}]",
    "S": f"[^{_SPACE}]",
    "b": _BOUNDARY,
    "B": _NOT_BOUNDARY,
    "z": "\\Z",
    "A": "\\A",
}
_INSIDE = {"d": "0-9", "w": _WORD, "s": _SPACE}
_POSIX = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": _WORD,
    "xdigit": "0-9A-Fa-f",
}
_FLAGS = re.compile(r"\(\?([imsU]*)(?:-([imsU]*))?([):])")


def _refuse(what: str) -> _FallbackError:
    return _FallbackError(f"{what} (not supported by RE2, or not portable without google-re2)")


def translate(pattern: str) -> str:
    """``pattern`` (RE2 syntax) as a stdlib ``re`` pattern with the same matches."""
    out: list[str] = []
    closers: list[int] = [0]  # extra ")" to emit when each open group closes
    multiline = bool(re.search(r"\(\?[imsU]*m", pattern))
    i, n = 0, len(pattern)
    group_start = True
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n:
                raise _refuse("trailing backslash")
            e = pattern[i + 1]
            if e in _OUTSIDE:
                out.append(_OUTSIDE[e])
            elif e.isdigit():
                raise _refuse("backreference")
            elif e in "pPCX":
                raise _refuse(f"\\{e}")
            elif e == "Q":
                end = pattern.find("\\E", i + 2)
                end = n if end < 0 else end
                out.append(re.escape(pattern[i + 2 : end]))
                i = end + 2
                group_start = False
                continue
            elif e == "x" and i + 2 < n and pattern[i + 2] == "{":
                end = pattern.index("}", i + 3)
                out.append(f"\\U{int(pattern[i + 3 : end], 16):08x}")
                i = end + 1
                group_start = False
                continue
            else:
                out.append(c + e)
            i += 2
        elif c == "[":
            i = _char_class(pattern, i, out)
        elif c == "(":
            m = _FLAGS.match(pattern, i)
            if pattern.startswith(("(?=", "(?!", "(?<=", "(?<!", "(?>", "(?(", "(?P=", "(?#"), i):
                raise _refuse("look-around, atomic group, conditional or backreference")
            if m and (m.group(1) or m.group(2)):
                if "U" in (m.group(1) or "") + (m.group(2) or ""):
                    raise _refuse("(?U)")
                if m.group(3) == ")":
                    if not group_start:
                        raise _refuse("inline flags after the start of a group")
                    # RE2 applies them to the rest of the group: scope them to it.
                    out.append(m.group(0)[:-1] + ":")
                    closers[-1] += 1
                else:
                    out.append(m.group(0))
                    closers.append(0)
                i = m.end()
                group_start = m.group(3) == ")"
                continue
            if pattern.startswith("(?<", i) and not pattern.startswith("(?<=", i):
                out.append("(?P<")
                i += 3
            else:
                j = i + 3 if pattern.startswith(("(?:", "(?P"), i) else i + 1
                out.append(pattern[i:j])
                i = j
            closers.append(0)
            group_start = True
            continue
        elif c == ")":
            extra = closers.pop() if len(closers) > 1 else 0
            out.append(")" * extra + ")")
            i += 1
        elif c == "$":
            out.append("$" if multiline else "\\Z")
            i += 1
        elif c in "*+?}" and i + 1 < n and pattern[i + 1] == "+":
            raise _refuse("possessive quantifier")
        else:
            out.append(c)
            i += 1
        group_start = c == "|"  # flags may open an alternative too
    out.append(")" * closers[0])
    return "".join(out)


def _char_class(pattern: str, i: int, out: list[str]) -> int:
    n = len(pattern)
    j = i + 1
    parts = ["["]
    if j < n and pattern[j] == "^":
        parts.append("^")
        j += 1
    first = True
    while j < n:
        c = pattern[j]
        if c == "]" and not first:
            parts.append("]")
            out.append("".join(parts))
            return j + 1
        first = False
        if c == "[" and pattern.startswith("[:", j):
            end = pattern.find(":]", j + 2)
            name = pattern[j + 2 : end] if end > 0 else ""
            if name not in _POSIX:
                raise _refuse(f"character class [:{name}:]")
            parts.append(_POSIX[name])
            j = end + 2
        elif c == "\\":
            e = pattern[j + 1] if j + 1 < n else ""
            if e in _INSIDE:
                parts.append(_INSIDE[e])
            elif e in "DWSpPbBzAQC" or e.isdigit():
                raise _refuse(f"\\{e} inside a character class")
            else:
                parts.append(c + e)
            j += 2
        elif c in "[&~|":
            parts.append("\\" + c)  # literal in RE2; a set operator to future stdlib re
            j += 1
        elif c == "-" and j + 1 < n and pattern[j + 1] == "-":
            parts.append("\\-")
            j += 1
        else:
            parts.append(c)
            j += 1
    raise _refuse("unterminated character class")


_OCTAL = re.compile(r"\\[0-7][0-7][0-7]")
_GROUP = re.compile(r"\\[1-9][0-9]?|\\g<\w+>")


def _template(template: str) -> list[str]:
    """Even items literal text (still escaped), odd items group references."""
    pieces = [""]
    index = template.find("\\")
    while index != -1:
        piece, template = template[:index], template[index:]
        pieces[-1] += piece
        group = _GROUP.match(template)
        if not _OCTAL.match(template) and group:
            index = group.end()
            pieces.extend((template[:index], ""))
        else:
            index = 2
            pieces[-1] += template[:index]
        template = template[index:]
        index = template.find("\\")
    pieces[-1] += template
    return pieces


class _Pattern:
    """A compiled fallback pattern with the google-re2 wrapper's iteration rules."""

    __slots__ = ("_rx", "groups")

    def __init__(self, rx: re.Pattern[str]) -> None:
        self._rx = rx
        self.groups = rx.groups

    def search(self, text: str) -> Any:
        return self._rx.search(text)

    def finditer(self, text: str) -> Any:
        pos, end = 0, len(text)
        search = self._rx.search
        while True:
            m = search(text, pos)
            if m is None:
                return
            yield m
            if pos == end:
                return
            pos = pos + 1 if pos == m.end() else m.end()

    def _split(self, cb: Any, text: str, limit: int) -> tuple[list[str], int]:
        pieces: list[Any] = []
        end = n = 0
        for m in self.finditer(text):
            if limit > 0 and n >= limit:
                break
            pieces.append(text[end : m.start()])
            pieces.extend(cb(m))
            end = m.end()
            n += 1
        pieces.append(text[end:])
        return pieces, n

    def split(self, text: str, maxsplit: int = 0) -> list[Any]:
        if maxsplit < 0:
            return [text]
        groups = range(1, self.groups + 1)
        return self._split(lambda m: [m.group(g) for g in groups], text, maxsplit)[0]

    def _expand(self, m: Any, template: str) -> str:
        pieces = _template(template)
        for k, piece in enumerate(pieces):
            if k % 2 == 0:
                pieces[k] = codecs.unicode_escape_decode(piece)[0]
            else:
                ref: Any = piece[1:] if len(piece) <= 3 else piece[3:-1]
                with contextlib.suppress(ValueError):
                    ref = int(ref)
                pieces[k] = m.group(ref) or ""
        return "".join(pieces)

    def subn(self, repl: str, text: str, count: int = 0) -> tuple[str, int]:
        pieces, n = self._split(lambda m: [self._expand(m, repl)], text, count)
        return "".join(pieces), n

    def sub(self, repl: str, text: str, count: int = 0) -> str:
        return self.subn(repl, text, count)[0]


def _fallback_compile(pattern: str, options: Any = None) -> _Pattern:
    try:
        return _Pattern(re.compile(translate(pattern)))
    except (re.error, ValueError, OverflowError) as exc:
        raise _FallbackError(str(exc)) from None


if _engine is not None:
    _NULL_SPAN = (-1, -1)

    class _FastMatch(_engine._Match):
        """google-re2's match, with group lookups that skip a C call per group."""

        __slots__ = ()

        def __getitem__(self, group: Any) -> Any:
            # ``_spans`` holds one span per group (0..groups), so its length bounds
            # the index exactly as google-re2's own check does; names go the slow way.
            if type(group) is int and 0 <= group < len(self._spans):
                span = self._spans[group]
                return None if span == _NULL_SPAN else self._text[span[0] : span[1]]
            return _engine._Match.__getitem__(self, group)

        def groups(self, default: Any = None) -> tuple[Any, ...]:
            get = self.__getitem__
            return tuple(
                default if item is None else item
                for item in (get(g) for g in range(1, len(self._spans)))
            )

    class _FastRegexp(_engine._Regexp):
        """google-re2's pattern, minus its str offset bookkeeping for ASCII text.

        The wrapper encodes every str to UTF-8 and maps byte offsets back to
        characters in Python, about a third of a call on the short texts programs
        pass; for ASCII text the two offsets are equal, so the loop is google-re2's
        own bytes loop on the same engine (same matches, same spans).
        """

        __slots__ = ()

        def _match(self, anchor: Any, text: Any, pos: Any = None, endpos: Any = None) -> Any:
            if type(text) is not str or not text.isascii():
                yield from _engine._Regexp._match(self, anchor, text, pos, endpos)
                return
            n = len(text)
            pos = 0 if pos is None else max(0, min(pos, n))
            endpos = n if endpos is None else max(0, min(endpos, n))
            if pos > endpos:
                return
            encoded = text.encode("ascii")
            match = self._regexp.Match
            at = pos
            while True:
                spans = match(anchor, encoded, at, endpos)
                if spans[0] == _NULL_SPAN:
                    return
                yield _FastMatch(self, text, pos, endpos, spans)
                if at == endpos:
                    return
                at = at + 1 if at == spans[0][1] else spans[0][1]

    def _fast_compile(pattern: Any, options: Any = None) -> Any:
        compiled = _engine.compile(pattern, options)
        fast = object.__new__(_FastRegexp)
        fast._pattern = compiled._pattern
        fast._regexp = compiled._regexp
        return fast

    Options = _engine.Options
    _Anchor = _engine._Anchor  # for callers that drive the compiled RE2 object directly
    compile = _fast_compile  # noqa: A001 - the module's API
    error = _engine.error
else:
    Options = _FallbackOptions
    compile = _fallback_compile  # noqa: A001
    error = _FallbackError


def portable(pattern: str) -> str | None:
    """None if ``pattern`` works without google-re2, else why not."""
    try:
        _fallback_compile(pattern)
    except _FallbackError as exc:
        return str(exc)
    return None
