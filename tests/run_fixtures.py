"""Real runs for the tests: a small synthetic corpus and ``monsearch evolve`` on it.

Runs are made by the real command in a subprocess (``python -m monsearch evolve``),
so the tests see exactly what a user's run folder holds. The corpus is small
(2,000 trajectories) to keep the suite fast; it is built once per test session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

SMALL_CORPUS_SIZE = 2000


def build_small_corpus(folder: Path, *, seed: int = 0, size: int = SMALL_CORPUS_SIZE) -> Path:
    out = folder / f"synth-s{seed}-n{size}"
    if not (out / "manifest.json").exists():
        subprocess.run(
            [sys.executable, "-m", "monsearch", "corpus", "synth", "--size", str(size),
             "--seed", str(seed), "--out", str(out)],
            check=True,
            capture_output=True,
            env=_env(),
        )
    return out


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONHASHSEED", None)  # evolve must arrange it itself
    env.update(extra)
    return env


def evolve(
    runs_dir: Path,
    corpus: Path,
    *args: str,
    run_id: str = "r",
    budget: int = 8,
    check: bool = True,
    env: dict[str, str] | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    """``monsearch evolve`` in a subprocess (JSON outcome on stdout)."""
    cmd = [
        sys.executable, "-m", "monsearch", "evolve", "--corpus", str(corpus),
        "--runs-dir", str(runs_dir), "--budget", str(budget), "--quiet", "--json",
        "--workers", "2", "--optuna-trials", "3",
    ]
    if "--resume" not in args:
        cmd += ["--run-id", run_id]
    cmd += list(args)
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env=env or _env(), timeout=timeout
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"evolve failed ({proc.returncode}):\n{proc.stderr}\n{proc.stdout}")
    return proc


def make_run(runs_dir: Path, corpus: Path, *, run_id: str = "r", budget: int = 8,
             args: tuple[str, ...] = ()) -> dict[str, Any]:
    """A finished run folder ``runs_dir/run_id``; returns evolve's JSON outcome."""
    proc = evolve(runs_dir, corpus, *args, run_id=run_id, budget=budget)
    return json.loads(proc.stdout)
