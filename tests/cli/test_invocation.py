"""Follow-up hints are printed as the user can type them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from monsearch.commands import invocation


def _exe(folder: Path, name: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_a_venv_script_not_on_path_is_repeated_as_typed(tmp_path, monkeypatch):
    script = _exe(tmp_path, "monsearch")
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(sys, "argv", [".venv/bin/monsearch", "evolve"])
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    os.replace(script, tmp_path / ".venv" / "bin" / "monsearch")
    assert invocation.program() == ".venv/bin/monsearch"


def test_the_script_on_path_is_just_monsearch(tmp_path, monkeypatch):
    script = _exe(tmp_path, "monsearch")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(sys, "argv", [str(script), "evolve"])
    assert invocation.program() == "monsearch"


def test_python_dash_m(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "argv", [str(Path(invocation.__file__).parent.parent / "__main__.py")])
    monkeypatch.setenv("PATH", "/nonexistent")
    assert invocation.program() == f"{sys.executable} -m monsearch"


def test_run_ref_is_the_id_under_the_default_root_else_the_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MONSEARCH_RUNS", raising=False)
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "config.json").write_text("{}")
    assert invocation.run_ref(run) == "r1"
    elsewhere = tmp_path / "other place" / "r2"
    elsewhere.mkdir(parents=True)
    (elsewhere / "config.json").write_text("{}")
    assert invocation.run_ref(elsewhere) == f"'{elsewhere}'"
