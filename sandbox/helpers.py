"""Helper functions handed to monitor programs as globals.

They run unrestricted host code, so each one takes and returns plain data only
(str, numbers, tuples, read-only FrozenDicts), keeps no state between candidates
(the compiled-pattern cache lives in the candidate's own child process), and bounds
its inputs. Regular expressions use RE2 (``google-re2``): matching is linear in the
input, so no pattern can backtrack catastrophically; the sandbox's CPU and wall
limits stay as the last line of defence.

Reference shown to program authors (and to the LLM proposer):

=====================================  ==================================================
helper                                 returns
=====================================  ==================================================
``re_search(pattern, text)``           ``True`` if the RE2 pattern matches anywhere
``re_first(pattern, text, group=0)``   text of the first match (or of ``group``), or None
``re_findall(pattern, text)``          tuple of matches (tuples of groups if it has groups)
``re_count(pattern, text)``            number of non-overlapping matches
``re_sub(pattern, repl, text)``        text with matches replaced (``\\1`` refers to groups)
``re_split(pattern, text)``            tuple of pieces
``count_matching(pattern, items)``     how many strings in ``items`` match the pattern
``json_parse(text)``                   parsed JSON as read-only data, or None if invalid
``url_parse(url)``                     read-only dict: scheme, host, port, path, query,
                                       query_all, user, fragment (None if unparsable)
``entropy(text)``                      Shannon entropy in bits per character
``tokens(text, lower=True)``           tuple of word tokens (letters, digits, ``_``)
``ngrams(seq, n)``                     tuple of n-grams: substrings for text, tuples else
``clamp(x, lo=0.0, hi=1.0)``           x limited to [lo, hi]
``sigmoid(x)``                         1 / (1 + e^-x), overflow-safe
``log1p(x)``                           log(1 + x)
``safe_div(a, b, default=0.0)``        a / b, or ``default`` when b == 0
``mean(values)``                       arithmetic mean, 0.0 for no values
``math.<name>``                        read-only math functions and constants:
                                       sqrt log log2 log10 log1p exp expm1 floor ceil
                                       fabs tanh sin cos atan atan2 hypot copysign isfinite
                                       isnan isinf fsum pow erf inf pi e
=====================================  ==================================================

Patterns are RE2 syntax (Python-like; no look-around, no backreferences in the
pattern); use ``(?i)`` for case-insensitive matching. Patterns are limited to
1,000 characters and texts to 2,000,000 characters; larger inputs raise ValueError.
``re_findall``, ``re_count`` and ``re_split`` stop with ValueError past 100,000
matches, and ``ngrams`` past 1,000,000 n-grams: every helper's cost is bounded by
its arguments' caps, so no call can run for seconds inside host code.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import re2

from monsearch.views.frozen import FrozenDict, freeze
from monsearch.views.secrets import shannon_entropy

MAX_PATTERN_CHARS = 1_000
MAX_TEXT_CHARS = 2_000_000
MAX_REPL_CHARS = 1_000
MAX_OUTPUT_CHARS = 8_000_000
MAX_NGRAM = 16
MAX_MATCHES = 100_000
MAX_NGRAMS = 1_000_000
PATTERN_CACHE_SIZE = 512

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # errors come back as ValueError, not stderr noise
_RE2_OPTIONS.max_mem = 32 << 20  # per-pattern automaton memory budget


@lru_cache(maxsize=PATTERN_CACHE_SIZE)
def _compile(pattern: str) -> Any:
    try:
        return re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as exc:
        detail = (
            exc.args[0].decode("utf-8", "replace")
            if exc.args and isinstance(exc.args[0], bytes)
            else str(exc)
        )
        raise ValueError(
            f"invalid or unsupported pattern {pattern[:80]!r}: {detail} "
            "(RE2 syntax: no look-around, no backreferences)"
        ) from None


def _pattern(pattern: Any) -> Any:
    if type(pattern) is not str:
        raise TypeError("pattern must be a string")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(f"pattern longer than {MAX_PATTERN_CHARS} characters")
    return _compile(pattern)


def _text(text: Any, what: str = "text") -> str:
    if type(text) is not str:
        if text is None:
            return ""
        raise TypeError(f"{what} must be a string, got {type(text).__name__}")
    if len(text) > MAX_TEXT_CHARS:
        raise ValueError(f"{what} longer than {MAX_TEXT_CHARS} characters")
    return text


# google-re2's Python wrapper re-encodes the text and maps byte offsets back to
# characters in Python on every call: most of a helper's cost on short texts. On
# ASCII text (``str.isascii`` is O(1)) byte and character offsets coincide, so the
# helpers call the compiled RE2 object directly with the same matching loop; the
# results are the wrapper's. Without the real engine (a plugin's stdlib stand-in)
# ``_native`` is None and only the wrapper is used.
_UNANCHORED = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
_NULL_SPAN = (-1, -1)


# Evolved programs run several detectors of one family, each calling the same helper
# on the same short fields (``re_sub`` on every request path, ``tokens`` on every
# command...). The helpers are pure functions of their arguments and return immutable
# values, so their results on short texts are remembered for the rest of the child
# process; the memo is bounded (entries and text length) and starts empty in every
# candidate's child, like the pattern cache.
MEMO_MAX_TEXT = 4096
MEMO_SIZE = 1024
_memo: dict[tuple[Any, ...], Any] = {}
_memo_get = _memo.get
_UNSEEN = object()


# A remembered result needs no checks: its key holds the exact pattern and text (and
# repl, group) that once passed them, and they pass again. So each helper looks its
# key up first when the arguments have their exact types and the text is short
# enough to be remembered, and only on a miss validates and computes: a hit costs a
# tuple, a dict probe and the pattern-cache lookup every call makes (kept so that
# cache sees the same calls as before), none of the checking and wrapping calls.


def _remember(key: tuple[Any, ...], value: Any) -> Any:
    if len(_memo) >= MEMO_SIZE:
        _memo.clear()
    _memo[key] = value
    return value


def _memoized(key: tuple[Any, ...], source: str, compute: Any, *args: Any) -> Any:
    """``compute(*args)``, remembered under ``key`` when ``source`` is short."""
    if len(source) > MEMO_MAX_TEXT:
        return compute(*args)
    found = _memo_get(key, _UNSEEN)
    if found is not _UNSEEN:
        return found
    return _remember(key, compute(*args))


def _native(compiled: Any, text: str) -> Any:
    """The engine's own RE2 object when ``text`` can take the fast path, else None."""
    if _UNANCHORED is None or not text.isascii():
        return None
    return getattr(compiled, "_regexp", None)


def _spans(native: Any, text: str) -> Any:
    """Span lists of successive matches, as the wrapper's ``finditer`` finds them."""
    data = text.encode("ascii")
    pos, end = 0, len(data)
    match = native.Match
    while True:
        spans = match(_UNANCHORED, data, pos, end)
        if spans[0] == _NULL_SPAN:
            return
        yield spans
        if pos == end:
            return
        pos = pos + 1 if pos == spans[0][1] else spans[0][1]


def re_search(pattern: str, text: str) -> bool:
    """True if ``pattern`` matches anywhere in ``text`` (None counts as "")."""
    if type(pattern) is str and type(text) is str and len(text) <= MEMO_MAX_TEXT:
        found = _memo_get(("search", pattern, text), _UNSEEN)
        if found is not _UNSEEN:
            _compile(pattern)
            return found
    compiled = _pattern(pattern)
    source = _text(text)
    return _memoized(("search", pattern, source), source, _search, compiled, source)


def _search(compiled: Any, source: str) -> bool:
    native = _native(compiled, source)
    if native is not None:
        return native.Match(_UNANCHORED, source.encode("ascii"), 0, len(source))[0] != _NULL_SPAN
    return compiled.search(source) is not None


def re_first(pattern: str, text: str, group: int = 0) -> str | None:
    """The first match (or its ``group``), or None."""
    if type(group) is not int:
        raise TypeError("group must be an int")
    if type(pattern) is str and type(text) is str and len(text) <= MEMO_MAX_TEXT:
        found = _memo_get(("first", pattern, text, group), _UNSEEN)
        if found is not _UNSEEN:
            _compile(pattern)
            return found
    compiled = _pattern(pattern)
    source = _text(text)
    return _memoized(("first", pattern, source, group), source, _first, compiled, source, group)


def _first(compiled: Any, source: str, group: int) -> str | None:
    native = _native(compiled, source)
    if native is not None:
        spans = native.Match(_UNANCHORED, source.encode("ascii"), 0, len(source))
        if spans[0] == _NULL_SPAN:
            return None
        if not 0 <= group < len(spans):
            raise IndexError("bad group index")
        start, stop = spans[group]
        return None if start == -1 else source[start:stop]
    m = compiled.search(source)
    if m is None:
        return None
    value = m.group(group)
    return value if isinstance(value, str) else None


def _matches(pattern: str, text: str) -> Any:
    """The pattern's matches in ``text``, refusing more than :data:`MAX_MATCHES`.

    An empty-matching pattern over a long text yields millions of matches at a few
    microseconds each: seconds of host time for one call without this cap.
    """
    for n, m in enumerate(_pattern(pattern).finditer(_text(text))):
        if n >= MAX_MATCHES:
            raise ValueError(f"more than {MAX_MATCHES:,} matches")
        yield m


def _native_matches(native: Any, text: str) -> Any:
    """:func:`_matches` on the fast path: span lists, same cap."""
    for n, spans in enumerate(_spans(native, text)):
        if n >= MAX_MATCHES:
            raise ValueError(f"more than {MAX_MATCHES:,} matches")
        yield spans


def _findall_item(m: Any) -> Any:
    groups = m.groups()
    if not groups:
        return m.group(0)
    if len(groups) == 1:
        return groups[0] if groups[0] is not None else ""
    return tuple(g if g is not None else "" for g in groups)


def _findall_spans(spans: Any, text: str) -> Any:
    if len(spans) == 1:
        start, stop = spans[0]
        return text[start:stop]
    if len(spans) == 2:
        start, stop = spans[1]
        return "" if start == -1 else text[start:stop]
    return tuple("" if start == -1 else text[start:stop] for start, stop in spans[1:])


def re_findall(pattern: str, text: str) -> tuple[Any, ...]:
    """All non-overlapping matches, like ``re.findall`` but as a tuple."""
    if type(pattern) is str and type(text) is str and len(text) <= MEMO_MAX_TEXT:
        found = _memo_get(("findall", pattern, text), _UNSEEN)
        if found is not _UNSEEN:
            _compile(pattern)
            return found
    compiled = _pattern(pattern)
    source = _text(text)
    return _memoized(("findall", pattern, source), source, _findall, compiled, pattern, source)


def _findall(compiled: Any, pattern: str, source: str) -> tuple[Any, ...]:
    native = _native(compiled, source)
    if native is not None:
        return _native_findall(native, source)
    return tuple(_findall_item(m) for m in _matches(pattern, source))


def _native_findall(native: Any, text: str) -> tuple[Any, ...]:
    """:func:`_findall` on the fast path: the matches of :func:`_spans`, same cap.

    One loop rather than a generator chain: programs run findall over whole
    observations (every JSON object, every e-mail), where resuming two generators
    per match was most of the call.
    """
    data = text.encode("ascii")
    pos, end = 0, len(data)
    match = native.Match
    found: list[Any] = []
    while True:
        spans = match(_UNANCHORED, data, pos, end)
        if spans[0] == _NULL_SPAN:
            return tuple(found)
        if len(found) >= MAX_MATCHES:
            raise ValueError(f"more than {MAX_MATCHES:,} matches")
        found.append(_findall_spans(spans, text))
        if pos == end:
            return tuple(found)
        pos = pos + 1 if pos == spans[0][1] else spans[0][1]


def re_count(pattern: str, text: str) -> int:
    """Number of non-overlapping matches."""
    if type(pattern) is str and type(text) is str and len(text) <= MEMO_MAX_TEXT:
        found = _memo_get(("count", pattern, text), _UNSEEN)
        if found is not _UNSEEN:
            _compile(pattern)
            return found
    compiled = _pattern(pattern)
    source = _text(text)
    return _memoized(("count", pattern, source), source, _count, compiled, pattern, source)


def _count(compiled: Any, pattern: str, source: str) -> int:
    native = _native(compiled, source)
    if native is not None:
        return sum(1 for _ in _native_matches(native, source))
    return sum(1 for _ in _matches(pattern, source))


def re_sub(pattern: str, repl: str, text: str) -> str:
    """``text`` with every match replaced by ``repl`` (``\\1``.. name groups)."""
    if type(repl) is not str:
        raise TypeError("repl must be a string (functions are not accepted)")
    if len(repl) > MAX_REPL_CHARS:
        raise ValueError(f"repl longer than {MAX_REPL_CHARS} characters")
    if type(pattern) is str and type(text) is str and len(text) <= MEMO_MAX_TEXT:
        found = _memo_get(("sub", pattern, repl, text), _UNSEEN)
        if found is not _UNSEEN:
            _compile(pattern)
            return found
    compiled = _pattern(pattern)
    source = _text(text)
    return _memoized(("sub", pattern, repl, source), source, _sub, compiled, repl, source)


def _sub(compiled: Any, repl: str, source: str) -> str:
    if "\\" not in repl and repl.isascii():
        # A literal replacement (the wrapper's template expansion leaves it as is).
        native = _native(compiled, source)
        if native is not None:
            return _native_sub(native, repl, source)
    if not repl:
        return compiled.sub(repl, source)
    # Bound the output while building it: every match may add len(repl) characters,
    # so replace at most as many matches as fit, plus one to detect overflow.
    allowed = max(0, (MAX_OUTPUT_CHARS - len(source)) // len(repl))
    out, n = compiled.subn(repl, source, count=allowed + 1)
    if n > allowed:
        raise ValueError("re_sub result would be too large")
    return out


def _native_sub(native: Any, repl: str, source: str) -> str:
    """:func:`re_sub` of a literal ``repl`` on the fast path (same output cap)."""
    # As in re_sub: an empty repl is unbounded, else at most allowed + 1 matches.
    allowed = max(0, (MAX_OUTPUT_CHARS - len(source)) // len(repl)) if repl else -1
    pieces = []
    end = n = 0
    for spans in _spans(native, source):
        if n == allowed + 1 and repl:
            break
        start, stop = spans[0]
        pieces.append(source[end:start])
        pieces.append(repl)
        end = stop
        n += 1
    if not n:
        return source
    if repl and n > allowed:
        raise ValueError("re_sub result would be too large")
    pieces.append(source[end:])
    return "".join(pieces)


def re_split(pattern: str, text: str) -> tuple[str, ...]:
    """Pieces of ``text`` between matches (captured groups included, like re.split)."""
    if type(pattern) is str and type(text) is str and len(text) <= MEMO_MAX_TEXT:
        found = _memo_get(("split", pattern, text), _UNSEEN)
        if found is not _UNSEEN:
            _compile(pattern)
            return found
    compiled = _pattern(pattern)
    source = _text(text)
    return _memoized(("split", pattern, source), source, _split, compiled, source)


def _split(compiled: Any, source: str) -> tuple[str, ...]:
    pieces = compiled.split(source, maxsplit=MAX_MATCHES + 1)
    if len(pieces) > MAX_MATCHES + 1:
        raise ValueError(f"more than {MAX_MATCHES:,} matches")
    return tuple(x if isinstance(x, str) else "" for x in pieces)


def count_matching(pattern: str, items: Iterable[Any]) -> int:
    """How many strings in ``items`` the pattern matches (non-strings are skipped)."""
    compiled = _pattern(pattern)
    n = 0
    for item in items:
        if type(item) is str and len(item) <= MAX_TEXT_CHARS:
            native = _native(compiled, item)
            if native is not None:
                n += native.Match(_UNANCHORED, item.encode("ascii"), 0, len(item))[0] != _NULL_SPAN
            elif compiled.search(item) is not None:
                n += 1
    return n


def json_parse(text: str) -> Any:
    """Parsed JSON as read-only data (FrozenDict / tuple / leaves); None if not valid JSON."""
    source = _text(text)
    try:
        value = json.loads(source, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return None
    try:
        return freeze(value)
    except RecursionError:
        return None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}


def url_parse(url: str) -> FrozenDict | None:
    """Split a URL into a read-only dict; a URL without a scheme is read as http://.

    Keys: scheme, host (lower case), port (explicit or the scheme's default, else
    None), path, query (first value per key), query_all (tuple of values per key),
    user, fragment. None when the text is not a URL.
    """
    text = _text(url, "url").strip()
    if not text:
        return None
    if "://" not in text[:16]:
        text = "http://" + text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname:
        return None
    scheme = parts.scheme.lower()
    if port is None:
        port = _DEFAULT_PORTS.get(scheme)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query: dict[str, str] = {}
    query_all: dict[str, list[str]] = {}
    for key, value in pairs:
        query.setdefault(key, value)
        query_all.setdefault(key, []).append(value)
    return freeze(
        {
            "scheme": scheme,
            "host": parts.hostname.lower(),
            "port": port,
            "path": parts.path or "/",
            "query": query,
            "query_all": query_all,
            "user": parts.username,
            "fragment": parts.fragment,
        }
    )


def entropy(text: str) -> float:
    """Shannon entropy of ``text`` in bits per character (0.0 for "")."""
    return shannon_entropy(_text(text))


_TOKEN = re.compile(r"[A-Za-z0-9_]+")


def tokens(text: str, lower: bool = True) -> tuple[str, ...]:
    """Word tokens (runs of letters, digits and ``_``), lower-cased by default."""
    source = _text(text)
    lower = bool(lower)
    return _memoized(("tokens", source, lower), source, _tokens, source, lower)


def _tokens(source: str, lower: bool) -> tuple[str, ...]:
    if lower:
        source = source.lower()
    return tuple(_TOKEN.findall(source))


def ngrams(seq: Any, n: int) -> tuple[Any, ...]:
    """n-grams of a string (substrings) or of a sequence (tuples)."""
    if type(n) is not int or not 1 <= n <= MAX_NGRAM:
        raise ValueError(f"n must be an int in 1..{MAX_NGRAM}")
    if type(seq) is str:
        items: Any = _text(seq)
    else:
        items = tuple(seq)
    if len(items) - n + 1 > MAX_NGRAMS:
        raise ValueError(f"more than {MAX_NGRAMS:,} n-grams")
    return tuple(items[i : i + n] for i in range(len(items) - n + 1))


def _number(x: Any, what: str = "x") -> float:
    if type(x) not in (int, float, bool):
        raise TypeError(f"{what} must be a number, got {type(x).__name__}")
    return float(x)


def clamp(x: float, lo: float = 0.0, hi: float = 1.0) -> float:
    """``x`` limited to ``[lo, hi]``."""
    value, low, high = _number(x), _number(lo, "lo"), _number(hi, "hi")
    return low if value < low else high if value > high else value


def sigmoid(x: float) -> float:
    """The logistic function, without overflow for large ``|x|``."""
    value = _number(x)
    if value >= 0:
        return 1.0 / (1.0 + math.exp(-value))
    z = math.exp(value)
    return z / (1.0 + z)


def log1p(x: float) -> float:
    """``log(1 + x)``."""
    return math.log1p(_number(x))


def safe_div(a: float, b: float, default: float = 0.0) -> float:
    """``a / b``, or ``default`` when ``b`` is zero."""
    num, den = _number(a, "a"), _number(b, "b")
    return _number(default, "default") if den == 0 else num / den


def mean(values: Iterable[Any]) -> float:
    """Arithmetic mean of numbers, 0.0 for none."""
    items = [_number(v, "value") for v in values]
    return math.fsum(items) / len(items) if items else 0.0


_MATH_NAMES = (
    "sqrt", "log", "log2", "log10", "log1p", "exp", "expm1", "floor", "ceil", "fabs", "tanh",
    "sin", "cos", "atan", "atan2", "hypot", "copysign", "isfinite", "isnan", "isinf", "fsum",
    "pow", "erf", "inf", "pi", "e",
)  # fmt: skip

#: A read-only namespace of math functions (never the module itself: modules reach
#: other modules through their attributes).
MATH: FrozenDict = FrozenDict({name: getattr(math, name) for name in _MATH_NAMES})

HELPERS: Mapping[str, Callable[..., Any] | FrozenDict] = FrozenDict(
    {
        "re_search": re_search,
        "re_first": re_first,
        "re_findall": re_findall,
        "re_count": re_count,
        "re_sub": re_sub,
        "re_split": re_split,
        "count_matching": count_matching,
        "json_parse": json_parse,
        "url_parse": url_parse,
        "entropy": entropy,
        "tokens": tokens,
        "ngrams": ngrams,
        "clamp": clamp,
        "sigmoid": sigmoid,
        "log1p": log1p,
        "safe_div": safe_div,
        "mean": mean,
        "math": MATH,
    }
)


def helper_reference() -> str:
    """The helper table above, for prompts and ``--help`` texts."""
    doc = __doc__ or ""
    start = doc.index("=====")
    end = doc.rindex("=====") + len("=====")
    end = doc.index("\n", end) if "\n" in doc[end:] else len(doc)
    tail = doc[end:].strip()
    return doc[start:end].strip() + "\n\n" + tail
