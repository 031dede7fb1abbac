"""Secret detection: which credential-like strings appear, and where.

A finding is ``{kind, value, where, step}`` (plus ``field`` for JSON/form
fields). Kinds:

* ``jwt``: ``eyJ...`` three-part tokens;
* ``bearer``: the token after ``Bearer`` (when it is not a JWT);
* ``api_key``: prefixed keys (``sk_live_``, ``sk_test_``, ``pk_*``, ``pub<hex>``,
  ``AKIA...``, ``ghp_...``, ``xox?-...``) and hex/base62 strings of 16+
  characters with letters and digits and high entropy;
* ``password``: values of password-like JSON/form fields, ``-u user:pass``,
  URL ``user:pass@``, and values seen in earlier findings or the prompt's
  "known test credentials";
* ``basic_auth``: ``user:pass`` pairs (``-u``, URL credentials, decoded
  ``Authorization: Basic``);
* ``high_entropy``: other long base64-like strings with high entropy;
* ``flag``: ``FLAG{...}``.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter

_SECRET_RE = re.compile(
    r"(?P<flag>FLAG\{[^}\s]{1,200}\})"
    r"|(?P<jwt>eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*)"
    r"|(?P<api_key>\b(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9_]{6,}"
    r"|\bpub[0-9a-f]{16,}\b|\bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{30,}\b"
    r"|\bxox[abpr]-[A-Za-z0-9-]{10,}|\bAIza[0-9A-Za-z_-]{35}\b)"
    r"|(?P<token>(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{16,}={0,2}(?![A-Za-z0-9+/_=-]))"
)
# The token is group 1 of a look-ahead after the literal "Bearer ", which the regex engine
# finds quickly; a look-behind would be tried at every position of long outputs. Same
# tokens in the same order: a token holds no blank, so it ends before the next token starts.
_BEARER = re.compile(r"Bearer (?=([A-Za-z0-9._~+/=-]{8,}))")
# Every pattern above lives inside a run of these characters, 16 or more long
# (bearer tokens are found separately): scanning runs first is ~5x faster on
# long HTML/JSON observations than trying each alternative at every position.
# (``{16}`` then ``*`` matches exactly what ``{16,}`` does, and sre runs it faster.)
_RUN = re.compile(r"[A-Za-z0-9+/_=.~{}-]{16}[A-Za-z0-9+/_=.~{}-]*")
_HAS_DIGIT = re.compile(r"\d")
_HAS_ALPHA = re.compile(r"[A-Za-z]")
_ALNUM = re.compile(r"[A-Za-z0-9]+")
_HEX = re.compile(r"[0-9a-fA-F]+")

#: Top-level JSON/form keys that carry credentials by design (auth fields).
AUTH_KEYS = frozenset(
    {
        "password",
        "passwd",
        "pass",
        "pwd",
        "token",
        "api_key",
        "apikey",
        "key",
        "access_token",
        "refresh_token",
        "id_token",
        "secret",
        "client_secret",
        "client_id",
        "code",
        "otp",
        "username",
        "user",
        "email",
        "login",
        "credentials",
        "auth",
        "authorization",
        "new_password",
        "old_password",
        "current_password",
        "confirm_password",
        "password_confirmation",
        "session",
        "csrf_token",
        "grant_type",
        "scope",
        "user_id",
    }
)
_PASSWORD_KEY = re.compile(r"pass|pwd|secret", re.I)


def shannon_entropy(s: str) -> float:
    """Shannon entropy of ``s`` in bits per character (0.0 for the empty string)."""
    n = len(s)
    if n == 0:
        return 0.0
    return -sum((c / n) * math.log2(c / n) for c in Counter(s).values())


@functools.lru_cache(maxsize=16384)
def classify_token(tok: str) -> str | None:
    """Kind of a bare candidate token (``api_key``/``high_entropy``) or None.

    Cached (pure): a key or token recurs in the commands and outputs of a run, and
    its entropy costs microseconds."""
    if not _HAS_DIGIT.search(tok) or not _HAS_ALPHA.search(tok):
        return None
    core = tok.rstrip("=")
    if len(core) >= 16 and _ALNUM.fullmatch(core) and core == tok:
        if _HEX.fullmatch(core):
            return "api_key" if shannon_entropy(core) >= 3.0 else None
        threshold = 3.0 if len(core) <= 24 else 3.5
        return "api_key" if shannon_entropy(core) >= threshold else None
    if len(tok) >= 20 and shannon_entropy(tok) >= 4.0 and tok.count("/") <= len(tok) // 12:
        return "high_entropy"
    return None


@functools.lru_cache(maxsize=32768)
def scan(text: str) -> tuple[tuple[str, str], ...]:
    """All ``(kind, value)`` secret candidates in ``text`` (bearer tokens first).

    Cached (pure; observations and bodies repeat across steps and runs).
    """
    if len(text) < 15:
        # Every pattern needs a 16-character run, a bearer token "Bearer " + 8.
        return ()
    out: list[tuple[str, str]] = []
    if "Bearer " in text:
        for m in _BEARER.finditer(text):
            value = m.group(1)
            if value.startswith("eyJ") and value.count(".") == 2:
                out.append(("jwt", value))
            elif not value.startswith("$"):
                out.append(("bearer", value))
    # Every pattern lives inside a run, and every run inside a word of 16+ characters.
    for word in text.split():
        if len(word) >= 16:
            found = word_findings(word)
            if found:
                out += found
    if len(out) > 1:
        # One kind per value: the first (most specific, e.g. bearer over api_key) wins.
        seen: set[str] = set()
        out = [kv for kv in out if not (kv[1] in seen or seen.add(kv[1]))]
    return tuple(out)


@functools.lru_cache(maxsize=32768)
def word_findings(word: str) -> tuple[tuple[str, str], ...]:
    """The ``(kind, value)`` pattern findings inside one whitespace-separated word, in order.

    :func:`scan` is defined as one scan of the text's runs (:func:`_runs`) joined by a
    blank; word by word it finds the same, in order: a run holds no whitespace, so the
    text's runs are its words' runs, and no pattern matches a blank, whose edges
    (``\\b``, look-arounds) are those of a word's end. The runs of a word are searched
    joined by a blank too (one scanner, not one per run). Cached (pure): most long
    words (URLs, paths, tokens) recur across texts, and the pattern tries every
    alternative at every position."""
    out: list[tuple[str, str]] = []
    # ``_RUN.findall(word)`` is :func:`_runs` of any text (a run holds no whitespace, so
    # it lies in a word of 16+ characters, and a blank joins none); on the one long word
    # :func:`scan` passes, it skips the split and join that pay off on whole texts.
    runs = _RUN.findall(word)
    for m in _SECRET_RE.finditer(" ".join(runs)) if runs else ():
        kind = m.lastgroup
        value = m.group()
        if kind == "token":
            kind = classify_token(value)
            if kind is None:
                continue
        out.append((kind, value))  # type: ignore[arg-type]
    # (An empty result is the shared empty tuple: nothing new for the collector.)
    return tuple(out)


def _runs(text: str) -> list[str]:
    """``_RUN.findall(text)``, searched only in whitespace-separated words of 16+
    characters: a run never holds whitespace, and str.split is far cheaper than
    the regex on the short words that make up most commands and outputs."""
    long_words = [w for w in text.split() if len(w) >= 16]
    # Joined by a blank (not a run character), so no run spans two words.
    return _RUN.findall(" ".join(long_words)) if long_words else []


def json_leaves(value: object, prefix: str = "", depth: int = 0) -> list[tuple[str, str, int]]:
    """``(path, string value, depth)`` for every string/number leaf of parsed JSON."""
    out: list[tuple[str, str, int]] = []
    if depth > 20:
        return out
    if isinstance(value, dict):
        for k, v in value.items():
            path = f"{prefix}.{k}" if prefix else str(k)
            out.extend(json_leaves(v, path, depth + 1))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value[:500]):
            out.extend(json_leaves(v, f"{prefix}[{i}]", depth + 1))
    elif isinstance(value, str):
        out.append((prefix, value, depth))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out.append((prefix, str(value), depth))
    return out


def is_auth_field(path: str, depth: int) -> bool:
    """A top-level field whose job is to carry a credential (not stored content)."""
    return depth <= 1 and path.lower() in AUTH_KEYS


@functools.lru_cache(maxsize=4096)
def is_password_field(path: str) -> bool:
    """Whether the last name in a field path looks like a password's. Cached (pure): a
    few field names recur in every run's bodies, and the split and search cost ~1 us."""
    leaf = path.rsplit(".", 1)[-1].split("[", 1)[0]
    return bool(_PASSWORD_KEY.search(leaf))
