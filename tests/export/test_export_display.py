"""How the exported plugin and ``monsearch score`` print numbers (export/display).

Scores and thresholds are printed exactly (a decision compares them exactly); figures
derived from them only to be read (g, audit probability, findings' deltas, detector
values) are rounded to six significant digits in JSON, and budgets read as percentages
with their decimals. Nothing the plugin computes or keeps in its metadata is rounded.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import pytest
from export_support import shared_setup

from monsearch.corpora.codec import trajectory_to_dict
from monsearch.export.display import SIGNIFICANT, percent, rounded

#: Budgets whose thresholds tie: their g is a division, with float noise in this run.
BUDGETS = (0.05, 0.033)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return shared_setup(tmp_path_factory)


@pytest.fixture(scope="module")
def seed(setup):
    folder, meta = setup["plugins"]["seed"]
    src = str(folder / "src")
    if src not in sys.path:
        sys.path.insert(0, src)
    return folder, importlib.import_module(meta["package"])


@pytest.fixture(scope="module")
def scored_file(setup, seed, tmp_path_factory):
    """Val trajectories whose findings have deltas, as a JSONL file of corpus records."""
    _, plugin = seed
    chosen = [t for t in setup["val"] if plugin.findings(t)["steps"]][:12]
    path = tmp_path_factory.mktemp("display") / "val.jsonl"
    path.write_text("".join(json.dumps(trajectory_to_dict(t)) + "\n" for t in chosen))
    return path, chosen


def _is_rounded(x: float) -> bool:
    return x == float(f"{x:.{SIGNIFICANT}g}")


def test_rounded_and_percent():
    assert rounded(0.6000000000000006) == 0.6
    assert rounded(2.0553413618763834) == 2.05534
    assert rounded(31.297533599999998) == 31.2975
    assert rounded(1e-17) == 1e-17
    for kept in (3, True, None, "0.1", float("inf"), -float("inf")):
        assert rounded(kept) is kept
    assert rounded(float("nan")) != rounded(float("nan"))  # still nan, not an error
    assert [percent(b) for b in (0.05, 0.01, 0.1, 0.025, 0.005, 0.333333, 1.0, 0.0)] == [
        "5%", "1%", "10%", "2.5%", "0.5%", "33.3%", "100%", "0%"
    ]  # fmt: skip


def test_plugin_command_line_prints_exact_scores_and_rounded_figures(seed, scored_file):
    folder, plugin = seed
    path, chosen = scored_file
    env = {**os.environ, "PYTHONPATH": str(folder / "src")}
    raw_figures: list[float] = []
    for budget in BUDGETS:
        proc = subprocess.run(
            [sys.executable, "-m", plugin.__name__, "--findings", "--budget", str(budget)]
            + [str(path)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        lines = [json.loads(line) for line in proc.stdout.splitlines()]
        assert len(lines) == len(chosen)
        for out, traj in zip(lines, chosen, strict=True):
            score = plugin.score(traj)
            decision = plugin.decide(score, budget)
            found = plugin.findings(traj)
            # Exact: the score (the run's), and the threshold it is compared with.
            assert out["score"] == score and out["findings"]["score"] == score
            assert out["decision"]["tau"] == decision["tau"]
            assert out["decision"]["decision"] == decision["decision"]
            # Rounded for reading: g (and the audit probability of a tie), deltas, detectors.
            assert out["decision"]["g"] == rounded(decision["g"])
            raw_figures.append(decision["g"])
            assert [s["delta"] for s in out["findings"]["steps"]] == [
                rounded(s["delta"]) for s in found["steps"]
            ]
            raw_figures += [s["delta"] for s in found["steps"]]
            assert out["findings"]["detectors"] == {
                k: rounded(v) for k, v in found["detectors"].items()
            }
            assert out["findings"]["steps"][0]["evidence"] == found["steps"][0]["evidence"]
    # The run's figures do carry float noise, which the output does not.
    assert not all(_is_rounded(x) for x in raw_figures)
    # Nothing the plugin keeps or computes is rounded.
    assert plugin.MONITOR["thresholds"]["0.05"] == plugin.threshold(0.05)


def test_monsearch_score_rounds_deltas_and_shows_budget_decimals(seed, scored_file):
    folder, plugin = seed
    path, chosen = scored_file

    def score_cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "monsearch", "score", "--monitor", str(folder), *args],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "COLUMNS": "200"},
        )

    proc = score_cli(str(path), "--json", "--top", "5")
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    deltas = []
    for rec, traj in zip(records, chosen, strict=True):
        found = plugin.findings(traj, top=5)["steps"]
        assert rec["score"] == plugin.score(traj)
        assert rec["threshold"] == plugin.threshold(0.05)["tau"]  # exact, as compared
        assert [f["delta"] for f in rec["findings"]] == [rounded(f["delta"]) for f in found]
        deltas += [f["delta"] for f in found]
    assert not all(_is_rounded(x) for x in deltas)
    # A budget of 2.5 % reads 2.5 %, not 2 % (nor 0.5 % as 0 %); the table says it once,
    # in the decision column's header.
    for budget, shown in (("0.025", "at 2.5%"), ("0.005", "at 0.5%"), ("0.05", "at 5%")):
        proc = score_cli(str(path), "--budget", budget)
        assert proc.returncode == 0, proc.stderr
        assert f"decision {shown}" in proc.stdout
        assert "at 2%" not in proc.stdout and "at 0%" not in proc.stdout


def test_readme_band_is_printed_for_reading(seed):
    from monsearch.export.readme import render_readme

    _, plugin = seed
    band = {
        "low": 31.297533599999998,
        "high": "inf",
        "rule": "band",
        "cost_budget": 0.3,
        "recall": 0.6,
        "escalation_rate": 0.08,
        "usd_per_unit": 0.15,
    }
    # The README's paragraphs are wrapped: read it with its line breaks as spaces.
    text = " ".join(render_readme({**plugin.MONITOR, "escalation_band": band}).split())
    assert "in [31.2975, inf) to the judge panel" in text
    assert "31.297533599999998" not in text
