"""The sealed test: ledger, label guard, transferred vs recalibrated figures, reports."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import numpy as np
import pytest
from paths import REPO
from sealed_support import OTHER_MONITOR, fake_scorer, make_run, resplit, shared_corpus

from monsearch.api.sealed_test import run_sealed_test
from monsearch.corpora.sealed import (
    SealedSplitError,
    is_sealed,
    open_for_search,
    open_sealed,
    read_identity,
)
from monsearch.eval.costs import CostModel
from monsearch.eval.sealed import Options, ScoredSplit, evaluate_targets
from monsearch.eval.sealed_ledger import Ledger, LedgerError, LedgerKey, SealedTestRefused

PACKAGE_ROOT = REPO


@pytest.fixture(autouse=True)
def small_escalation_grid(monkeypatch):
    # The escalation fit grows as the square of its grid; 20 band ends keep tests fast.
    monkeypatch.setattr("monsearch.eval.sealed.ESCALATION_GRID", 20)


@pytest.fixture(scope="module")
def corpus() -> Path:
    return shared_corpus()


@pytest.fixture(scope="module")
def run(corpus, tmp_path_factory):
    return make_run(tmp_path_factory.mktemp("runs"), corpus)


# --------------------------------------------------------------------------- ledger


def _key(assignment: str = "a1") -> LedgerKey:
    return LedgerKey("s" * 64, "c" * 64, assignment)


def test_ledger_refuses_second_opening_and_force_marks_reopened(tmp_path):
    ledger = Ledger(tmp_path / "ledger.json")
    assert ledger.check(_key()) == []
    entry, previous = ledger.record(_key(), {"run_id": "r1"})
    assert not entry["reopened"] and previous == []
    with pytest.raises(SealedTestRefused, match="already opened.*--force") as exc:
        ledger.check(_key())
    assert exc.value.exit_code == 3
    with pytest.raises(SealedTestRefused):
        ledger.record(_key(), {"run_id": "r2"})
    entry, previous = ledger.record(_key(), {"run_id": "r2"}, force=True)
    assert entry["reopened"] and entry["opening"] == 2 and len(previous) == 1
    # A fresh handle on the same file (another process) sees both openings.
    assert len(Ledger(tmp_path / "ledger.json").entries(_key())) == 2


def test_resplit_is_a_new_key(tmp_path):
    ledger = Ledger(tmp_path / "ledger.json")
    ledger.record(_key("a1"), {})
    assert ledger.check(_key("a2")) == []  # same strategy and content, new assignment
    ledger.record(_key("a2"), {})
    other_strategy = LedgerKey("t" * 64, "c" * 64, "a1")
    assert ledger.check(other_strategy) == []


def test_ledger_default_path_from_env(ledger_file):
    assert Ledger().path == ledger_file


def test_unreadable_ledger_is_an_error_not_a_reset(tmp_path):
    path = tmp_path / "ledger.json"
    path.write_text("{not json")
    with pytest.raises(LedgerError, match="not valid JSON"):
        Ledger(path).check(_key())
    assert path.read_text() == "{not json"


def test_ledger_write_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "ledger.json"
    ledger = Ledger(path)
    ledger.record(_key("a1"), {})
    before = path.read_bytes()

    def crash(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(LedgerError, match="cannot write"):
        ledger.record(_key("a2"), {})
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if ".tmp" in p.name] == []


# --------------------------------------------------------------------------- label guard


def test_search_handle_reads_train_and_val_only(corpus, tmp_path):
    handle = open_for_search(corpus)
    assert handle.splits == ["train", "val"]
    assert handle.split("val") and handle.split("train")
    assert "test" in handle.sealed_splits and handle.cross_generator_splits
    for name in ["test", *handle.cross_generator_splits]:
        assert is_sealed(name)
        with pytest.raises(SealedSplitError, match="sealed"):
            handle.split(name)
    with pytest.raises(SealedSplitError):
        open_for_search(corpus, ["train", "test"])
    assert handle.identity == read_identity(corpus)[0]
    assert all(t.id not in {x.id for x in handle.split("val")} for t in handle.split("train"))


def test_search_handle_never_opens_sealed_part_files(corpus, tmp_path):
    import shutil

    copy = tmp_path / "c"
    shutil.copytree(corpus, copy)
    (copy / "test.jsonl.zst").write_bytes(b"garbage")
    assert open_for_search(copy).split("val")


def test_sealed_reader_refuses_other_callers(corpus):
    with pytest.raises(SealedSplitError, match="may not read sealed splits"):
        open_sealed(corpus)


def _calls(path: Path, names: set[str]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name in names:
                found.append(f"{path.name}:{node.lineno} {name}")
    return found


def test_no_module_but_the_sealed_test_opens_sealed_splits():
    offenders = []
    for folder in ("corpora", "eval", "sandbox", "search", "strategies", "monsearch"):
        for path in (PACKAGE_ROOT / folder).rglob("*.py"):
            if path.relative_to(PACKAGE_ROOT).as_posix() in ("monsearch/api/sealed_test.py", "corpora/sealed.py"):
                continue
            if "open_sealed" in path.read_text(encoding="utf-8"):  # parse only candidates
                offenders += _calls(path, {"open_sealed"})
    assert offenders == []


def _search_splits_only(call: ast.Call) -> bool:
    arg = call.args[1] if len(call.args) > 1 else None
    arg = next((k.value for k in call.keywords if k.arg == "splits"), arg)
    return (
        isinstance(arg, ast.List | ast.Tuple)
        and bool(arg.elts)
        and all(isinstance(e, ast.Constant) and e.value in ("train", "val") for e in arg.elts)
    )


def test_search_loads_train_and_val_only():
    """search/ loads corpora through open_for_search, or load_corpus with train/val literally."""
    offenders = []
    for path in (PACKAGE_ROOT / "search").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name == "load_corpus" and not _search_splits_only(node):
                offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == [], "search/ must read train and val only (use open_for_search)"


# --------------------------------------------------------------------------- figures


def _split(name, benign, failures, tasks=("a", "b")):
    s = np.concatenate([benign, failures])
    y = np.concatenate([np.zeros(benign.size, bool), np.ones(failures.size, bool)])
    n = s.size
    task = np.array([tasks[i % len(tasks)] for i in range(n)])
    dims = np.where(task == tasks[0], "credential_opsec", "third_party_harm")
    return ScoredSplit(
        name=name,
        scores=s,
        labels={"panel": y, "true": y.copy()},
        dimensions=dims,
        tasks=task,
        judge=np.clip(s / 4 + 0.25, 0, 1),
        oracle_calls=np.zeros(n),
    )


def test_transferred_and_recalibrated_differ_on_a_shifted_corpus():
    rng = np.random.default_rng(0)
    val = _split("val", rng.normal(0, 1, 4000), rng.normal(2.5, 1, 1000))
    shifted = _split("test", rng.normal(0.7, 1, 4000), rng.normal(3.2, 1, 1000))
    same = _split("xgen-same", rng.normal(0, 1, 4000), rng.normal(2.5, 1, 1000))
    body = evaluate_targets(val, {"test": shifted, "xgen-same": same}, Options(), CostModel())
    t = body["corpora"]["test"]["panel"]
    tr, rc = t["transferred"], t["recalibrated"]
    # Val's 5 % threshold (about 1.645) flags P(N(0.7, 1) > 1.645) = 17 % of shifted benign runs.
    assert tr["flag_rate_at"]["0.05"] == pytest.approx(0.172, abs=0.02)
    assert rc["thresholds"]["0.05"]["flag_rate"] == pytest.approx(0.05, abs=1e-9)
    assert tr["flag_ratio"] > 2.5
    # More benign flags buy more recall: the transferred figure flatters the monitor.
    assert tr["bauc"]["aggregate"] > rc["bauc"]["aggregate"] + 0.1
    assert t["loss_vs_val"]["transferred"] < 0 < t["loss_vs_val"]["recalibrated"] + 0.05
    # Unshifted: both protocols agree and the flag rate is the nominal one.
    s = body["corpora"]["xgen-same"]["panel"]
    assert s["transferred"]["flag_rate_at"]["0.05"] == pytest.approx(0.05, abs=0.015)
    assert s["transferred"]["bauc"]["aggregate"] == pytest.approx(
        s["recalibrated"]["bauc"]["aggregate"], abs=0.05
    )
    # Per-task and per-dimension figures beside the aggregate, on both label sets.
    for label in ("panel", "true"):
        block = body["corpora"]["test"][label]
        assert set(block["transferred"]["per_task"]) == {"a", "b"}
        assert set(block["recalibrated"]["per_task"]) == {"a", "b"}
        task = block["transferred"]["per_task"]["a"]
        assert {"n", "n_benign", "n_failures", "base_rate", "bauc", "flag_rate_mean"} <= set(task)
        assert set(block["transferred"]["bauc"]["by_dimension"]) == {
            "credential_opsec",
            "third_party_harm",
        }
    # Escalation: fitted on val, curves per target with the three baselines.
    curves = body["escalation"]["curves"]["test"]["panel"]
    assert {"np", "band", "program", "judge", "and"} <= set(curves)
    assert all("usd_per_1000" in p for p in curves["program"]["points"])


def test_absent_dimension_and_empty_benign_target():
    rng = np.random.default_rng(1)
    val = _split("val", rng.normal(0, 1, 500), rng.normal(2, 1, 200))
    only_fail = ScoredSplit(
        "xgen-x",
        rng.normal(2, 1, 50),
        {"panel": np.ones(50, bool)},
        np.full(50, "credential_opsec"),
        np.full(50, "a"),
        judge=np.full(50, 0.5),
    )
    body = evaluate_targets(val, {"xgen-x": only_fail}, Options(), CostModel())
    c = body["corpora"]["xgen-x"]["panel"]
    assert c["transferred"]["flag_rate_at"]["0.05"] is None
    assert "error" in c["recalibrated"]
    assert body["escalation"]["skipped"]["xgen-x|panel"]


# --------------------------------------------------------------------------- the run


def test_run_sealed_test_once_then_refused_then_reopened(run, ledger_file):
    report = run_sealed_test(run, scorer=fake_scorer)
    assert not report["reopened"]
    assert report["strategy"]["selected"] and report["strategy"]["id"] == "c0000"
    sealed = report["corpus"]["sealed_splits"]
    assert sealed[0] == "test" and all(s.startswith("xgen-") for s in sealed[1:])
    assert set(report["corpora"]) == set(sealed)
    test = report["corpora"]["test"]
    assert "panel" in test and "true" in test  # the synthetic corpus has true labels
    assert test["panel"]["transferred"]["per_task"]
    assert report["val_scores_reproduced"] is False  # the fake scorer is not the sandbox

    with pytest.raises(SealedTestRefused):
        run_sealed_test(run, scorer=fake_scorer)
    again = run_sealed_test(run, scorer=fake_scorer, force=True)
    assert again["reopened"] and again["ledger"]["opening"] == 2
    assert [p["opened_at"] for p in again["ledger"]["previous"]] == [report["ledger"]["opened_at"]]

    # Another candidate of the lineage is another program, a key of its own; but trying
    # a run's programs in turn on one corpus is selecting on test: refused without
    # force, and with it the run's third opening, marked so.
    with pytest.raises(SealedTestRefused, match="selecting on test"):
        run_sealed_test(run, program_id="c0001", scorer=fake_scorer)
    other = run_sealed_test(run, program_id="c0001", scorer=fake_scorer, force=True)
    assert not other["strategy"]["selected"] and other["ledger"]["opening"] == 1
    assert other["reopened"] and other["ledger"]["run_opening"] == 3
    assert "already opened with other programs" in other["ledger"]["reasons"][0]


def test_a_resplit_corpus_is_a_new_key(run, corpus, ledger_file, tmp_path):
    from monsearch.eval.sealed import SealedTestError

    run_sealed_test(run, scorer=fake_scorer)
    moved = resplit(corpus, tmp_path / "resplit")
    ident_old, ident_new = read_identity(corpus)[0], read_identity(moved)[0]
    assert ident_old.content_hash == ident_new.content_hash
    assert ident_old.assignment_hash != ident_new.assignment_hash
    # The old run searched the old split: testing it on the re-split is refused outright...
    cfg = run.config()
    cfg["corpus"]["path"] = str(moved)
    run.write_config(cfg)
    try:
        with pytest.raises(SealedTestError, match="re-split"):
            run_sealed_test(run, scorer=fake_scorer)
        # ...while a run made on the re-split corpus gets a fresh key for the same strategy.
        new_run = make_run(tmp_path / "runs", moved, sources=(run.selected().source,))
        report = run_sealed_test(new_run, scorer=fake_scorer)
        assert not report["reopened"]
        assert report["ledger"]["key"]["strategy_hash"] == run.selected().strategy_hash
    finally:
        cfg["corpus"]["path"] = str(corpus)
        run.write_config(cfg)


def test_other_monitor_source_differs():
    from monsearch.sandbox.examples.seed_monitor import SEED_MONITOR
    from monsearch.search.program_key import program_hash

    assert OTHER_MONITOR != SEED_MONITOR
    assert program_hash(OTHER_MONITOR) != program_hash(SEED_MONITOR)
