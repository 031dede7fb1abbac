"""Reports and terminal output carry a run's data as text, never as markup or control codes.

A run folder is data and may come from someone else: markup planted in
``lineage.sqlite``, ``selected.json``, ``config.json`` or a sealed report's fields
(task names, ids, notes) must come out as text in the HTML run report, the sealed
test's ``report.md`` (rendered as CommonMark with tables, as GitHub would) and
``report.html``; escape sequences and line breaks planted there must not reach the
terminal through ``lineage`` and ``show``. Each test plants the payloads in a copy of
the session's real run (``small_run``), renders with the real command, and parses what
came out.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from html.parser import HTMLParser
from pathlib import Path

import pytest
from cli_support import run_main
from markdown_it import MarkdownIt
from markup_support import PAYLOADS
from sealed_support import fake_scorer

from monsearch.eval.report import write_report

P1, P2, P3, P4, P5, P6 = PAYLOADS


class _Page(HTMLParser):
    """Every element, attribute and text of a page."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str | None]] = []
        self.data: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, k, v) for k, v in attrs]

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        self.data.append(data)

    @property
    def text(self) -> str:
        return "".join(self.data)


def _assert_inert(page: _Page, reference: _Page) -> None:
    """No element or attribute beyond those of the reference page; no handler, no script."""
    assert set(page.tags) <= set(reference.tags), set(page.tags) - set(reference.tags)
    for tag in ("img", "svg", "a", "script", "iframe", "object"):
        assert page.tags.count(tag) == reference.tags.count(tag), tag
    assert {k for _, k, _ in page.attrs} <= {k for _, k, _ in reference.attrs}
    assert not [k for _, k, _ in page.attrs if k.lower().startswith("on")]
    assert not [v for _, _, v in page.attrs if v and "javascript:" in v.lower()]
    assert not [v for t, k, v in page.attrs if k in ("src", "href") and not (
        v.startswith("data:image/png;base64,") or re.fullmatch(r"[\w.-]+\.png", v))]


def _copy(small_run, tmp_path: Path, name: str = "planted") -> Path:
    run_dir, _ = small_run
    copy = tmp_path / "runs" / name
    shutil.copytree(run_dir, copy)
    return copy


def _ids(run: Path) -> tuple[str, str, list[tuple[str, str]]]:
    """The selected id, a leaf that is neither selected nor best, and (id, parents) rows."""
    selected = json.loads((run / "selected.json").read_text())["id"]
    with sqlite3.connect(run / "lineage.sqlite") as db:
        rows = db.execute("SELECT id, parent_ids, fitness FROM candidates ORDER BY seq").fetchall()
    best = max(rows, key=lambda r: r[2])[0]
    parents = {p for _, ps, _ in rows for p in json.loads(ps)}
    leaf = next(i for i, _, _ in reversed(rows) if i not in parents | {selected, best})
    return selected, leaf, [(i, ps) for i, ps, _ in rows]


def _plant_in_run(run: Path, payloads: list[str] = PAYLOADS) -> None:
    """``payloads`` in the run's files, in every kind of place the report shows."""
    P1, P2, P3, P4, P5, P6 = payloads
    selected, leaf, rows = _ids(run)
    leaf_id = f"c-{P3}"
    seed = rows[0][0]
    crossed = next(i for i, ps in rows if json.loads(ps) and i not in (leaf, selected))
    with sqlite3.connect(run / "lineage.sqlite") as db:
        db.execute("UPDATE candidates SET description = ?, operator = ?, proposer = ?, "
                   "diff = diff || ? WHERE id = ?", (P1, P2, P3, "\n+" + P2, selected))
        db.execute("UPDATE candidates SET id = ?, status = ?, operator = ?, description = ? "
                   "WHERE id = ?", (leaf_id, P5, P6, P4, leaf))
        db.execute("UPDATE candidates SET parent_ids = json_insert(parent_ids, '$[#]', ?) "
                   "WHERE id = ?", (leaf_id, crossed))
        db.execute("UPDATE candidates SET operator = ? WHERE id = ?", ("seed:" + P1, seed))
        db.execute("INSERT OR REPLACE INTO meta VALUES ('status', ?), ('reason', ?)", (P2, P3))
        db.execute("INSERT INTO ledger (seq, kind, calls, usd) VALUES (0, ?, 1, 0.5)", (P4,))
    path = run / "selected.json"
    sel = json.loads(path.read_text())
    sel["selection"] = {**sel.get("selection", {}), "rule": P5}
    fj = sel["fitness_json"]
    metrics = fj["metrics"]
    bauc = metrics["bauc"]
    bauc["worst_dimension"] = P1
    bauc["by_dimension"][P2] = 0.5
    bauc["n_failures"][P2] = P3
    bauc["b_lo"] = P6
    metrics.update(n=P1, n_benign=P5, pauc_max_fpr=P4)
    metrics["recall_at"][P6] = 0.25
    fj["oracle"] = {**fj.get("oracle", {}), "calls": P2, "rho": P3, "rho_cap": P4}
    sel["fitness_low"] = P4
    fj["fitness_low"] = P4
    path.write_text(json.dumps(sel))
    path = run / "config.json"
    config = json.loads(path.read_text())
    config["corpus"] = {**config["corpus"], "name": P1, "content_hash": P2}
    config.update(created=P3, seed=P4, budget=P5)
    config["proposers"] = [{"name": P6, "weight": P1}, {"name": "offline", "weight": 0.5}]
    path.write_text(json.dumps(config))


def _report(capsys, run: Path) -> str:
    out = run.parent / f"{run.name}.html"
    code, _, err = run_main(capsys, "report", str(run), "--out", str(out))
    assert code == 0, err
    return out.read_text(encoding="utf-8")


def test_run_report_escapes_every_field(small_run, tmp_path, capsys):
    # The reference: the same edits with plain words (a crossover edge appears, and values
    # that are not numbers are shown as text).
    reference = _copy(small_run, tmp_path, "reference")
    _plant_in_run(reference, ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"])
    clean = _Page(_report(capsys, reference))
    run = _copy(small_run, tmp_path)
    _plant_in_run(run)
    page = _Page(_report(capsys, run))
    _assert_inert(page, clean)
    # The payloads are there, as text: in cells, cards, notes, SVG titles and labels.
    for payload in (P1, P2, P3, P4, P5):
        assert payload in page.text, payload
    assert f"seed {P1}" in page.text  # a seed's label in the tree
    assert f"c-{P3}" in page.text  # a renamed candidate's tooltip


def test_a_lineage_with_text_in_a_number_column_is_refused(small_run, tmp_path, capsys):
    run = _copy(small_run, tmp_path)
    with sqlite3.connect(run / "lineage.sqlite") as db:
        db.execute("UPDATE candidates SET generation = ? WHERE seq = 3", (P1,))
    for command in ("report", "lineage", "show"):
        args = [command, str(run)] + (["best"] if command == "show" else [])
        code, out, err = run_main(capsys, *args)
        assert code == 2 and out == "", (command, err)
        assert "unreadable lineage store" in err and "generation is not int" in err
        assert err.count("\n") == 1  # one line, no traceback


# --------------------------------------------------------------------------- sealed report


@pytest.fixture
def sealed_report(small_run, tmp_path, capsys, monkeypatch, ledger_file) -> dict:
    """A real sealed-test report of a copy of the session's run (fast stand-in scorer)."""
    monkeypatch.setattr("monsearch.eval.sealed.ESCALATION_GRID", 20)
    monkeypatch.setattr(
        "monsearch.eval.sealed.sandbox_scorer", lambda config, opts, progress=None: fake_scorer
    )
    run = _copy(small_run, tmp_path, "sealed")
    out = tmp_path / "sealed-out"
    code, _, err = run_main(capsys, "test", str(run), "--out", str(out), "--json")
    assert code == 0, err
    return json.loads((out / "report.json").read_text())


def _rename(value, names: dict[str, str]):
    """``value`` with every key and string equal to one of ``names`` renamed."""
    if isinstance(value, dict):
        return {names.get(k, k): _rename(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_rename(v, names) for v in value]
    return names.get(value, value) if isinstance(value, str) else value


def _plant_in_report(report: dict) -> dict:
    tasks = set()
    for c in report["corpora"].values():
        for label in ("panel", "true"):
            tasks |= set(((c.get(label) or {}).get("transferred") or {}).get("per_task", {}))
    generators = {g for c in report["corpora"].values() for g in c.get("generators", [])}
    corpora = set(report["corpora"]) - {"test"}
    rules = {r for curves in (report.get("escalation") or {}).get("curves", {}).values()
             for r in curves.get("panel", {})}
    names: dict[str, str] = {}
    for i, name in enumerate(sorted(tasks) + sorted(generators) + sorted(corpora) + sorted(rules)):
        names[name] = f"{PAYLOADS[i % len(PAYLOADS)]} {name}"
    assert tasks and generators
    planted = _rename(report, names)
    planted["run_id"] = P1
    planted["strategy"]["id"] = P2
    planted["corpus"]["name"] = P3
    planted["ledger"]["opened_at"] = P4
    planted["reopened"] = True
    planted["ledger"]["previous"] = [{"opened_at": P5}]
    planted["notes"] = list(PAYLOADS)
    for c in planted["corpora"].values():
        c["kind"] = P6
    return planted


def _render_markdown(text: str) -> str:
    # CommonMark (raw HTML allowed, as in a README) with GitHub's tables and strikethrough.
    return MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(text)


def test_sealed_report_markdown_and_html_are_text_only(sealed_report, tmp_path):
    clean_dir, planted_dir = tmp_path / "clean", tmp_path / "planted"
    write_report(sealed_report, clean_dir)
    files = write_report(_plant_in_report(sealed_report), planted_dir)
    md = files["markdown"].read_text()
    clean_md = _Page(_render_markdown((clean_dir / "report.md").read_text()))
    page = _Page(_render_markdown(md))
    _assert_inert(page, clean_md)
    assert set(page.tags) <= {"h1", "h2", "h3", "p", "blockquote", "strong", "table", "thead",
                              "tbody", "tr", "th", "td", "img"}
    # Every payload reads back as it was written (line breaks become spaces).
    for payload in PAYLOADS:
        assert " ".join(payload.split("\n")) in page.text, payload
    # No text started a block of its own: the planted heading and item stay inline.
    assert not re.search(r"<(h\d|li|p)>\s*forged", _render_markdown(md))
    html = _Page((planted_dir / "report.html").read_text())
    _assert_inert(html, _Page((clean_dir / "report.html").read_text()))
    for payload in PAYLOADS:
        assert payload in html.text, payload
    # The Markdown stays text under a renderer that takes no backslash before "<" as an
    # escape (Python-Markdown, as mkdocs renders): nothing is left to open an element.
    assert "<" not in md
    python_markdown = pytest.importorskip("markdown").markdown
    _assert_inert(
        _Page(python_markdown(md, extensions=["tables"])),
        _Page(python_markdown((clean_dir / "report.md").read_text(), extensions=["tables"])),
    )


# --------------------------------------------------------------------------- terminal

#: Escape sequences (CSI, OSC title and hyperlink, C1 CSI), a bell, a carriage return, a
#: line break, and a right-to-left override.
TERMINAL = (
    "ok\x1b[2J\x1b]0;owned\x07\x1b]8;;http://example.invalid\x1b\\link\x1b]8;;\x1b\\"
    "\x9b31m\rFORGED at column 0\nFORGED line\u202eevil"
)
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _plant_terminal(run: Path) -> tuple[str, str]:
    selected, leaf, _ = _ids(run)
    source = 'PARAMS = {"w": 1.0}\n\n\ndef score(traj):\n    s = "\x1b[2J\x1b]0;t\x07"\n    return 1.0\n'
    artifacts = json.dumps({
        "raw_response": "answer " + TERMINAL,
        "proposal_error": "bad " + TERMINAL,
        "model": "m" + TERMINAL,
        "sandbox": {"status": "error", "n": 1, "message": TERMINAL,
                    "errors": [{"trajectory_id": "t" + TERMINAL, "error": "e" + TERMINAL}],
                    "output": "printed " + TERMINAL},
    })
    leaf_id = "c-" + TERMINAL
    with sqlite3.connect(run / "lineage.sqlite") as db:
        db.execute("UPDATE candidates SET id = ?, description = ?, operator = ?, proposer = ?, "
                   "status = ?, source = ?, diff = ?, artifacts_json = ? WHERE id = ?",
                   (leaf_id, "idea " + TERMINAL, "op" + TERMINAL, "llm" + TERMINAL,
                    "proposal_error" + TERMINAL, source, "+" + TERMINAL, artifacts, leaf))
        db.execute("UPDATE candidates SET description = ? WHERE id = ?",
                   ("sel " + TERMINAL, selected))
        db.execute("INSERT OR REPLACE INTO meta VALUES ('status', ?)", ("running" + TERMINAL,))
    return leaf_id, selected


def _assert_terminal_safe(out: str) -> None:
    assert not CONTROL.search(out), repr(CONTROL.search(out))
    assert "\\x1b[2J" in out and "\\u202e" in out  # shown, escaped
    for line in out.split("\n"):
        # Text from the run never starts a line of the output: it stays on the line it
        # belongs to, or is indented under it (a multi-line value, a wrapped one, a diff).
        if "FORGED line" in line and "FORGED at column 0" not in line:
            assert line[:1].isspace(), line
        assert not line.startswith(("FORGED", "link", "evil")), line


def test_lineage_and_show_print_no_control_codes(small_run, tmp_path, capsys):
    run = _copy(small_run, tmp_path, "terminal")
    leaf_id, selected = _plant_terminal(run)
    code, out, err = run_main(capsys, "lineage", str(run), "--all")
    assert code == 0, err
    _assert_terminal_safe(out)
    assert out.count("FORGED line") >= 3  # the renamed id, its operator, its status
    code, out, err = run_main(capsys, "show", str(run), leaf_id)
    assert code == 0, err
    _assert_terminal_safe(out)
    assert "raw model answer" in out and "program output" in out
    code, out, err = run_main(capsys, "show", str(run), "selected")
    assert code == 0, err
    _assert_terminal_safe(out)
    # --json is JSON: the text comes back exactly as stored.
    code, out, err = run_main(capsys, "show", str(run), leaf_id, "--json")
    assert code == 0 and json.loads(out)["description"] == "idea " + TERMINAL
    assert not CONTROL.search(out)


def test_a_run_folder_named_with_escape_codes(small_run, tmp_path, capsys):
    run = _copy(small_run, tmp_path, "run\x1b]0;x\x07\nFORGED")
    for args in (("lineage", str(run)), ("show", str(run), "best"), ("runs", "--runs-dir",
                                                                      str(run.parent))):
        code, out, err = run_main(capsys, *args)
        assert code == 0, err
        assert not CONTROL.search(out) and "\\x1b]0;x\\x07\\nFORGED" in out
        assert not any(line.startswith("FORGED") for line in out.split("\n"))
