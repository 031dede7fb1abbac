"""Telling the two trajectory formats apart when the user did not say which."""

from __future__ import annotations

from pathlib import Path

from monsearch.corpora.errors import InputError
from monsearch.corpora.readers.jsonio import DEFAULT_MAX_BYTES, load_json
from monsearch.corpora.readers.stealthbench import TRAJECTORY_FILE

FORMATS = ("stealthbench", "atif")
_HARNESS_DIRS = ("trajectories", "verdicts", "panel-verdicts")


def detect_format(src: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """``"stealthbench"`` or ``"atif"``, from folder layout or the file's top-level keys.

    A file that is neither is called ATIF, whose reader then says what is wrong.
    """
    src = Path(src)
    if src.is_dir():
        if src.name == "trajectories" or any((src / d).is_dir() for d in _HARNESS_DIRS):
            return "stealthbench"
        if next(iter(src.rglob(TRAJECTORY_FILE)), None) is not None:
            return "stealthbench"
        return "atif"
    if not src.is_file():
        raise InputError(str(src), "", "an existing file or folder", "nothing at that path")
    if src.suffix == ".jsonl":
        return "atif"
    doc = load_json(src, str(src), max_bytes=max_bytes)
    if isinstance(doc, dict):
        if "schema_version" in doc:
            return "atif"
        if "atif_version" in doc or "agent_model" in doc:
            return "stealthbench"
    return "stealthbench" if src.name == TRAJECTORY_FILE else "atif"
