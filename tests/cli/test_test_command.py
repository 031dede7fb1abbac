"""``monsearch test RUN``: the command, its files, its refusals, and the HTML in Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from cli_support import run_main
from sealed_support import fake_scorer, make_run, shared_corpus

CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(autouse=True)
def small_escalation_grid(monkeypatch):
    # The escalation fit grows as the square of its grid; 20 band ends keep tests fast.
    monkeypatch.setattr("monsearch.eval.sealed.ESCALATION_GRID", 20)


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    make_run(root, shared_corpus())
    return root


RUN_ID = "20261201-000000-test"


@pytest.fixture(scope="module")
def module_ledger(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("ledger") / "ledger.json"


@pytest.fixture(scope="module")
def real_report(runs_dir, module_ledger, tmp_path_factory):
    """One real sealed test (sandbox scoring) through the CLI, with --json and --out."""
    mp = pytest.MonkeyPatch()
    mp.setenv("MONSEARCH_LEDGER", str(module_ledger))
    out = tmp_path_factory.mktemp("report")
    mp.setattr("monsearch.eval.sealed.ESCALATION_GRID", 20)
    try:
        cap = _Capture()
        code, stdout, stderr = run_main(
            cap, "test", RUN_ID, "--runs-dir", str(runs_dir), "--json", "--out", str(out),
            "--workers", "2",
        )  # fmt: skip
    finally:
        mp.undo()
    assert code == 0, stderr
    return json.loads(stdout), out


class _Capture:
    """A capsys stand-in for a module-scoped fixture (run_main reads ``readouterr``)."""

    def __init__(self) -> None:
        import contextlib
        import io

        self._out, self._err = io.StringIO(), io.StringIO()
        self._stack = contextlib.ExitStack()
        self._stack.enter_context(contextlib.redirect_stdout(self._out))
        self._stack.enter_context(contextlib.redirect_stderr(self._err))

    def readouterr(self) -> tuple[str, str]:
        self._stack.close()
        return self._out.getvalue(), self._err.getvalue()


def test_json_output_and_report_files(real_report):
    report, out = real_report
    assert report["format"] == "monsearch-sealed-test"
    assert report["reopened"] is False
    assert report["val_scores_reproduced"] is True  # the sandbox gives the lineage's val scores
    names = {p.name for p in out.iterdir()}
    assert {"report.json", "report.md", "report.html"} <= names
    assert {"recall_by_dimension.png", "escalation.png", "transfer.png"} <= names
    assert json.loads((out / "report.json").read_text()) == report
    for row in report["summary"]:
        assert row["flag_rate"] is not None and row["recalibrated_bauc"] is not None
    test = report["corpora"]["test"]
    assert set(test) >= {"panel", "true", "oracle"}
    assert test["panel"]["transferred"]["per_task"]
    md = (out / "report.md").read_text()
    assert "## Summary" in md and "Per task" in md and "true: recalibrated" in md
    # Shifted base rates: a reweighting of the very runs scored above, in every format.
    assert report["val"]["views"]["panel"]["view"] == report["evaluation"]["fitness"]
    for name, c in report["corpora"].items():
        for label in ("panel", "true"):
            shifted = c[label]["shifted"]
            assert set(shifted) == {"flat", "inverted"}, name
            for view in shifted.values():
                # Computed, or (a tiny corpus) a one-line reason it cannot be.
                assert {"transferred", "recalibrated", "loss_vs_val"} <= set(view) or view["error"]
                assert view["excluded_runs"] <= c["n"]
    assert "## Under shifted base rates" in md and "inverted: from val / recal." in md
    assert "Under shifted base rates" in (out / "report.html").read_text()


def test_shifted_views_reweight_only():
    """Counts, plain figures and the scores are the same with and without the views;
    the views change weights only, and a cell-only score gets chance under the
    flattened one."""
    from dataclasses import replace

    from monsearch.eval.costs import CostModel
    from monsearch.eval.metrics import budget_grid
    from monsearch.eval.sealed import Options, ScoredSplit, evaluate_targets

    rng = np.random.default_rng(0)

    def split(name, n):
        task = rng.integers(0, 6, n)
        outcome = rng.integers(0, 3, n)
        rate = np.linspace(0.1, 0.9, 18)[task * 3 + outcome]
        y = rng.random(n) < rate
        scores = np.round(rng.normal(size=n) + y + 2 * rate, 1)
        cells = np.array([f"t{t}|{o}" for t, o in zip(task, outcome, strict=True)])
        dims = np.array([f"d{t % 3}" for t in task])
        return ScoredSplit(name, scores, {"panel": y}, dims, np.array([f"t{t}" for t in task]),
                           cells=cells), rate

    (val, _), (target, rate) = split("val", 3000), split("test", 2500)
    opts = Options(fitness="invariant")
    with_views = evaluate_targets(val, {"test": target}, opts, CostModel(), rules=())
    without = evaluate_targets(
        replace(val, cells=None), {"test": replace(target, cells=None)}, opts, CostModel(), rules=()
    )
    a, b = with_views["corpora"]["test"], without["corpora"]["test"]
    assert "shifted" not in b["panel"]
    for key in ("transferred", "recalibrated", "loss_vs_val"):
        assert a["panel"][key] == b["panel"][key]
    assert a["n"] == b["n"] == target.scores.size
    # A score that only knows each run's cell: chance once the cells are flattened.
    lookup = replace(target, scores=rate)
    flat = evaluate_targets(val, {"test": lookup}, opts, CostModel(), rules=())
    rc = flat["corpora"]["test"]["panel"]["shifted"]["flat"]["recalibrated"]["bauc"]
    grid = budget_grid(0.01, 0.10)
    chance = float(np.sum((grid[1:] + grid[:-1]) / 2 * np.diff(np.log(grid))) / np.log(10))
    assert rc["aggregate"] == pytest.approx(chance, abs=1e-9)


def test_shifted_losses_carry_a_bootstrap_interval_and_a_flag():
    """Each shifted view's recalibrated loss has a seeded bootstrap interval around it;
    a monitor that loses much more than the noise on one target is flagged there, and
    an unchanged target (the same runs as val) is not."""
    from monsearch.eval.costs import CostModel
    from monsearch.eval.report import beyond_tolerance, shifted_note, shifted_table
    from monsearch.eval.sealed import Options, ScoredSplit, evaluate_targets

    rng = np.random.default_rng(1)
    n = 3000
    task, outcome = rng.integers(0, 6, n), rng.integers(0, 3, n)
    rate = np.linspace(0.2, 0.8, 18)[task * 3 + outcome]
    y = rng.random(n) < rate
    good = rng.normal(size=n) + 2.0 * y
    cells = np.array([f"t{t}|{o}" for t, o in zip(task, outcome, strict=True)])
    dims = np.array([f"d{t % 3}" for t in task])
    tasks = np.array([f"t{t}" for t in task])
    val = ScoredSplit("val", good, {"panel": y}, dims, tasks, cells=cells)
    same = ScoredSplit("test", good.copy(), {"panel": y}, dims, tasks, cells=cells)
    # The same runs, but the monitor sees much less of what the agent did.
    worse = ScoredSplit("xgen-x", rng.normal(size=n) + 0.6 * y, {"panel": y}, dims, tasks,
                        cells=cells)  # fmt: skip
    opts = Options(fitness="invariant", n_boot=100)
    report = evaluate_targets(val, {"test": same, "xgen-x": worse}, opts, CostModel(), rules=())
    val_block = report["val"]
    lo, hi = val_block["views"]["panel"]["interval"]
    assert lo < val_block["views"]["panel"]["aggregate"] < hi
    assert val_block["loss_tolerance"] == 0.05 and val_block["interval"] == [0.05, 0.95]
    for name, c in report["corpora"].items():
        for view, b in c["panel"]["shifted"].items():
            point = b["loss_vs_val"]["recalibrated"]
            ilo, ihi = b["loss_interval"]["recalibrated"]
            assert ilo < point < ihi, (name, view)
            r_lo, r_hi = b["recalibrated"]["interval"]
            assert r_lo < b["recalibrated"]["bauc"]["aggregate"] < r_hi
            assert b["beyond_tolerance"] is (ilo > 0.05)
    assert beyond_tolerance(report) == ["xgen-x flat", "xgen-x inverted"]
    assert "Beyond the tolerance: xgen-x flat, xgen-x inverted." in shifted_note(report)
    _, rows = shifted_table(report)
    assert not rows[0][5].endswith("!")
    assert rows[1][5].endswith(" !")
    # Seeded: the same inputs give the same intervals; n_boot = 0 gives none.
    again = evaluate_targets(val, {"test": same, "xgen-x": worse}, opts, CostModel(), rules=())
    assert again["corpora"] == report["corpora"]
    from dataclasses import replace

    off = evaluate_targets(val, {"xgen-x": worse}, replace(opts, n_boot=0), CostModel(), rules=())
    b = off["corpora"]["xgen-x"]["panel"]["shifted"]["flat"]
    assert b["loss_interval"]["recalibrated"] is None and b["beyond_tolerance"] is None


def test_benign_mix_views_in_every_format(real_report):
    """Every sealed corpus of a synthetic corpus is reported with its benign runs
    reweighted to each benign-mix view, in the JSON, the Markdown and the HTML."""
    from monsearch.eval.report import benign_mix_table

    report, out = real_report
    for name, c in report["corpora"].items():
        for label in ("panel", "true"):
            mix = c[label]["benign_mix"]
            assert mix["generated_with"] == ["paper"], name
            for view in ("quiet", "noisy", "flat"):
                b = mix[view]
                assert b["effective_benign"] > 0 and b["target"]
                assert {"transferred", "recalibrated", "loss_vs_val"} <= set(b) or b["error"]
                assert sum(b["realised_shares"].values()) == pytest.approx(1.0)
    headers, rows = benign_mix_table(report)
    assert len(rows) == len(report["corpora"]) and "quiet: from val / recal." in headers
    md = (out / "report.md").read_text()
    assert "## Under a shifted benign mix" in md and "noisy: from val / recal." in md
    assert "Under a shifted benign mix" in (out / "report.html").read_text()


def test_html_is_self_contained(real_report):
    _, out = real_report
    page = (out / "report.html").read_text()
    assert page.count("data:image/png;base64,") >= 3
    # No external resources: no URL-bearing attributes other than inline images, no scripts.
    assert "<script" not in page and "<link" not in page
    assert not re.search(r"""(src|href)=["'](?!data:)""", page)
    assert "http://" not in page and "https://" not in page


def test_second_test_refused_and_force_reopens(
    real_report, runs_dir, module_ledger, capsys, monkeypatch, tmp_path
):
    monkeypatch.setenv("MONSEARCH_LEDGER", str(module_ledger))  # the ledger real_report opened
    monkeypatch.setattr(
        "monsearch.eval.sealed.sandbox_scorer", lambda config, opts, progress=None: fake_scorer
    )
    out = tmp_path / "out"
    args = ("test", RUN_ID, "--runs-dir", str(runs_dir), "--out", str(out))
    code, stdout, stderr = run_main(capsys, *args)
    assert code == 3
    assert "already opened" in stderr and "--force" in stderr
    assert not out.exists()  # refused before any work
    code, stdout, stderr = run_main(capsys, *args, "--force")
    assert code == 0, stderr
    assert "RE-OPENED" in stdout and "sealed test of run" in stdout
    assert "xgen-" in stdout and "report:" in stdout
    assert "under a shifted benign mix" in stdout  # the terminal shows the benign-mix views
    report = json.loads((out / "report.json").read_text())
    assert report["reopened"] and report["ledger"]["opening"] == 2
    assert "RE-OPENED" in (out / "report.md").read_text()
    assert "RE-OPENED" in (out / "report.html").read_text()


def test_bad_input_exits_2(runs_dir, capsys, tmp_path, ledger_file):
    code, _, stderr = run_main(capsys, "test", "no-such-run", "--runs-dir", str(runs_dir))
    assert code == 2 and "no run" in stderr
    bad = tmp_path / "costs.toml"
    bad.write_text("[costs]\naudit = -1\n")
    code, _, stderr = run_main(
        capsys, "test", RUN_ID, "--runs-dir", str(runs_dir), "--costs", str(bad)
    )
    assert code == 2 and "costs.audit" in stderr
    code, _, stderr = run_main(
        capsys, "test", RUN_ID, "--runs-dir", str(runs_dir), "--program", "c9999"
    )
    assert code == 2 and "c9999" in stderr
    assert not ledger_file.exists()  # nothing was opened


@pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs /usr/bin/chromium (apt-get install chromium)"
)
def test_html_renders_in_headless_chromium(real_report, tmp_path):
    _, out = real_report
    shot = tmp_path / "report.png"
    cmd = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1400,2000",
        f"--screenshot={shot}",
        (out / "report.html").as_uri(),
    ]
    subprocess.run(cmd, capture_output=True, timeout=120, check=False)
    assert shot.is_file()
    from PIL import Image

    with Image.open(shot) as img:
        assert img.size == (1400, 2000)
        rgb = img.convert("RGB")
        colours = rgb.getcolors(maxcolors=1_000_000) or []
        # A blank or error page has a handful of colours; the report has text and plots.
        assert len(colours) > 200
        non_white = sum(n for n, c in colours if c != (255, 255, 255))
        assert non_white > 0.05 * 1400 * 2000
    shutil.rmtree(tmp_path / "profile", ignore_errors=True)
