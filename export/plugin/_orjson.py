"""The part of ``orjson`` the vendored readers use, on the standard library.

Parsing follows orjson where it differs from ``json``: NaN/Infinity are refused,
integers outside 64 bits read as floats, numbers too large for a double are refused
(``number is infinity when parsed as double``, however many digits), nesting the
stack cannot hold is refused as too deep (``depth limit exceeded``: orjson's limit is
1024 levels, the readers refuse anything past 100 anyway) and strings must be valid
Unicode (no lone surrogates), so a document either reads to the same values as in
monsearch or fails the same way.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

OPT_SORT_KEYS = 1 << 5
JSONDecodeError = json.JSONDecodeError


class JSONEncodeError(TypeError):
    pass


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_INFINITY = "number is infinity when parsed as double"


def _int(text: str) -> int | float:
    # orjson reads integers outside 64 bits as floats (int() of thousands of digits is
    # slow, and refused past 4300: 21 digits or more are outside 64 bits anyway).
    if len(text) <= 20:
        value = int(text)
        if -(2**63) <= value < 2**64:
            return value
    return _float(text)


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(_INFINITY)
    return value


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _has_lone_surrogate(value: Any) -> bool:
    # json pairs valid surrogate escapes into one character, so any left is lone.
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def _as_orjson(err: JSONDecodeError, data: str) -> JSONDecodeError:
    """A document that ends too soon fails as orjson says it: ``unexpected end of data``
    at the end (json says "Expecting value", or points at where an unterminated string
    or literal began), so the readers can tell truncated JSON from invalid JSON."""
    if not data:
        return JSONDecodeError("Input is a zero-length, empty document", data, 0)
    if not data.strip():
        return JSONDecodeError("input data is empty", data, 0)
    rest = data[err.pos :].rstrip()
    if (
        not rest
        or err.msg.startswith("Unterminated string")
        or any(word.startswith(rest) for word in ("true", "false", "null"))
    ):
        return JSONDecodeError("unexpected end of data", data, len(data))
    return err


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    if not isinstance(data, str):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONDecodeError(f"str is not valid UTF-8: {exc.reason}", "", 0) from None
    try:
        value = json.loads(data, parse_constant=_constant, parse_int=_int, parse_float=_float)
        if _SURROGATE_ESCAPE.search(data) and _has_lone_surrogate(value):
            raise JSONDecodeError("lone surrogate in string", data, 0)
    except JSONDecodeError as err:
        raise _as_orjson(err, data) from None
    except ValueError as exc:
        raise JSONDecodeError(str(exc), data, 0) from None
    except RecursionError:
        raise JSONDecodeError("depth limit exceeded", data, 0) from None
    return value


def dumps(value: Any, option: int = 0) -> bytes:
    try:
        text = json.dumps(
            value,
            sort_keys=bool(option & OPT_SORT_KEYS),
            ensure_ascii=False,
            separators=(",", ":"),
            allow_nan=False,
        )
    except (TypeError, ValueError) as exc:
        raise JSONEncodeError(str(exc)) from None
    return text.encode("utf-8")
