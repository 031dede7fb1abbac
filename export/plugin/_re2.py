"""The regex engine behind the program's ``re_*`` helpers: google-re2, as in the sandbox.

RE2 matches in time linear in the text. Python's ``re`` backtracks: ``^(a+)+$`` takes
minutes on a 35-character input (twice as long for each character more), ``\\s+$``
seconds on a few thousand characters of whitespace; the agent the monitor watches
writes that text. No
static check of the program's patterns is sound against that (patterns may be built at
run time, and most unbounded repeats backtrack polynomially), so the plugin depends on
google-re2 and refuses to load without it rather than run the program on ``re``.

The engine and its wrapper are google-re2's own; for ASCII text the wrapper's str
offset bookkeeping is skipped (``_FastRegexp``), which gives the same matches and spans.
"""

from __future__ import annotations

from typing import Any

try:
    import re2 as _engine
except ImportError as exc:  # pragma: no cover - exercised in a fresh interpreter (tests)
    raise ImportError(
        "this monsearch monitor needs google-re2 (pip install 'google-re2>=1.1,<2'): its "
        "regex helpers run on RE2, whose matching time is linear in the text; on Python's "
        "re, text the monitored agent writes can stall a pattern for minutes or more"
    ) from exc

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
