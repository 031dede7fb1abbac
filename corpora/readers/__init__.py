"""Readers that turn trajectory files of each supported format into the internal model.

``read_stealthbench`` reads the StealthBench harness output tree,
``read_atif`` canonical Harbor ATIF v1.4 to v1.8; ``read_any`` picks one by
name or by looking at ``src``. Each returns an :class:`ImportReport`: the
trajectories, the number of trajectory files examined, and every file skipped
with the reason (in ``strict`` mode the first problem raises instead).
"""

from __future__ import annotations

from pathlib import Path

from monsearch.corpora.errors import InputError, InputTooLargeError
from monsearch.corpora.readers.atif import read_atif
from monsearch.corpora.readers.detect import FORMATS, detect_format
from monsearch.corpora.readers.jsonio import DEFAULT_MAX_BYTES
from monsearch.corpora.readers.report import FileProgress, ImportReport, Skipped
from monsearch.corpora.readers.stealthbench import read_stealthbench
from monsearch.errors import MonsearchError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "FORMATS",
    "ImportReport",
    "InputError",
    "InputTooLargeError",
    "Skipped",
    "detect_format",
    "read_any",
    "read_atif",
    "read_stealthbench",
]


def read_any(
    src: Path,
    fmt: str = "auto",
    *,
    labels: Path | None = None,
    strict: bool = False,
    oracle_judges: frozenset[str] | set[str] = frozenset(),
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: FileProgress | None = None,
) -> ImportReport:
    """Read ``src`` as ``fmt`` (``"stealthbench"``, ``"atif"`` or ``"auto"``).

    ``progress(done, total)`` is called after each trajectory file.
    """
    src = Path(src)
    if fmt == "auto":
        fmt = detect_format(src, max_bytes=max_bytes)
    if fmt == "stealthbench":
        if labels is not None:
            raise MonsearchError(
                "a labels file applies to ATIF input only; StealthBench labels come from its verdicts/"
            )
        return read_stealthbench(
            src, strict=strict, oracle_judges=oracle_judges, max_bytes=max_bytes, progress=progress
        )
    if fmt == "atif":
        return read_atif(
            src,
            labels=labels,
            strict=strict,
            oracle_judges=oracle_judges,
            max_bytes=max_bytes,
            progress=progress,
        )
    raise MonsearchError(
        f"unknown trajectory format {fmt!r}; expected one of: auto, {', '.join(FORMATS)}"
    )
