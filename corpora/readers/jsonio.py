"""Loading JSON and JSONL safely, and typed access that knows its JSON path.

Every reader goes through here, so a broken file is always reported the same
way: the file, the JSON path of the bad value (``steps[3].action.tool``), what
was expected and what was found. The checks are hand-rolled getters rather than
a schema library: they are a few lines each, cost next to nothing per field,
and their error text is exactly the path the user needs.

Documents are written by the agents being monitored, so their shape is hostile
input: a document nested deeper than :data:`MAX_DEPTH` is refused (naming the
field where it gets too deep) before any code walks it recursively, and a number
too large for a double is refused as orjson refuses it (``number is infinity``).
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from monsearch.corpora.errors import InputError, InputTooLargeError

#: Default cap on one JSON document (a file, or one JSONL line): large enough
#: for any real trajectory, small enough that a stray dump cannot exhaust memory.
DEFAULT_MAX_BYTES = 50 * 1024 * 1024
#: Deepest nesting of arrays and objects a document may have (the document itself is
#: level 1). A trajectory needs about ten; recursive code over a document (json.dumps,
#: orjson.dumps when a corpus is written, at 254) must never meet more.
MAX_DEPTH = 100
#: Most steps a trajectory may have: a real run has tens, a long one hundreds. A
#: document with more is refused before its steps are read (a 10 MB document of empty
#: steps holds 700,000: their views alone would take gigabytes).
MAX_STEPS = 100_000
#: Path components an error names of a too-deep value (the first ones say which field).
_PATH_SHOWN = 8
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
#: What a too-deep document is told it should have been.
DEPTH_EXPECTED = f"JSON nested at most {MAX_DEPTH} levels deep"

_BOM = b"\xef\xbb\xbf"
#: Keys of an object an error message names (a trajectory has a dozen; say which ones).
_KEYS_SHOWN = 6
_CHUNK = 1 << 20


class _Missing:
    """Marker for an absent key (distinct from a JSON ``null``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def describe(value: Any) -> str:
    """A short, human description of a JSON value for error messages."""
    if value is MISSING:
        return "nothing (field missing)"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"a string ({json.dumps(shown, ensure_ascii=False)})" if value else "an empty string"
    if isinstance(value, list):
        return f"a list of {len(value)} items" if value else "an empty list"
    if isinstance(value, dict):
        if not value:
            return "an empty object"
        keys = [json.dumps(k, ensure_ascii=False) for k in list(value)[:_KEYS_SHOWN]]
        more = f" and {len(value) - _KEYS_SHOWN} more" if len(value) > _KEYS_SHOWN else ""
        return f"an object with the key{'s' if len(value) > 1 else ''} {', '.join(keys)}{more}"
    return type(value).__name__


def _decode_error(display: str, err: orjson.JSONDecodeError, line: int | None) -> InputError:
    what = "truncated JSON" if err.msg == "unexpected end of data" else "invalid JSON"
    lineno = err.lineno if line is None else line
    where = f"line {lineno}, column {err.colno}"
    return InputError(display, "", "valid JSON", f"{what} ({err.msg}) at {where}", line=line)


def too_deep(value: Any, levels: int = MAX_DEPTH) -> list[str | int] | None:
    """The path (keys and indices) to the first array or object of ``value`` nested
    deeper than ``levels`` (``value`` itself is level 1), or None when none is."""
    t = type(value)
    if t is dict:
        items: Any = value.items()
    elif t is list:
        items = enumerate(value)
    else:
        return None
    if levels <= 0:
        return []
    for key, item in items:
        k = type(item)
        if k is dict or k is list:
            path = too_deep(item, levels - 1)
            if path is not None:
                path.append(key)
                return path
    return None


def path_text(path: list[str | int], base: str = "$") -> str:
    """A JSON path as the readers name fields (``steps[0].input``), its first
    :data:`_PATH_SHOWN` components when longer; keys that are not plain names are
    quoted."""
    out = "" if base == "$" else base
    for key in path[:_PATH_SHOWN]:
        if isinstance(key, int):
            out += f"[{key}]"
        elif _PLAIN_KEY.fullmatch(key):
            out += f".{key}" if out else key
        else:
            out += f"[{json.dumps(key)}]"
    if len(path) > _PATH_SHOWN:
        out += "…"
    return out or "$"


def check_depth(value: Any, display: str, *, line: int | None = None, base: str = "$") -> None:
    """Refuse ``value`` (at JSON path ``base`` of ``display``) when it nests deeper than
    :data:`MAX_DEPTH` levels, naming the field where it does."""
    path = too_deep(value)
    if path is not None:
        path.reverse()
        raise InputError(
            display, path_text(path, base), DEPTH_EXPECTED, "deeper nesting", line=line
        )


def check_steps(node: Node, count: int, key: str = "steps") -> None:
    """Refuse a trajectory of more than :data:`MAX_STEPS` steps (``count`` of them, read
    from ``node[key]``)."""
    if count > MAX_STEPS:
        expected = f"at most {MAX_STEPS} steps"
        raise InputError(node.src, node.at(key), expected, f"{count}", line=node.line)


def parse_bytes(data: bytes, display: str, *, line: int | None = None) -> Any:
    """Parse one JSON document; an empty or malformed one, or one nested deeper than
    :data:`MAX_DEPTH`, is an InputError."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    if not data.strip():
        got = "an empty file" if line is None else "an empty line"
        raise InputError(display, "", "a JSON document", got, line=line)
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise _decode_error(display, err, line) from None
    check_depth(value, display, line=line)
    return value


#: What :func:`open_regular` calls each kind of file that is not a regular one.
_FILE_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


# (POSIX flags; elsewhere the ones that exist: Windows has no FIFOs to wait on.)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_OPEN_FLAGS = (
    os.O_RDONLY
    | _NONBLOCK
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_BINARY", 0)
)


def file_kind(mode: int) -> str:
    """``"a regular file"``, ``"a FIFO (named pipe)"``, ... for an ``st_mode``."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((name for test, name in _FILE_KINDS if test(mode)), "a special file")


def open_regular(path: Path, display: str) -> BinaryIO:
    """``path`` opened for reading if it is a regular file, else an :class:`InputError`
    saying what it is. Opened without blocking, then checked on the open descriptor:
    opening a FIFO for reading waits for a writer (forever, if none comes), and a file
    checked by name first could be swapped for one before it is opened."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as err:
        raise InputError(display, "", "a readable file", err.strerror or str(err)) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise InputError(display, "", "a regular file", file_kind(mode))
        if _NONBLOCK:
            os.set_blocking(fd, True)  # (no effect on a regular file; plain reads after this)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_capped(fh: BinaryIO, display: str, max_bytes: int) -> bytes:
    """All of an open file, refusing one over ``max_bytes`` (it reads at most one byte more)."""
    try:
        size = os.fstat(fh.fileno()).st_size
        if size > max_bytes:
            raise InputTooLargeError(display, size, max_bytes)
        data = fh.read(max_bytes + 1)
    except OSError as err:
        raise InputError(display, "", "a readable file", err.strerror or str(err)) from None
    if len(data) > max_bytes:  # the file grew after fstat()
        raise InputTooLargeError(display, len(data), max_bytes)
    return data


def load_json(path: Path, display: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Any:
    """Read and parse one JSON file, refusing files over ``max_bytes`` unread (and
    anything but a regular file unopened: see :func:`open_regular`)."""
    with open_regular(path, display) as fh:
        data = read_capped(fh, display, max_bytes)
    return parse_bytes(data, display)


def iter_jsonl(
    path: Path, display: str, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value_or_InputError)`` for each non-blank line.

    A bad line does not stop the file: its error is yielded in place of a value
    so the caller can skip that record and go on. ``max_bytes`` caps each line,
    not the file (a JSONL of hundreds of trajectories may be large as a whole);
    an over-long line is skipped without being held in memory.
    """
    with open_regular(path, display) as fh:
        yield from iter_jsonl_stream(fh, display, max_bytes=max_bytes)


def iter_jsonl_stream(
    fh: BinaryIO, display: str, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> Iterator[tuple[int, Any]]:
    """:func:`iter_jsonl` over an open binary stream (a decompressing one, say)."""
    lineno = 0
    while True:
        raw = fh.readline(max_bytes + 1)
        if not raw:
            return
        lineno += 1
        if len(raw) > max_bytes and not raw.endswith(b"\n"):
            size = len(raw)
            while raw and not raw.endswith(b"\n"):  # drain the rest of the line
                raw = fh.readline(_CHUNK)
                size += len(raw)
            size -= raw.endswith(b"\n")
            yield lineno, InputTooLargeError(display, size, max_bytes, line=lineno)
            continue
        if not raw.strip():
            continue
        try:
            yield lineno, parse_bytes(raw, display, line=lineno)
        except InputError as err:
            yield lineno, err


class Node:
    """A JSON value together with where it sits: file, JSONL line, JSON path.

    Getters check the type of a child and raise an :class:`InputError` naming
    the child's exact path. ``required=False`` accepts a missing key or ``null``
    and returns ``None``; ``nullable=True`` (with ``required``) insists the key
    is present but allows ``null``.
    """

    __slots__ = ("value", "src", "path", "line")

    def __init__(self, value: Any, src: str, path: str = "$", line: int | None = None) -> None:
        self.value = value
        self.src = src
        self.path = path
        self.line = line

    # -- paths and errors -------------------------------------------------
    def at(self, key: str | int) -> str:
        if isinstance(key, int):
            return f"{self.path}[{key}]"
        return key if self.path == "$" else f"{self.path}.{key}"

    def fail(self, key: str | int | None, expected: str, value: Any) -> InputError:
        where = self.path if key is None else self.at(key)
        return InputError(self.src, where, expected, describe(value), line=self.line)

    def child(self, key: str | int, value: Any) -> Node:
        return Node(value, self.src, self.at(key), self.line)

    # -- self checks ------------------------------------------------------
    def as_obj(self, what: str = "an object") -> Node:
        if not isinstance(self.value, dict):
            raise self.fail(None, what, self.value)
        return self

    def keys(self) -> list[str]:
        return list(self.value) if isinstance(self.value, dict) else []

    def raw(self, key: str) -> Any:
        """The child value as is, or :data:`MISSING`."""
        return self.value.get(key, MISSING)

    # -- typed getters ----------------------------------------------------
    def _get(self, key: str, expected: str, required: bool, nullable: bool) -> Any:
        value = self.value.get(key, MISSING)
        if value is MISSING or value is None:
            if required and not (nullable and value is None):
                raise self.fail(key, expected, value)
            return None
        return value

    def string(
        self, key: str, *, required: bool = True, nullable: bool = False, nonempty: bool = False
    ) -> str | None:
        value = self._get(key, "a string", required, nullable)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.fail(key, "a string", value)
        if nonempty and not value:
            raise self.fail(key, "a non-empty string", value)
        return value

    def integer(self, key: str, *, required: bool = True, nullable: bool = False) -> int | None:
        value = self._get(key, "an integer", required, nullable)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, "an integer", value)
        return value

    def boolean(self, key: str, *, required: bool = True, nullable: bool = False) -> bool | None:
        value = self._get(key, "true or false", required, nullable)
        if value is None:
            return None
        if not isinstance(value, bool):
            raise self.fail(key, "true or false", value)
        return value

    def unit(self, key: str, *, required: bool = True, nullable: bool = False) -> float | None:
        """A finite number in [0, 1] (scores and confidences)."""
        expected = "a number between 0 and 1"
        value = self._get(key, expected, required, nullable)
        if value is None:
            return None
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or not 0.0 <= value <= 1.0
        ):
            raise self.fail(key, expected, value)
        return float(value)

    def obj(self, key: str, *, required: bool = True, nullable: bool = False) -> Node | None:
        value = self._get(key, "an object", required, nullable)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.fail(key, "an object", value)
        return self.child(key, value)

    def array(
        self, key: str, *, required: bool = True, nullable: bool = False
    ) -> list[Node] | None:
        value = self._get(key, "a list", required, nullable)
        if value is None:
            return None
        if not isinstance(value, list):
            raise self.fail(key, "a list", value)
        base = self.at(key)
        return [Node(item, self.src, f"{base}[{i}]", self.line) for i, item in enumerate(value)]

    def one_of(self, key: str, allowed: tuple[str, ...], *, required: bool = True) -> str | None:
        value = self.value.get(key, MISSING)
        if value in allowed:  # the common case; the message is built only for an error
            return value
        expected = "one of " + ", ".join(json.dumps(a) for a in allowed)
        value = self._get(key, expected, required, False)
        if value is None:
            return None
        raise self.fail(key, expected, value)
