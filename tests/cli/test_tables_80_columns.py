"""Tables at 80 columns: every column shown, no cell cut to a "…" stub.

The commands run for real at ``COLUMNS=80`` on real inputs (the session's run made
by ``monsearch evolve``, its corpus, the StealthBench and ATIF fixtures); their
tables are read back column by column (``table_support``) and compared with the
figures the same commands give as JSON. The layout rules themselves
(``monsearch.commands.cells``) are checked directly, some on random tables.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from cli_support import SB_RESULTS, run_main
from hypothesis import given, settings
from hypothesis import strategies as st
from paths import FIXTURES
from rich.console import Console
from table_support import in_order, read_table

from monsearch.commands import cells
from monsearch.commands.consoles import fitted_table
from monsearch.eval.report import shifted_table, summary_table

WIDTH = 80
SB_FILES = sorted(SB_RESULTS.rglob("trajectory.atif.json"))
ATIF_FILE = FIXTURES / "atif" / "good" / "v14_labelled.json"


@pytest.fixture
def columns_80(monkeypatch):
    monkeypatch.setenv("COLUMNS", str(WIDTH))


def _fits(text: str) -> None:
    too_wide = [line for line in text.splitlines() if len(line) > WIDTH]
    assert not too_wide, too_wide


# --------------------------------------------------------------------------- runs


@pytest.fixture
def runs_dir(small_run, tmp_path):
    """Copies of the session run under real-looking ids; one with a long corpus name,
    one whose config is damaged (status ``unreadable``)."""
    run_dir, _ = small_run
    root = tmp_path / "runs"
    root.mkdir()
    for run_id in ("20261204-101112-s0", "20261204-101113-s0"):
        shutil.copytree(run_dir, root / run_id)
    config = root / "20261204-101113-s0" / "config.json"
    data = json.loads(config.read_text())
    data["corpus"]["name"] = "stealthbench-results-import-2026-12-01-with-xgen"
    config.write_text(json.dumps(data))
    (root / "20261204-101114-s1").mkdir()
    (root / "20261204-101114-s1" / "config.json").write_text("{")
    return root


def test_runs_at_80_columns(runs_dir, capsys, columns_80):
    code, out, err = run_main(capsys, "runs", "--runs-dir", str(runs_dir))
    assert code == 0, err
    _fits(out)
    assert "…" not in out
    table = read_table(out, "runs in", "evals:")
    assert table.header == ["run", "corpus", "created (UTC)", "evals", "best", "selected", "status"]
    code, js, err = run_main(capsys, "runs", "--runs-dir", str(runs_dir), "--json")
    summaries = json.loads(js)
    # A run id is kept on one line: it is what the user types next.
    assert [line for line in table.column("run") if line] == [s["id"] for s in summaries]
    assert in_order(table.column("status"), [s["status"] for s in summaries])
    assert set(table.column("status")) >= {"finished", "unreadable"}
    names = [s["corpus"]["name"] for s in summaries if s["status"] == "finished"]
    assert in_order(table.column("corpus"), names)
    for column, key in (("best", "best"), ("selected", "selected")):
        values = [f"{s[key]['fitness']:.4f}" for s in summaries if s.get(key)]
        assert values and [v for v in table.column(column) if v not in ("", "-")] == values
    assert table.column("evals")[0] == "12/12"
    # The time a run was created stays (the date alone cannot tell two runs of a day apart).
    created = [s["created"].replace("T", " ")[:16] for s in summaries if s.get("created")]
    assert created and in_order(table.column("created (UTC)"), created)


# --------------------------------------------------------------------------- score


def test_score_at_80_columns(small_run, capsys, columns_80):
    run_dir, _ = small_run
    inputs = [str(SB_RESULTS), str(ATIF_FILE)]
    code, out, err = run_main(capsys, "score", "--monitor", str(run_dir), *inputs)
    assert code == 0, err
    _fits(out)
    code, js, err = run_main(capsys, "score", "--monitor", str(run_dir), *inputs, "--json")
    records = [json.loads(line) for line in js.splitlines()]
    assert [r["input"] for r in records] == [*map(str, SB_FILES), str(ATIF_FILE)]

    table = read_table(out, "monitor ", "score:")
    # The score leads: a wrapped path's second line starts indented, never at column 0.
    assert table.header == ["score", "decision at 5%", "trajectory", "top findings"]
    # Paths are shortened from the left: each keeps its trajectory folder and file name.
    paths = [line for line in table.column("trajectory") if line]
    for r in records[:-1]:
        folder = Path(r["input"]).parent.name
        assert any(folder[-20:] in line for line in paths), (folder, paths)
    assert paths.count("trajectory.atif.json") == len(SB_FILES)
    assert not any(line.startswith("tests/fixtures/stea") and line.endswith("…") for line in paths)
    assert "…" not in "".join(line[1:] for line in paths)  # only a leading one
    others = [c for h in table.header if h != "trajectory" for c in table.column(h) if "…" in c]
    assert not others, others
    assert [v for v in table.column("score") if v] == [f"{r['score']:.4g}" for r in records]
    decisions = [r["decision"] + (" (escalate)" if r.get("escalate") else "") for r in records]
    assert in_order(table.column("decision at 5%"), decisions)
    found = [f"step {f['index']}" for r in records for f in r["findings"]]
    assert found and in_order(table.column("top findings"), found)


# --------------------------------------------------------------------------- test


def test_sealed_test_at_80_columns(small_run, capsys, columns_80, ledger_file, tmp_path):
    # A copy: the run keeps each report it is tested with (test/NNN), and later tests
    # copy the session run expecting none.
    run_dir = tmp_path / "runs" / "small"
    shutil.copytree(small_run[0], run_dir)
    out_dir = tmp_path / "report"
    args = ("test", str(run_dir), "--out", str(out_dir), "--workers", "2")
    code, out, err = run_main(capsys, *args)
    assert code == 0, err
    _fits(out)
    report = json.loads((out_dir / "report.json").read_text())
    headers, rows = summary_table(report)
    table = read_table(out, "sealed test of run", "Budget-AUC:")
    assert table.header == headers  # every column, its header whole (wrapped at spaces)
    block = "\n".join(table.lines)
    assert "…" not in block
    for i, header in enumerate(headers):
        assert in_order(table.body[i], [row[i] for row in rows]), header
    corpora = [row[0] for row in rows]
    assert "test" in corpora and any(c.startswith("xgen-") for c in corpora)
    # The table under shifted base rates: every figure whole, names broken at readable places.
    headers, rows = shifted_table(report)
    assert rows
    table = read_table(out, "under shifted base rates", "Flattened:")
    assert table.header == headers
    assert "…" not in "\n".join(table.lines)
    for i, header in enumerate(headers):
        assert in_order(table.body[i], [row[i] for row in rows]), header
    # A corpus name is cut only at its hyphens, never into one-character lines.
    names = [line for line in table.column("corpus") if line]
    assert all(len(line) > 1 for line in names), names


# --------------------------------------------------------------------------- sandbox


def test_sandbox_helpers_at_80_columns(capsys, columns_80):
    from monsearch.sandbox.helpers import HELPERS

    code, out, err = run_main(capsys, "sandbox", "helpers")
    assert code == 0, err
    _fits(out)
    assert "``" not in out and "=====" not in out  # a table, not reStructuredText
    table = read_table(out, "helpers a monitor program may call", "Patterns are")
    assert table.header == ["helper", "returns"]
    names = [line.split("(")[0] for line in table.column("helper") if line]
    assert set(HELPERS) <= {n.removeprefix("math.<name>") or "math" for n in names} | {"math"}
    assert "…" not in "\n".join(table.lines)
    # The note under the table is the reference's, whole.
    assert "no call can run for seconds inside host code." in " ".join(out.split())


def test_sandbox_check_at_80_columns(tmp_path, capsys, columns_80):
    params = {f"weight_of_detector_number_{i}": 0.125 * i for i in range(12)}
    program = tmp_path / "wide_params.py"
    program.write_text(f"PARAMS = {params!r}\n\n\ndef score(traj):\n    return 0.0\n")
    code, out, err = run_main(capsys, "sandbox", "check", str(program))
    assert code == 0, err
    lines = out.splitlines()
    # (The program's path is printed whole, however long: it is the test's, not ours.)
    assert all(len(line.replace(str(program), "P")) <= WIDTH for line in lines), lines
    # Every parameter and its value, whole, one per line.
    for key, value in params.items():
        assert any(key in line and repr(value) in line for line in lines), key
    code, js, err = run_main(capsys, "sandbox", "check", str(program), "--json")
    assert json.loads(js)["params"] == params


# --------------------------------------------------------------------------- layout rules


def _render(table) -> str:
    console = Console(width=WIDTH, file=io.StringIO(), color_system=None)
    with console.capture() as cap:
        console.print(table)
    return cap.get()


@pytest.mark.parametrize(
    ("path", "width", "lines"),
    [
        ("a/b.json", 20, ["a/b.json"]),
        (
            "tests/fixtures/atif/good/v14_labelled.json",
            30,
            ["tests/fixtures/", "atif/good/v14_labelled.json"],
        ),
        (
            "results/trajectories/model/adtech-admin/sb-adtech-admin-1785603000-3e4f5a6b/"
            "trajectory.atif.json",
            30,
            ["…ch-admin-1785603000-3e4f5a6b/", "trajectory.atif.json"],
        ),
        ("x" * 50, 10, ["…" + "x" * 9]),
    ],
)
def test_shorten_path(path, width, lines):
    got = cells.shorten_path(path, width)
    assert got.split("\n") == lines
    assert all(len(line) <= width for line in lines)
    # Whatever is dropped, the tail shows: at least width - 1 characters of it.
    shown = got.replace("\n", "")
    assert path.endswith(shown.removeprefix("…"))
    assert len(shown.removeprefix("…")) >= min(len(path), width - 1)


def test_distinguishing_tail():
    assert cells.distinguishing_tail(["a/x.json", "b/x.json"]) == len("a/x.json")
    assert cells.distinguishing_tail(["run1.json", "run2.json", "run2.json"]) == len("1.json")
    assert cells.distinguishing_tail(["only.json"]) == 0


def test_fitted_table_keeps_numbers_and_statuses_whole():
    rows = [
        (["xgen-arcee-ai-trinity-large-thinking", "0.12345678", "finished", "5.2% at 5.0%"], None),
        (["test", "-0.077 / +0.156", "interrupted", "n/a"], None),
    ]
    headers = ["a rather long corpus header", "a number", "status", "from val: flag rate"]
    kinds = [cells.NAME, cells.NUMBER, cells.STATUS, cells.NUMBER]
    text = _render(fitted_table(Console(width=40), "t", headers, rows, kinds=kinds))
    assert "…" not in text
    assert all(len(line) <= 40 for line in text.splitlines())
    for word in ("0.12345678", "finished", "interrupted", "-0.077", "+0.156", "5.2%", "5.0%"):
        assert word in text.split(), word


_cell = (
    st.text(alphabet="abcdef-/_ 0123456789.", min_size=1, max_size=40)
    .map(lambda s: " ".join(s.split()))
    .filter(bool)
)
_number = st.floats(-1e6, 1e6, allow_nan=False).map(lambda x: f"{x:.4g}")
_status = st.sampled_from(["finished", "running", "interrupted", "unreadable", "pass", "audit"])


@settings(max_examples=60, deadline=None)
@given(
    names=st.lists(_cell, min_size=1, max_size=6),
    numbers=st.lists(_number, min_size=6, max_size=6),
    statuses=st.lists(_status, min_size=6, max_size=6),
    texts=st.lists(_cell, min_size=6, max_size=6),
)
def test_random_tables_fit_without_cutting_words(names, numbers, statuses, texts):
    n = len(names)
    prose = [f"{texts[i]} {texts[-1 - i]}" for i in range(n)]
    rows = [([names[i], numbers[i], statuses[i], prose[i]], None) for i in range(n)]
    headers = ["name column", "value", "state of the run", "some prose"]
    kinds = [cells.NAME, cells.NUMBER, cells.STATUS, cells.TEXT]
    text = _render(fitted_table(Console(width=WIDTH), "random", headers, rows, kinds=kinds))
    _fits(text)
    assert "…" not in text
    table = read_table(text, "random")
    assert table.header == headers
    assert [v for v in table.body[1] if v] == numbers[:n]  # one line each, whole
    assert [v for v in table.body[2] if v] == statuses[:n]
    assert in_order(table.body[0], names[:n])
    assert in_order(table.body[3], prose)
