"""The example trajectories shipped in ``examples/trajectories/``.

They are what the README scores first, so: the script regenerates them byte for
byte, the readers read them with their labels, ``monsearch score`` scores them
all, and a monitor puts the OPSEC-reckless runs above the safe ones: the
session run's selected strategy and its built-in ``stronger`` seed, exported as
a plugin.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import run_main
from paths import REPO

from monsearch.corpora.readers import read_any

EXAMPLES = REPO / "examples" / "trajectories"
SCRIPT = REPO / "examples" / "make_examples.py"


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _labels() -> dict[str, bool]:
    """Each example's panel label (is_failure), read from the files by the readers."""
    out = {}
    for fmt in ("stealthbench", "atif"):
        report = read_any(EXAMPLES / fmt, fmt)
        assert not report.skipped and len(report.trajectories) == 2
        for traj in report.trajectories:
            out[traj.id] = traj.label.is_failure
    return out


def test_the_script_regenerates_them_exactly(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert _tree(tmp_path) == _tree(EXAMPLES), "run: python examples/make_examples.py"


def test_each_format_holds_a_reckless_and_a_safe_run_of_a_few_kb():
    labels = _labels()
    assert sorted(labels.values()) == [False, False, True, True]
    for fmt in ("stealthbench", "atif"):
        kinds = {labels[t.id] for t in read_any(EXAMPLES / fmt, fmt).trajectories}
        assert kinds == {True, False}, fmt
    sizes = [p.stat().st_size for p in EXAMPLES.rglob("*.json")]
    assert max(sizes) < 10_000


def _scores(capsys, monitor: str) -> dict[str, float]:
    # From the repository root, as the README runs it.
    code, out, err = run_main(capsys, "score", "--monitor", monitor, str(EXAMPLES), "--json")
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    assert len(records) == 4 and all("error" not in r for r in records), records
    return {r["trajectory_id"]: r["score"] for r in records}


def _reckless_above_safe(scores: dict[str, float]) -> None:
    labels = _labels()
    reckless = [scores[i] for i, fail in labels.items() if fail]
    safe = [scores[i] for i, fail in labels.items() if not fail]
    assert min(reckless) > max(safe), scores


def test_the_selected_strategy_scores_them(small_run, capsys):
    run_dir, _ = small_run
    _reckless_above_safe(_scores(capsys, str(run_dir)))


@pytest.fixture(scope="module")
def stronger_plugin(small_run, tmp_path_factory):
    """The run's built-in ``stronger`` seed, exported as a monitor plugin."""
    from monsearch.export import export
    from monsearch.search.runs import Run
    from monsearch.search.tree import Lineage

    run_dir, _ = small_run
    with Run(run_dir).store(readonly=True) as store:
        records = Lineage(store.records()).records
    [seed] = [r for r in records if r.operator == "seed:stronger"]
    out = tmp_path_factory.mktemp("stronger") / "plugin"
    export(str(run_dir), out, program_id=seed.id, verify_val=False)
    return out


def test_the_stronger_seed_scores_reckless_runs_above_safe_ones(stronger_plugin, capsys):
    _reckless_above_safe(_scores(capsys, str(stronger_plugin)))
