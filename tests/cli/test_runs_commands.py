"""``monsearch runs``, ``lineage``, ``show`` and ``report`` on a real run.

The run is the session's ``small_run`` (made by the real ``monsearch evolve``); the
tests only read it. Tests that need to change a run work on a copy.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from cli_support import run_main

from monsearch.search.lineage import CandidateRecord, LineageStore
from monsearch.search.tree import Lineage, focus_ids, layout, max_nesting

CHROMIUM = Path("/usr/bin/chromium")


def _store_records(run_dir: Path) -> dict[str, CandidateRecord]:
    with LineageStore(run_dir / "lineage.sqlite", readonly=True) as store:
        return {r.id: r for r in store.records()}


def _json(capsys, *args: str):
    code, out, err = run_main(capsys, *args)
    assert code == 0, err
    return json.loads(out)


def _snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# --------------------------------------------------------------------------- runs


def test_runs_lists_the_run(small_run, capsys):
    run_dir, outcome = small_run
    rows = _json(capsys, "runs", "--runs-dir", str(run_dir.parent), "--json")
    (row,) = [r for r in rows if r["id"] == "small"]
    assert row["status"] == "finished"
    assert row["evaluated"] == row["budget"] == 12
    assert row["selected"]["id"] == outcome["selected"]["id"]
    assert row["best"]["fitness"] == pytest.approx(outcome["best"]["fitness"])
    assert len(row["corpus"]["content_hash"]) == 64

    code, out, err = run_main(capsys, "runs", "--runs-dir", str(run_dir.parent))
    assert code == 0, err
    line = next(ln for ln in out.splitlines() if ln.startswith("small"))
    assert "12/12" in line and "finished" in line and row["corpus"]["content_hash"][:8] in line


def test_runs_in_an_empty_folder(tmp_path, capsys):
    assert _json(capsys, "runs", "--runs-dir", str(tmp_path), "--json") == []
    code, out, err = run_main(capsys, "runs", "--runs-dir", str(tmp_path))
    assert code == 0 and out == "" and "no runs" in err


# --------------------------------------------------------------------------- lineage


def test_lineage_json_is_consistent_with_the_store(small_run, capsys):
    run_dir, outcome = small_run
    records = _store_records(run_dir)
    selected = outcome["selected"]["id"]
    for extra in ((), ("--all",)):
        data = _json(capsys, "lineage", str(run_dir), "--json", *extra)
        ids = {n["id"] for n in data["nodes"]}
        assert selected in ids and data["selected"] == selected
        assert data["total"] == len(records) == 12
        for node in data["nodes"]:
            rec = records[node["id"]]
            assert set(node["parent_ids"]) <= ids, "a shown node's parents are shown"
            assert node["parent_ids"] == list(rec.parent_ids)
            assert (node["fitness"], node["operator"], node["proposer"], node["status"],
                    node["generation"]) == (rec.fitness, rec.operator, rec.proposer, rec.status,
                                            rec.generation)
        if extra:
            assert ids == set(records) and data["view"] == "all"
        else:
            # The focus: every ancestor of the selected candidate, and its children.
            with LineageStore(run_dir / "lineage.sqlite", readonly=True) as store:
                assert {r.id for r in store.ancestry(selected)} <= ids
            assert {r.id for r in records.values() if selected in r.parent_ids} <= ids


def test_lineage_prints_a_tree(small_run, capsys):
    run_dir, outcome = small_run
    code, out, err = run_main(capsys, "lineage", "small", "--runs-dir", str(run_dir.parent))
    assert code == 0, err
    selected = outcome["selected"]["id"]
    line = next(ln for ln in out.splitlines() if selected in ln and "[selected]" in ln)
    assert re.search(r"\d\.\d{4}", line)
    assert "seed:" in out


def test_lineage_focuses_on_a_program(small_run, capsys):
    run_dir, _ = small_run
    records = _store_records(run_dir)
    leaf = max(records.values(), key=lambda r: r.seq)
    data = _json(capsys, "lineage", str(run_dir), "--program", leaf.id, "--json")
    ids = {n["id"] for n in data["nodes"]}
    assert data["view"] == "program" and data["targets"] == [leaf.id]
    assert Lineage(list(records.values())).ancestors([leaf.id]) <= ids


def test_tree_layout_of_a_deep_run_stays_shallow():
    # 300 candidates: a long line of improvements with side branches, as a long run makes.
    def rec(seq: int, parent: int | None) -> CandidateRecord:
        return CandidateRecord(
            seq=seq, id=f"c{seq:05d}", parent_ids=() if parent is None else (f"c{parent:05d}",),
            generation=0, island=0, proposer="offline", operator="retune", description="",
            source="x", source_hash="h", diff="", status="ok", sandbox_status="ok",
            fitness=seq / 1000, fitness_json=None,
        )

    records = [rec(0, None)]
    for seq in range(1, 300):
        records.append(rec(seq, seq - 1 if seq % 3 else seq - 2))
    lineage = Lineage(records)
    items = layout(lineage, set(lineage.by_id), ["c00299"])
    seen: list[str] = []

    def walk(its):
        for it in its:
            seen.append(it.id)
            walk(it.nested)

    walk(items)
    assert sorted(seen) == sorted(lineage.by_id)  # every candidate exactly once
    assert max(lineage.depth().values()) > 100
    assert max_nesting(items) <= 4
    focus = focus_ids(lineage, ["c00150"])
    assert "c00000" in focus and "c00151" in focus and "c00299" not in focus


# --------------------------------------------------------------------------- show


def test_show_prints_source_diff_and_metrics(small_run, capsys):
    run_dir, _ = small_run
    records = _store_records(run_dir)
    child = next(r for r in records.values() if r.ok and r.diff and r.parent_ids)
    code, out, err = run_main(capsys, "show", str(run_dir), child.id)
    assert code == 0, err
    assert f"candidate {child.id}" in out
    assert f"diff to parent {child.parent_ids[0]}" in out
    added = next(ln[1:].strip() for ln in child.diff.splitlines()
                 if ln.startswith("+") and not ln.startswith("+++") and ln[1:].strip())
    assert added in out
    assert "def score(traj)" in out
    assert "BAUC aggregate" in out and "per dimension" in out and "AUROC" in out
    assert "oracle" in out

    data = _json(capsys, "show", str(run_dir), child.id, "--json")
    assert data["source"] == child.source and data["diff"] == child.diff
    assert data["fitness_json"] == child.fitness_json


def test_show_accepts_selected(small_run, capsys):
    run_dir, outcome = small_run
    data = _json(capsys, "show", "small", "selected", "--runs-dir", str(run_dir.parent), "--json")
    assert data["id"] == outcome["selected"]["id"] and "selected" in data["tags"]
    assert data["fitness_low"] == pytest.approx(outcome["selected"]["fitness_low"])


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("command", ["lineage", "show", "report"])
def test_unknown_run_is_a_one_line_error(small_run, capsys, command):
    run_dir, _ = small_run
    args = [command, "no-such-run", "--runs-dir", str(run_dir.parent)]
    if command == "show":
        args.insert(2, "c00000")
    code, out, err = run_main(capsys, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "no run 'no-such-run'" in err


@pytest.mark.parametrize("args", [("show", "c99999"), ("lineage", "--program", "c99999")])
def test_unknown_program_is_a_one_line_error(small_run, capsys, args):
    run_dir, _ = small_run
    code, out, err = run_main(capsys, args[0], str(run_dir), *args[1:])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "no candidate 'c99999'" in err


def test_inspecting_leaves_the_run_untouched(small_run, capsys):
    run_dir, _ = small_run
    before = _snapshot(run_dir)
    for args in (("runs", "--runs-dir", str(run_dir.parent)), ("lineage", str(run_dir), "--all"),
                 ("show", str(run_dir), "best")):
        assert run_main(capsys, *args)[0] == 0
    assert _snapshot(run_dir) == before


def test_reads_a_run_while_it_is_written(small_run, tmp_path, capsys):
    run_dir, _ = small_run
    copy = tmp_path / "runs" / "live"
    shutil.copytree(run_dir, copy)
    writer = LineageStore(copy / "lineage.sqlite")  # WAL, held open as evolve does
    try:
        last = writer.records()[-1]
        writer.add(replace(last, seq=last.seq + 1, id=f"c{last.seq + 1:05d}"))
        writer.set_meta("status", "running")
        (row,) = _json(capsys, "runs", "--runs-dir", str(copy.parent), "--json")
        assert row["status"] == "running" and row["evaluated"] == 13
        data = _json(capsys, "lineage", "live", "--runs-dir", str(copy.parent), "--all", "--json")
        assert f"c{last.seq + 1:05d}" in {n["id"] for n in data["nodes"]}
    finally:
        writer.close()


# --------------------------------------------------------------------------- report


def _report(capsys, run_dir: Path, out: Path) -> str:
    code, stdout, err = run_main(capsys, "report", str(run_dir), "--out", str(out))
    assert code == 0, err
    assert str(out) in stdout
    return out.read_text(encoding="utf-8")


def test_report_is_self_contained(small_run, tmp_path, capsys):
    run_dir, outcome = small_run
    page = _report(capsys, run_dir, tmp_path / "report.html")
    assert outcome["selected"]["id"] in page
    assert "<svg" in page and "data:image/png;base64," in page
    # Nothing is fetched: no remote resource, script or stylesheet.
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.I)
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", page, re.I)
    assert "<script" not in page.lower() and "<link" not in page.lower()
    assert "@import" not in page


def test_report_default_location(small_run, tmp_path, capsys):
    run_dir, _ = small_run
    copy = tmp_path / "small"
    shutil.copytree(run_dir, copy)
    data = _json(capsys, "report", str(copy), "--json")
    assert Path(data["report"]) == copy / "report.html" and (copy / "report.html").is_file()


def test_report_to_an_unwritable_place(small_run, tmp_path, capsys):
    run_dir, _ = small_run
    a_file = tmp_path / "plain-file"
    a_file.write_text("not a folder\n")
    out = a_file / "report.html"
    code, stdout, err = run_main(capsys, "report", str(run_dir), "--out", str(out))
    assert code == 2 and stdout == ""
    assert err.count("\n") == 1 and str(out) in err


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium")
def test_report_renders_in_headless_chromium(small_run, tmp_path, capsys):
    from PIL import Image

    run_dir, _ = small_run
    page = tmp_path / "report.html"
    _report(capsys, run_dir, page)
    shot = tmp_path / "shot.png"
    subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
         "--window-size=1280,2000", page.as_uri()],
        check=True, capture_output=True, timeout=120,
    )
    image = Image.open(shot).convert("RGB")
    assert image.size == (1280, 2000)
    pixels = np.asarray(image.resize((320, 500))).reshape(-1, 3)
    colours = len(np.unique(pixels, axis=0))
    inked = float((pixels.min(axis=1) < 200).mean())
    assert colours > 50, "the page rendered (almost) blank"
    assert inked > 0.03, "the page rendered (almost) blank"
