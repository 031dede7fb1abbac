"""The synthetic generator's tables ship with the package.

Task prompts, opening thoughts and modes, the app facts and the judges' wording
are TOML files beside the modules that read them (``synth/tables.py``). A
non-editable install must carry them: the wheel built from a copy of the
repository holds every one, and the generator imported from that wheel alone
(not from this checkout) loads every task scenario from it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _package_dirs() -> dict[str, str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return config["tool"]["setuptools"]["package-dir"]


def _copy_sources(dest: Path) -> None:
    """What a build needs (pyproject, README, the package folders), without build
    leftovers, so the build writes nothing into this checkout."""
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for folder in sorted({p.split("/")[0] for p in _package_dirs().values()}):
        shutil.copytree(ROOT / folder, dest / folder, ignore=ignore)


def test_wheel_carries_the_generators_tables(tmp_path: Path) -> None:
    tables = sorted(
        p.relative_to(ROOT / "synth").as_posix() for p in (ROOT / "synth").rglob("*.toml")
    )
    # the task tables, the app facts and the judges' wording at least
    assert "app_facts.toml" in tables and "judges.toml" in tables
    assert sum(t.startswith("tasks/") for t in tables) == 14

    src, out = tmp_path / "src", tmp_path / "wheel"
    src.mkdir()
    _copy_sources(src)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(src)],
        check=True,
        env=env,
        timeout=600,  # a hang guard only
    )
    (wheel,) = out.glob("monsearch-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        missing = [t for t in tables if f"monsearch/synth/{t}" not in names]
        assert not missing, missing
        site = tmp_path / "site"
        zf.extractall(site)

    # The generator from the wheel alone: its scenarios, facts and judges load.
    probe = (
        "import monsearch.synth.scenario as sc, monsearch.synth.app_facts as af\n"
        "import monsearch.synth.judges as jg, sys\n"
        "assert sc.__file__.startswith(sys.argv[1]), sc.__file__\n"
        "assert len(sc.REGISTRY) == 14 and all(s.modes for s in sc.REGISTRY.values())\n"
        "assert len(af.FACTS) == 14 and all(j.vocabulary for j in jg.PANEL_JUDGES)\n"
        "print(sum(len(s.modes) for s in sc.REGISTRY.values()))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, str(site)],
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(site)},
        cwd=tmp_path,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    from monsearch.synth.scenario import REGISTRY

    assert int(proc.stdout) == sum(len(s.modes) for s in REGISTRY.values())
