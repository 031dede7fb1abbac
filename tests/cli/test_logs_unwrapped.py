"""What a command writes to stderr when stderr is not a terminal (a log, a CI job, a
pipe) is never wrapped: a path or the ``pip install`` line broken at 80 columns cannot
be pasted. The commands run in a child process with stderr a pipe, with and without
``COLUMNS=80`` (set in many CI shells)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Deep enough that every line naming it is longer than 80 columns.
DEEP = "a-folder-with-a-long-name/" * 4


def _stderr(*args: str, columns: str | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    if columns is not None:
        env["COLUMNS"] = columns
    proc = subprocess.run(
        [sys.executable, "-m", "monsearch", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr.splitlines()


@pytest.mark.parametrize("columns", [None, "80"])
def test_export_log_keeps_paths_and_the_pip_line_whole(small_run, tmp_path, columns):
    out = tmp_path / DEEP / "plugin"
    lines = _stderr("export", str(small_run[0]), "--out", str(out), "--no-verify",
                    columns=columns)
    assert f"  install: pip install {out}" in lines, lines
    assert any(line.startswith("wrote ") and line.endswith(f" to {out}") for line in lines), lines


@pytest.mark.parametrize("columns", [None, "80"])
def test_a_message_naming_a_long_folder_is_one_line(tmp_path, columns):
    runs = tmp_path / DEEP / "runs"
    runs.mkdir(parents=True)
    lines = _stderr("runs", "--runs-dir", str(runs), columns=columns)
    assert lines == [f"no runs in {runs}/ (start one with: monsearch evolve)"], lines
    assert len(lines[0]) > 80 and Path(str(runs)).is_dir()
