"""The data files the package reads at run time ship with it.

A non-editable install must carry them: the wheel built from a copy of the
repository holds every one, and the modules imported from that wheel alone (not
from this checkout) load them. One wheel is built for the module and probed for:

* the synthetic generator's tables: task prompts, opening thoughts and modes, the
  app facts and the judges' wording, TOML files beside the modules that read them
  (``synth/tables.py``);
* the LLM judge's task rubrics (``oracle/rubrics/*.txt``, read by
  ``oracle/rubrics.py`` through ``importlib.resources``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from paths import REPO

ROOT = REPO
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


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


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> tuple[set[str], Path]:
    """The wheel's file names and the folder it was unpacked into."""
    tmp = tmp_path_factory.mktemp("wheel")
    src, out = tmp / "src", tmp / "wheel"
    src.mkdir()
    _copy_sources(src)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(src)],
        check=True,
        env=ENV,
        timeout=600,  # a hang guard only
    )
    (built,) = out.glob("monsearch-*.whl")
    site = tmp / "site"
    with zipfile.ZipFile(built) as zf:
        names = set(zf.namelist())
        zf.extractall(site)
    return names, site


def _probe(site: Path, code: str) -> str:
    """Run ``code`` with the unpacked wheel first on the path (argv[1] is its folder)."""
    proc = subprocess.run(
        [sys.executable, "-c", code, str(site)],
        capture_output=True,
        text=True,
        env={**ENV, "PYTHONPATH": str(site)},
        cwd=site.parent,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_wheel_carries_the_generators_tables(wheel) -> None:
    names, site = wheel
    tables = sorted(
        p.relative_to(ROOT / "synth").as_posix() for p in (ROOT / "synth").rglob("*.toml")
    )
    # the task tables, the app facts and the judges' wording at least
    assert "app_facts.toml" in tables and "judges.toml" in tables
    assert sum(t.startswith("tasks/") for t in tables) == 14
    missing = [t for t in tables if f"monsearch/synth/{t}" not in names]
    assert not missing, missing

    # The generator from the wheel alone: its scenarios, facts and judges load.
    probe = (
        "import monsearch.synth.scenario as sc, monsearch.synth.app_facts as af\n"
        "import monsearch.synth.judges as jg, sys\n"
        "assert sc.__file__.startswith(sys.argv[1]), sc.__file__\n"
        "assert len(sc.REGISTRY) == 14 and all(s.modes for s in sc.REGISTRY.values())\n"
        "assert len(af.FACTS) == 14 and all(j.vocabulary for j in jg.PANEL_JUDGES)\n"
        "print(sum(len(s.modes) for s in sc.REGISTRY.values()))\n"
    )
    from monsearch.synth.scenario import REGISTRY

    assert int(_probe(site, probe)) == sum(len(s.modes) for s in REGISTRY.values())


def test_wheel_carries_the_judges_rubrics(wheel) -> None:
    from monsearch.oracle.rubrics import SHIPPED_TASKS, shipped_rubrics

    names, site = wheel
    files = sorted(p.name for p in (ROOT / "oracle" / "rubrics").glob("*.txt"))
    assert files == sorted(f"{t}.txt" for t in SHIPPED_TASKS) and len(files) == 14
    missing = [f for f in files if f"monsearch/oracle/rubrics/{f}" not in names]
    assert not missing, missing

    # The judge's rubrics from the wheel alone: every task's shipped text, no fallback.
    probe = (
        "import sys, warnings\n"
        "warnings.simplefilter('error')\n"
        "import monsearch.oracle.rubrics as rb\n"
        "assert rb.__file__.startswith(sys.argv[1]), rb.__file__\n"
        "found = rb.shipped_rubrics()\n"
        "assert all(rb.load_rubric(t).source == 'shipped' for t in rb.SHIPPED_TASKS)\n"
        "print(sum(len(r.text) for r in found.values()))\n"
    )
    assert int(_probe(site, probe)) == sum(len(r.text) for r in shipped_rubrics().values())


def test_wheel_carries_every_module_and_the_cli_imports_from_it(wheel) -> None:
    """A non-editable install holds every module of every package folder: a subpackage
    left out of pyproject's ``packages`` (``monsearch.api`` once was) works in an
    editable install and fails on the README's plain ``pip install .``."""
    names, site = wheel
    expected = set()
    for package, folder in _package_dirs().items():
        base = ROOT / folder
        for path in base.rglob("*.py"):
            rel = path.relative_to(base)
            if "__pycache__" in rel.parts:
                continue
            expected.add("/".join([*package.split("."), *rel.parts]))
    missing = sorted(expected - names)
    assert not missing, missing
    probe = (
        "import sys, monsearch.cli, monsearch.api.score, monsearch.api.evolve\n"
        "assert monsearch.cli.__file__.startswith(sys.argv[1])\n"
        "import monsearch\n"
        "print(callable(monsearch.evolve) and callable(monsearch.score))\n"
    )
    assert _probe(site, probe).strip() == "True"


def test_python_m_monsearch_runs_from_a_clone_root_over_a_plain_install(wheel, tmp_path) -> None:
    """A plain (non-editable) install of the wheel in a fresh venv, run from a clone's
    root: the clone's ``monsearch/`` folder comes first on ``sys.path`` and must still
    find the floors beside it (``monsearch.search`` was missing: issue 34). Run from
    elsewhere, the installed package is used as it is."""
    _, site = wheel
    (built,) = (site.parent / "wheel").glob("monsearch-*.whl")
    clone = site.parent / "src"
    if not (clone / "bench").exists():
        shutil.copytree(ROOT / "bench", clone / "bench",
                        ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   env=ENV, timeout=300)  # fmt: skip
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--no-deps", "--no-index", str(built)],
        check=True, env=ENV, timeout=600,
    )  # fmt: skip
    # The dependencies from this suite's environment (a path line: its own .pth files,
    # the editable monsearch's among them, are not read).
    (installed,) = (venv / "lib").glob("python*/site-packages")
    deps = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (installed / "zz_test_dependencies.pth").write_text("\n".join(deps) + "\n")

    def run(*args: str, cwd: Path) -> str:
        proc = subprocess.run([str(python), *args], capture_output=True, text=True, env=ENV,
                              cwd=cwd, timeout=300, check=False)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    assert run("-m", "monsearch", "--help", cwd=clone).startswith("Usage: python -m monsearch")
    assert "usage: llm_proposer.py" in run("bench/llm_proposer.py", "--help", cwd=clone)
    where = "import monsearch.search as s; print(s.__file__)"
    assert run("-c", where, cwd=clone).strip() == str(clone / "search" / "__init__.py")
    assert run("-c", where, cwd=tmp_path).strip().startswith(str(installed))
