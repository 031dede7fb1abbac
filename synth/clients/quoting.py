"""Shell quoting as agents write it: bare, single- or double-quoted arguments,
URLs and JSON bodies (the choice drawn from the run's generator)."""

from __future__ import annotations

import json
import random
from typing import Any

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_")


def sq(s: str) -> str:
    """Shell single-quote ``s`` (bare when it needs no quoting)."""
    if s and all(c in _SAFE for c in s):
        return s
    return "'" + s.replace("'", "'\"'\"'") + "'"


def dq(s: str) -> str:
    """Shell double-quote ``s`` (escaping what bash expands inside "...")."""
    return (
        '"'
        + s.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("`", "\\`")
        + '"'
    )


def quote(rng: random.Random, s: str) -> str:
    """An argument single- or double-quoted (double when it holds a single quote)."""
    if "'" in s:
        return dq(s)
    return sq(s) if rng.random() < 0.7 else dq(s)


def url_quote(rng: random.Random, url: str) -> str:
    """A URL bare, or quoted (always when the shell would expand something in it)."""
    if any(c in url for c in "?&*[] "):
        return dq(url) if rng.random() < 0.6 else sq(url) if "'" not in url else dq(url)
    r = rng.random()
    return url if r < 0.6 else dq(url) if r < 0.85 else "'" + url + "'"


def json_text(rng: random.Random, obj: Any) -> str:
    """A JSON body compact or with spaces after separators."""
    if rng.random() < 0.55:
        return json.dumps(obj, separators=(",", ":"))
    return json.dumps(obj)
