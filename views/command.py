"""The simple command, what the shell reader reads a text into, and the reader's limits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

#: Literal loops up to this many values are unrolled into one command per value.
UNROLL_LIMIT = 64
#: Iteration count assumed for a loop whose count cannot be read (``while true``).
UNKNOWN_LOOP_REPEAT = 10
_MAX_DEPTH = 12
_MAX_COMMANDS = 2000
_MAX_REPEAT = 10**9

FileLookup = Callable[[str], "str | None"]


@dataclass(slots=True)
class Command:
    """One simple command as it would run.

    ``argv`` holds the expanded words (quotes removed); ``stdin`` is text fed to
    the command when statically known (heredoc, here-string, ``< known file``,
    ``echo``/``printf``/``cat`` piped in); ``repeat`` is the product of the
    enclosing loop counts (``repeat_known`` False when a count was guessed).
    """

    argv: list[str]
    raw: str = ""
    stdin: str | None = None
    stdin_file: str | None = None
    stdout_file: str | None = None
    append: bool = False
    repeat: int = 1
    repeat_known: bool = True
    background: bool = False
    piped_from: Command | None = None
    pipes_to: bool = False
    env: dict[str, str] = field(default_factory=dict)
    output: str | None = None  # statically known stdout (echo/printf/cat of known data)
    cwd: str | None = None  # the folder of the last ``cd`` before it in the same text
