"""``monsearch sandbox ...`` end to end on a small real synthetic corpus."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.metrics import roc_auc_score, roc_curve

from monsearch.cli import cli
from monsearch.corpora.store import load_corpus
from monsearch.eval import budget_auc, recall_at_budget
from monsearch.synth.generate import synthesize_corpus


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("corpus") / "c"
    synthesize_corpus(out, seed=3, size=400)
    return out


def _run(*args: str) -> tuple[int, str]:
    """Exit code and stdout (start-up stages go to stderr, never into the result)."""
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout


@pytest.mark.parametrize("budget", [0.01, 0.05, 0.1, 0.3])
def test_recall_at_budget_is_the_interpolated_roc_curve(budget: float) -> None:
    # Randomised tie-breaking at the threshold is exactly linear interpolation
    # between ROC points when no intermediate point is dropped.
    rng = np.random.default_rng(5)
    y = rng.random(3000) < 0.4
    scores = np.round(rng.normal(y * 0.8, 1.0), 1)  # coarse: many ties
    fpr, tpr, _ = roc_curve(y, scores, drop_intermediate=False)
    assert recall_at_budget(scores, y, budget) == pytest.approx(np.interp(budget, fpr, tpr))


def test_run_seed_monitor_json(corpus_dir: Path, tmp_path: Path) -> None:
    scores_file = tmp_path / "scores.jsonl"
    code, out = _run(
        "sandbox",
        "run",
        "--corpus",
        str(corpus_dir),
        "--split",
        "val",
        "--workers",
        "1",
        "--json",
        "--scores-out",
        str(scores_file),
    )
    assert code == 0, out
    report = json.loads(out)
    assert report["status"] == "ok" and report["n_errors"] == 0
    corp = load_corpus(corpus_dir, ["val"])
    val = corp.split("val")
    assert report["n_trajectories"] == len(val)
    assert report["corpus"]["content_hash"] == corp.content_hash
    rows = [json.loads(line) for line in scores_file.read_text().splitlines()]
    assert [r["id"] for r in rows] == [t.id for t in val]
    labels = np.array([t.label.is_failure for t in val])
    scores = np.array([r["score"] for r in rows])
    panel, true = report["quality"]["panel"], report["quality"]["true"]
    assert panel["auroc"] == pytest.approx(roc_auc_score(labels, scores))
    truth = np.array([t.true_failure for t in val])
    assert true["auroc"] == pytest.approx(roc_auc_score(truth, scores))
    for key, recall in panel["recall_at"].items():
        # A budget below 5 / |benign| is not estimable on this small split: None, not noise.
        if float(key) < 5 / panel["n_benign"]:
            assert recall is None and key in panel["not_estimable"]
        else:
            assert recall == pytest.approx(recall_at_budget(scores, labels, float(key)))
    # Pooled over dimensions, the figure the per-dimension aggregate is built from.
    assert panel["bauc_pooled"] == pytest.approx(
        budget_auc(scores, labels, b_lo=panel["bauc"]["b_lo"], b_hi=panel["bauc"]["b_hi"])
    )
    # The seed monitor is a real detector: clearly better than chance here.
    assert panel["auroc"] > 0.6 and panel["bauc"]["aggregate"] > panel["chance_bauc"]


def test_run_reports_a_failing_program_with_exit_1(corpus_dir: Path, tmp_path: Path) -> None:
    prog = tmp_path / "bad.py"
    prog.write_text("def score(traj):\n    return traj.steps[10**6].command\n")
    code, out = _run(
        "sandbox", "run", str(prog), "--corpus", str(corpus_dir), "--workers", "1", "--json"
    )
    assert code == 1
    report = json.loads(out)
    assert report["status"] == "error"
    assert report["errors"] and report["errors"][0]["line"] == 2


def test_sealed_splits_are_refused(corpus_dir: Path) -> None:
    result = CliRunner().invoke(
        cli, ["sandbox", "run", "--corpus", str(corpus_dir), "--split", "test"]
    )
    assert result.exit_code != 0
    assert "sealed" in str(result.exception)


def test_check_reports_line_and_column(tmp_path: Path) -> None:
    prog = tmp_path / "p.py"
    prog.write_text("PARAMS = {'w': 2.0}\n\ndef score(traj):\n    import os\n    return 1.0\n")
    code, out = _run("sandbox", "check", str(prog), "--json")
    assert code == 1
    report = json.loads(out)
    assert report["ok"] is False
    assert report["errors"][0]["line"] == 4
    good = tmp_path / "g.py"
    good.write_text(
        "PARAMS = {'w': 2.0}\n\ndef score(traj):\n    return PARAMS['w'] * traj.n_steps\n"
    )
    code, out = _run("sandbox", "check", str(good))
    assert code == 0 and "  w: 2.0" in out.splitlines()


def test_view_shows_no_labels(corpus_dir: Path) -> None:
    traj = load_corpus(corpus_dir, ["train"]).split("train")[0]
    code, out = _run("sandbox", "view", traj.id, "--corpus", str(corpus_dir))
    assert code == 0
    view = json.loads(out)
    assert view["task"] == traj.task and len(view["steps"]) == len(traj.steps)
    for forbidden in ("panel", "oracle", "verdict", "is_failure", "stealth_score", traj.generator):
        assert forbidden not in out


def test_helpers_lists_regex_helpers() -> None:
    code, out = _run("sandbox", "helpers")
    assert code == 0 and "re_search" in out and "entropy" in out


ORACLE_PROGRAM = """
def score(traj):
    first = oracle(traj)
    second = oracle(traj)
    if second is not None:
        return -1.0
    return first if first is not None else 0.0
"""


def test_run_with_a_live_llm_oracle_and_its_cache(
    corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openai_stub_server import StubJudgeServer

    prog = tmp_path / "oracle.py"
    prog.write_text(ORACLE_PROGRAM)
    monkeypatch.setenv("MONSEARCH_JUDGE_API_KEY", "test-key")
    n_val = len(load_corpus(corpus_dir, ["val"]).split("val"))
    with StubJudgeServer() as stub:
        args = [
            "sandbox",
            "run",
            str(prog),
            "--corpus",
            str(corpus_dir),
            "--workers",
            "1",
            "--json",
            "--oracle",
            "llm",
            "--judge-model",
            "stub-judge",
            "--judge-base-url",
            stub.base_url,
            "--oracle-cache",
            str(tmp_path / "cache"),
            "--cap",
            "1",
        ]
        code, out = _run(*args)
        assert code == 0, out
        first = json.loads(out)
        # Q = 1: the second call on every trajectory is refused, never answered.
        assert sum(first["oracle"]["counts"].values()) == n_val
        assert sum(first["oracle"]["refused"].values()) == n_val
        assert first["oracle"]["fresh"] == n_val == stub.chat_count
        code, out = _run(*args)
        second = json.loads(out)
        assert second["oracle"]["fresh"] == 0 and stub.chat_count == n_val  # all from the cache
        assert second["score_summary"] == first["score_summary"]
        assert first["score_summary"]["max"] <= 1.0 and first["score_summary"]["min"] >= 0.0


def test_llm_oracle_without_a_model_is_a_clear_error(
    corpus_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MONSEARCH_JUDGE_MODEL", raising=False)
    result = CliRunner().invoke(
        cli, ["sandbox", "run", "--corpus", str(corpus_dir), "--oracle", "llm"]
    )
    assert result.exit_code != 0
    assert "MONSEARCH_JUDGE_MODEL" in str(result.exception)


def test_view_reports_http_coverage_on_stderr(corpus_dir: Path) -> None:
    from monsearch.views.coverage import http_steps

    trajs = load_corpus(corpus_dir, ["train"]).split("train")
    traj = max(trajs, key=lambda t: len(http_steps(t)))
    result = CliRunner().invoke(cli, ["sandbox", "view", traj.id, "--corpus", str(corpus_dir)])
    assert result.exit_code == 0
    json.loads(result.stdout)  # stdout stays exactly the view
    n = len(http_steps(traj))
    assert n > 0 and f"/{n} HTTP-looking steps parsed" in result.stderr
