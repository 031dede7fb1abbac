"""What the quick start writes into a checkout is ignored by git: ``git status`` stays
clean after ``monsearch evolve`` (``runs/``) and the export it suggests next
(``--out monitor-<run id>``, the folder the README's ``monitor-RUN`` stands for)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from types import SimpleNamespace

import pytest
from paths import REPO

from monsearch.commands.evolve import _next_steps
from monsearch.search.runs import Run


def _ignored(relative: str) -> bool:
    proc = subprocess.run(
        ["git", "check-ignore", "--no-index", "-q", relative],
        cwd=REPO,
        capture_output=True,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode == 0


@pytest.fixture
def checkout():
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")


def test_the_suggested_export_folder_and_the_runs_are_ignored(checkout):
    run_id = "20261205-101112-s0"
    outcome = SimpleNamespace(
        run=Run(REPO / "runs" / run_id), status="finished", selected=object()
    )
    export = next(line for line in _next_steps(outcome) if " export " in line)
    out = shlex.split(export)[shlex.split(export).index("--out") + 1]
    assert out == f"monitor-{run_id}"
    for path in (f"{out}/pyproject.toml", f"{out}/src/pkg/_meta.py", f"runs/{run_id}/config.json"):
        assert _ignored(path), path


def test_sources_are_not_ignored(checkout):
    # The rule is for the export folders only: monsearch's own files stay tracked.
    for path in ("monsearch/commands/export.py", "export/plugin/core.py", "README.md"):
        assert not _ignored(path), path
