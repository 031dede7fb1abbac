"""Keeping API keys out of what a run stores: model answers, error texts, log lines.

A model (or a proxy in front of it) can echo the key it was sent, and not only
verbatim. The rule: a text is stored as it is only if it holds no *fragment* of a
configured key, that is no run of :data:`FRAGMENT` consecutive characters of the key
(the whole key when it is shorter), in any of these forms:

- as it is, or reversed;
- hex of the key's UTF-8 bytes, either case (``\\x``, ``0x``, ``:`` and ``,`` between
  the bytes are ignored);
- base64 of the key inside any longer text (all three byte alignments), standard or
  URL-safe alphabet;
- percent-encoded (the text is percent-decoded before looking);

each looked for after removing whitespace, so a key split by spaces or across lines
is still found. Verbatim occurrences of the whole key are first replaced by
``[redacted]`` (the rest of the text stays useful); a text that still holds a
fragment after that is replaced whole by a notice giving its length and the start
of its sha256, never stored in part. Keys shorter than :data:`MIN_FRAGMENT_KEY`
characters (local servers' placeholders such as ``ollama``) are only redacted
verbatim: fragments that short would match ordinary text.

Each search is one pass over the text (sampled q-grams, verified against a set of
the key's fragments), so a megabyte answer costs milliseconds, not a search per
fragment.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable
from urllib.parse import unquote

__all__ = ["FRAGMENT", "MIN_FRAGMENT_KEY", "REDACTED", "KeyScrubber"]

#: Length of the shortest run of a key's characters that is never stored.
FRAGMENT = 12
#: Keys shorter than this are redacted verbatim only.
MIN_FRAGMENT_KEY = 8
REDACTED = "[redacted]"

# Whitespace and the invisible characters that can split a key without showing.
_BLANKS = re.compile(r"[\s\u00ad\u200b-\u200f\u2060\ufeff]+")
_HEX_JOINERS = re.compile(r"\\x|0x|[:,]")


def _fragments(source: str, m: int) -> set[str]:
    return {source[i : i + m] for i in range(len(source) - m + 1)}


class _Fragments:
    """Every length-``m`` run of some source strings, found in a text in one pass.

    Any occurrence of a length-``m`` run contains a q-gram starting at a multiple of
    ``m - q + 1``; only those positions are looked up, and a hit is verified against
    the set of runs around it.
    """

    def __init__(self, sources: Iterable[str], m: int) -> None:
        self.m = m
        self.q = max(1, m // 3)
        self.step = m - self.q + 1
        self.runs: set[str] = set()
        for s in sources:
            self.runs |= _fragments(s, m)
        self.grams = {r[j : j + self.q] for r in self.runs for j in range(m - self.q + 1)}

    def found_in(self, text: str) -> bool:
        m, q, n = self.m, self.q, len(text)
        if not self.runs or n < m:
            return False
        runs, grams = self.runs, self.grams
        for p in range(0, n - q + 1, self.step):
            if text[p : p + q] in grams:
                for i in range(max(0, p - (m - q)), min(p, n - m) + 1):
                    if text[i : i + m] in runs:
                        return True
        return False


def _base64_cores(data: bytes) -> list[str]:
    """The base64 characters that depend on ``data`` alone, for each alignment of ``data``
    inside a longer byte string (0, 1 or 2 bytes before it in its 3-byte group)."""
    cores = []
    for align in range(3):
        encoded = base64.b64encode(b"\0" * align + data + b"\0\0").decode("ascii")
        first = -(-8 * align // 6)  # the first character made only of data's bits
        last = (8 * (align + len(data))) // 6  # one past the last such character
        cores.append(encoded[first:last])
    return cores


class KeyScrubber:
    """The scrub of one set of keys (see the module doc)."""

    def __init__(self, keys: Iterable[str]) -> None:
        self.keys = sorted({k for k in keys if k}, key=len, reverse=True)
        plain: dict[int, set[str]] = {}
        hexed: dict[int, set[str]] = {}
        b64: dict[int, set[str]] = {}
        for key in self.keys:
            if len(key) < MIN_FRAGMENT_KEY:
                continue
            w = min(FRAGMENT, len(key))
            data = key.encode("utf-8")
            plain.setdefault(w, set()).update((key, key[::-1]))
            shortest = min(len(key[i : i + w].encode("utf-8")) for i in range(len(key) - w + 1))
            hexed.setdefault(2 * shortest, set()).add(data.hex())
            # A run of w characters covers 8w bits; wherever they start, at least
            # (8w - 4) // 6 whole base64 characters are made of them alone.
            cores = _base64_cores(data)
            urlsafe = [c.replace("+", "-").replace("/", "_") for c in cores]
            b64.setdefault((8 * w - 4) // 6, set()).update(cores + urlsafe)
        self._plain = [_Fragments(s, m) for m, s in plain.items()]
        self._hex = [_Fragments(s, m) for m, s in hexed.items()]
        self._b64 = [_Fragments(s, m) for m, s in b64.items()]

    def __bool__(self) -> bool:
        return bool(self.keys)

    def holds_fragment(self, text: str) -> bool:
        """Whether ``text`` holds a fragment of a key in any of the forms looked for."""
        if not (self._plain or self._hex or self._b64):
            return False
        joined = _BLANKS.sub("", text)
        views = [joined]
        if "%" in joined:
            views.append(unquote(joined, errors="replace"))
        if any(f.found_in(v) for f in self._plain for v in views):
            return True
        if any(f.found_in(joined) for f in self._b64):
            return True
        if self._hex:
            hexy = _HEX_JOINERS.sub("", joined.lower())
            if any(f.found_in(hexy) for f in self._hex):
                return True
        return False

    def scan(self, text: str) -> tuple[str, bool]:
        """``text`` fit to store, and whether it had to be withheld whole."""
        original = text
        for key in self.keys:
            if key in text:
                text = text.replace(key, REDACTED)
        if self.holds_fragment(text):
            return withheld_notice(original), True
        return text, False

    def scrub(self, text: str) -> str:
        return self.scan(text)[0]


def withheld_notice(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return (
        f"[withheld: the text held the API key or a fragment or encoding of it; "
        f"{len(text):,} characters, sha256 {digest}…]"
    )
