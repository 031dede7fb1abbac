"""Turning a tool call's arguments into ``Step.arguments`` and ``Step.text``.

Both trajectory formats carry tool arguments as free JSON. A monitor wants the
one string that matters (the shell command, the thought), so the first known
key that holds a string wins; anything else reads as canonical JSON, so the
same arguments always give the same text. Arguments nested deeper than the
documents the readers accept (:data:`~monsearch.corpora.readers.jsonio.MAX_DEPTH`)
raise :class:`TooDeepError` before they are turned into text.
"""

from __future__ import annotations

import json
from typing import Any

from monsearch.corpora.errors import InputError
from monsearch.corpora.readers.jsonio import (
    DEPTH_EXPECTED,
    MAX_DEPTH,
    MISSING,
    Node,
    path_text,
    too_deep,
)

#: Argument keys whose string value is the step's text, in order of preference.
TEXT_KEYS = ("command", "thought", "cmd", "raw")


class TooDeepError(ValueError):
    """Tool arguments nested deeper than :data:`MAX_DEPTH`; ``path`` leads from the
    arguments to where they get too deep (the reader names the field)."""

    def __init__(self, path: list[str | int]) -> None:
        super().__init__("tool arguments nested too deep")
        self.path = path


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
        return value, _canonical(value)
    if isinstance(value, str):
        return {"raw": value}, value
    return {"value": value}, _canonical(value)


def _canonical(value: Any) -> str:
    path = too_deep(value, MAX_DEPTH)
    if path is not None:
        path.reverse()
        raise TooDeepError(path)
    return canonical_json(value)


def read_step_input(node: Node, key: str, value: Any) -> tuple[dict[str, Any], str]:
    """:func:`step_input` of ``value``, the ``key`` field of ``node``: arguments nested
    too deep are an :class:`InputError` naming the field where they get too deep."""
    try:
        return step_input(value)
    except TooDeepError as err:
        where = path_text(err.path, node.at(key))
        raise InputError(
            node.src, where, DEPTH_EXPECTED, "deeper nesting", line=node.line
        ) from None
