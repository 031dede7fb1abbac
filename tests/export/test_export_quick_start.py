"""The README's ``monsearch export RUN --out monitor-RUN``, as a user runs it in a checkout.

The command runs in a folder holding monsearch's pyproject.toml (as the checkout
does), with the runs folder and ``--out`` given relative to it. The export must
verify (its scoring interpreter runs in a temporary folder), say how to install the
folder with a path pip takes as a path, and leave a plugin that the README's test
command (``ruff check .`` first) finds clean, judged by the plugin's own settings;
alone, too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from paths import REPO

from monsearch.commands.export import install_target


@pytest.fixture(scope="module")
def checkout_export(small_run, tmp_path_factory):
    """``monsearch export small --out monitor-small`` run in a folder with monsearch's
    pyproject.toml; returns that folder and the finished process."""
    run_dir, _ = small_run
    root = tmp_path_factory.mktemp("checkout")
    shutil.copyfile(REPO / "pyproject.toml", root / "pyproject.toml")
    runs = os.path.relpath(run_dir.parent, root)
    assert not Path(runs).is_absolute()
    proc = subprocess.run(
        [sys.executable, "-m", "monsearch", "export", run_dir.name, "--runs-dir", runs]
        + ["--out", "monitor-small"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    return root, proc


def _ruff(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    # The ruff of the interpreter running the tests (a test dependency).
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def test_relative_out_from_another_folder_verifies(checkout_export):
    root, proc = checkout_export
    assert proc.returncode == 0, proc.stderr
    plugin = root / "monitor-small"
    assert len(list(plugin.glob("src/*/_meta.py"))) == 1
    assert "verified: " in proc.stderr and "val scores reproduced exactly" in proc.stderr
    assert "wrote monsearch_" in proc.stderr and " to monitor-small\n" in proc.stderr
    # pip reads a bare "monitor-small" as a package to download from the index.
    assert "install: pip install ./monitor-small\n" in proc.stderr


def test_install_target_is_a_path_pip_takes_as_a_path():
    assert install_target(Path("monitor-r1")) == "./monitor-r1"
    assert install_target(Path("plugins/monitor-r1")) == "./plugins/monitor-r1"
    assert install_target(Path("./monitor-r1")) == "./monitor-r1"  # Path drops the ./
    assert install_target(Path("../monitor-r1")) == "../monitor-r1"
    assert install_target(Path("/srv/monitor r1")) == "'/srv/monitor r1'"


def test_plugin_lints_clean_in_the_checkout_and_alone(checkout_export, tmp_path):
    root, proc = checkout_export
    assert proc.returncode == 0, proc.stderr
    plugin = root / "monitor-small"
    [core] = plugin.glob("src/*/core.py")
    package = core.parent.name
    # The README's test command lints the checkout, the exported plugin in it included.
    lint = _ruff("check", "--no-cache", ".", cwd=root)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    # ... by the plugin's own settings (the nearest pyproject.toml with [tool.ruff]) ...
    shown = _ruff("check", "--no-cache", "--show-settings", str(core), cwd=root)
    assert str(plugin / "pyproject.toml") in shown.stdout
    # ... which are monsearch's rules, with the plugin's package as first party.
    ours = tomllib.loads((plugin / "pyproject.toml").read_text())["tool"]["ruff"]
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["ruff"]
    assert ours["line-length"] == project["line-length"] == 100
    assert ours["lint"]["select"] == project["lint"]["select"]
    assert ours["lint"]["ignore"] == project["lint"]["ignore"]
    assert ours["lint"]["isort"]["known-first-party"] == [package]
    # Alone, with no monsearch settings above it (ruff's defaults would check far more).
    alone = tmp_path / "monitor"
    shutil.copytree(plugin, alone)
    lint = _ruff("check", "--no-cache", str(alone), cwd=tmp_path)
    assert lint.returncode == 0, lint.stdout + lint.stderr
