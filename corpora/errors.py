"""Errors about input files: each names the file, the JSON path and what was wrong.

A user fixing a broken export needs three things: which file, where in it, and
what the reader wanted there. Every reader problem is an :class:`InputError`
carrying exactly those, so the CLI can print one line per problem and an import
report can list skipped files with the same text.
"""

from __future__ import annotations

from monsearch.errors import MonsearchError


class InputError(MonsearchError):
    """An input file that cannot be read as the expected format.

    ``path`` is the file as the user would name it; ``line`` the 1-based line of
    a JSONL record (``None`` for whole-file formats); ``field`` the JSON path of
    the offending value (``steps[3].action.tool``; ``$`` for the document
    itself; ``""`` when the problem is the file, not a value in it);
    ``expected`` what the reader wanted; ``got`` what it found.
    """

    def __init__(
        self,
        path: str,
        field: str,
        expected: str,
        got: str,
        *,
        line: int | None = None,
    ) -> None:
        self.path = path
        self.field = field
        self.expected = expected
        self.got = got
        self.line = line
        super().__init__(self.message)

    @property
    def location(self) -> str:
        """``file`` or ``file:line`` for JSONL records."""
        return self.path if self.line is None else f"{self.path}:{self.line}"

    @property
    def message(self) -> str:
        where = self.location if not self.field else f"{self.location}: {self.field}"
        return f"{where}: expected {self.expected}, got {self.got}"

    def __str__(self) -> str:
        return self.message


class InputTooLargeError(InputError):
    """A file over the reader's size cap (it is never read into memory)."""

    def __init__(self, path: str, size: int, max_bytes: int, *, line: int | None = None) -> None:
        what = "a file" if line is None else "a line"
        super().__init__(
            path, "", f"{what} of at most {max_bytes} bytes", f"{size} bytes", line=line
        )
        self.size = size
        self.max_bytes = max_bytes
