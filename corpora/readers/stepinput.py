"""Turning a tool call's arguments into ``Step.arguments`` and ``Step.text``.

Both trajectory formats carry tool arguments as free JSON. A monitor wants the
one string that matters (the shell command, the thought), so the first known
key that holds a string wins; anything else reads as canonical JSON, so the
same arguments always give the same text.
"""

from __future__ import annotations

import json
from typing import Any

from monsearch.corpora.readers.jsonio import MISSING

#: Argument keys whose string value is the step's text, in order of preference.
TEXT_KEYS = ("command", "thought", "cmd", "raw")


def canonical_json(value: Any) -> str:
    """Deterministic JSON text (sorted keys, unicode kept readable)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def step_input(value: Any, text_keys: tuple[str, ...] = TEXT_KEYS) -> tuple[dict[str, Any], str]:
    """``(arguments, text)`` for a tool input of any JSON shape.

    A bare string (a harness that did not parse the arguments) becomes
    ``{"raw": s}``; other non-objects are kept under ``"value"``.
    """
    if value is MISSING or value is None:
        return {}, ""
    if isinstance(value, dict):
        for key in text_keys:
            text = value.get(key)
            if isinstance(text, str):
                return value, text
        return value, canonical_json(value)
    if isinstance(value, str):
        return {"raw": value}, value
    return {"value": value}, canonical_json(value)
