"""How the user started monsearch, for the follow-up commands a command suggests.

A user who ran ``.venv/bin/monsearch evolve`` has no ``monsearch`` on their PATH:
"next: monsearch test RUN" would fail for them. Hints repeat the command as it was
typed (and the run as they can name it).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path


def program() -> str:
    """``monsearch`` when that is what the shell finds, else the path typed, else
    ``python -m monsearch`` (with the interpreter as typed when it is not on PATH)."""
    argv0 = sys.argv[0] if sys.argv else ""
    if Path(argv0).name == "__main__.py" or not argv0:
        python = "python" if _same_file(shutil.which("python"), sys.executable) else sys.executable
        return f"{shlex.quote(python)} -m monsearch"
    if _same_file(shutil.which("monsearch"), argv0):
        return "monsearch"
    return shlex.quote(argv0)


def run_ref(run_dir: Path) -> str:
    """The run as the user can name it: its id when commands find it from here, else its path."""
    from monsearch.search.runs import resolve_run

    try:
        if _same_file(str(resolve_run(run_dir.name).dir), str(run_dir)):
            return run_dir.name
    except Exception:  # noqa: BLE001 - any failure to resolve means: give the path
        pass
    return shlex.quote(str(run_dir))


def _same_file(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
