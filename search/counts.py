"""Counts in words: ``counted(1, "pass", "passes")`` is "1 pass", 2 makes "2 passes"."""

from __future__ import annotations

from typing import Any


def counted(n: Any, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun`` in the number ``n`` takes (``plural``: default ``noun + "s"``);
    a count not known (None, "?") reads as plural."""
    one = isinstance(n, int | float) and not isinstance(n, bool) and n == 1
    return f"{n} {noun if one else plural or noun + 's'}"
