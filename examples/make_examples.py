"""Regenerate the example trajectories in ``examples/trajectories/``.

Four runs from monsearch's synthetic generator (seed 23, not the default
corpus's seed 0, so no run made on the default corpus has seen them), written
by monsearch's own writers (``monsearch.corpora.writers``, the code behind
``monsearch corpus export``):

- ``stealthbench/``: a StealthBench results tree holding two runs of one task,
  one OPSEC-reckless and one safe, in the harness's own dialect, with the label
  panel's verdicts in ``panel-verdicts/`` and the oracle's in ``verdicts/``;
- ``atif/``: the same for another task as canonical ATIF files, the verdicts
  under ``extra.monsearch``.

A pair is a solved run the panel unanimously judged an OPSEC failure and one it
unanimously judged stealthy, both agreeing with what the scenario really did;
of the tasks with such a pair, the two whose pairs are smallest on disk. The
choice never looks at a monitor's score. The output is the same on every run
of this script (same monsearch, same files):

    python examples/make_examples.py
"""

from __future__ import annotations

import argparse
import shutil
from collections import defaultdict
from pathlib import Path

from monsearch.corpora.model import Trajectory
from monsearch.corpora.writers import planned_files, write_files
from monsearch.synth.generate import generate

SEED = 23
#: Runs generated to choose from (every task has clear pairs among them).
POOL = 1500
FORMATS = ("stealthbench", "atif")


def _clear(traj: Trajectory) -> str | None:
    """``"fail"`` or ``"pass"`` for a solved run the panel judged unanimously and
    rightly (as the scenario's ground truth says), else None."""
    label = traj.label
    if label is None or traj.solved is not True or not label.unanimous:
        return None
    if label.is_failure != traj.meta.get("ground_truth_failure"):
        return None
    return "fail" if label.is_failure else "pass"


def _size(traj: Trajectory, fmt: str) -> int:
    return sum(len(data) for data in planned_files([traj], fmt).values())


def choose(trajectories: list[Trajectory]) -> dict[str, list[Trajectory]]:
    """``{format: [reckless run, safe run]}``, each pair from its own task."""
    smallest: dict[str, dict[str, tuple[int, str, Trajectory]]] = defaultdict(dict)
    for traj in trajectories:
        kind = _clear(traj)
        if kind is None:
            continue
        key = (_size(traj, "atif"), traj.id, traj)
        best = smallest[traj.task].get(kind)
        if best is None or key[:2] < best[:2]:
            smallest[traj.task][kind] = key
    pairs = sorted(
        (pair["fail"][0] + pair["pass"][0], task, [pair["fail"][2], pair["pass"][2]])
        for task, pair in smallest.items()
        if len(pair) == 2
    )
    if len(pairs) < len(FORMATS):
        raise SystemExit(f"only {len(pairs)} task(s) with a clear pair among {POOL} runs")
    return {fmt: pairs[i][2] for i, fmt in enumerate(FORMATS)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent / "trajectories",
        help="folder to (re)write [default: examples/trajectories next to this script]",
    )
    out = parser.parse_args().out
    chosen = choose(generate(POOL, SEED))
    for fmt, runs in chosen.items():
        shutil.rmtree(out / fmt, ignore_errors=True)
        write_files(out / fmt, planned_files(runs, fmt))
        for traj in runs:
            kind = "reckless" if traj.label.is_failure else "safe"
            print(f"{fmt}: {traj.id} ({traj.task}, {traj.generator}, {kind})")


if __name__ == "__main__":
    main()
