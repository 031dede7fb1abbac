"""The sealed-test report as files: ``report.json``, ``report.md``, PNG plots, ``report.html``.

One document model (a list of blocks: headings, paragraphs, tables, images) renders
to Markdown and to one self-contained HTML page (inline CSS, images as base64 data
URIs, no scripts, no external resources), so the two never disagree.

Every text of the report (task, corpus and generator names, ids, notes: whatever
their origin) is literal text in both: HTML-escaped in the page, and in the Markdown
backslash-escaped wherever CommonMark or GitHub's extensions would read markup (tags,
entities, links and images, emphasis, code, tables, line-start blocks), with line
breaks inside a text made spaces so that no text can start a block of its own.
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

Block = tuple[Any, ...]

ESCALATION_POINTS = 5


def _f(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.{digits}f}"


def _pct(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.1%}" if x < 0.1 else f"{x:.0%}"


def _signed(x: Any) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


def _h(x: str | None) -> str:
    return "-" if not x else x[:12]


# --------------------------------------------------------------------------- document


def summary_table(report: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The compact per-corpus table (the terminal shows the same)."""
    headers = [
        "corpus",
        "benign / failures",
        "val BAUC",
        "from val: BAUC",
        "from val: flag rate",
        "recalibrated BAUC",
        "true-label BAUC",
        "loss vs val",
    ]
    rows = []
    for r in report["summary"]:
        if "val_bauc" not in r:
            rows.append([r["corpus"], f"{r['n']} runs", "", r["status"], "", "", "", ""])
            continue
        flag = (
            "n/a"
            if r["flag_budget"] is None
            else f"{_pct(r['flag_rate'])} at {_pct(r['flag_budget'])}"
        )
        rows.append(
            [
                r["corpus"],
                f"{r['n_benign']} / {r['n_failures']}",
                _f(r["val_bauc"]),
                _f(r["transferred_bauc"]),
                flag,
                _f(r["recalibrated_bauc"]),
                _f(r["true_recalibrated_bauc"]),
                f"{_signed(r['loss_transferred'])} / {_signed(r['loss_recalibrated'])}",
            ]
        )
    return headers, rows


def shifted_table(report: dict[str, Any], label: str = "panel") -> tuple[list[str], list[list[str]]]:
    """Every sealed corpus under shifted base rates (a reweighting of its runs)."""
    views = (report.get("val") or {}).get("views") or {}
    val_fit = (views.get(label) or {}).get("aggregate")
    headers = [
        "corpus",
        "val (fitness view)",
        "flattened: from val / recal.",
        "inverted: from val / recal.",
        "worst loss vs val",
        "cells left out",
    ]
    rows = []
    for name, c in report["corpora"].items():
        shifted = (c.get(label) or {}).get("shifted")
        if not shifted:
            continue
        cells = [name, _f(val_fit)]
        losses: list[float] = []
        left_out = set()
        for view in ("flat", "inverted"):
            b = shifted.get(view) or {}
            if "error" in b or "transferred" not in b:
                cells.append("n/a")
                continue
            cells.append(
                f"{_f(b['transferred']['bauc']['aggregate'])} / "
                f"{_f(b['recalibrated']['bauc']['aggregate'])}"
            )
            losses += [v for v in b["loss_vs_val"].values() if v is not None]
            left_out.add((len(b["excluded_cells"]), b["excluded_runs"]))
        cells.append(_signed(max(losses)) if losses else "n/a")
        n_cells, n_runs = max(left_out) if left_out else (0, 0)
        cells.append(f"{n_cells} ({n_runs} runs)")
        rows.append(cells)
    return headers, rows


def _measures(c: dict[str, Any], labels: list[str]) -> tuple[list[str], list[list[str]]]:
    """Headline measures, panel and true labels side by side."""
    headers = ["measure"]
    for lb in labels:
        headers += [f"{lb}: from val", f"{lb}: recalibrated"]
    rows: list[list[str]] = []

    def row(name: str, get_t: Any, get_r: Any) -> None:
        cells = [name]
        for lb in labels:
            cells += [get_t(c[lb]["transferred"]), get_r(c[lb]["recalibrated"])]
        rows.append(cells)

    row(
        "budget-AUC (mean over dimensions)",
        lambda t: _f(t["bauc"]["aggregate"]),
        lambda r: _f((r.get("bauc") or {}).get("aggregate")),
    )
    row(
        "budget-AUC, worst dimension",
        lambda t: f"{_f(t['bauc']['worst'])} ({t['bauc']['worst_dimension']})",
        lambda r: (
            f"{_f((r.get('bauc') or {}).get('worst'))} "
            f"({(r.get('bauc') or {}).get('worst_dimension')})"
        ),
    )
    row(
        "budget-AUC, all failures pooled",
        lambda t: _f(t["bauc_pooled"]),
        lambda r: _f(r.get("bauc_pooled")),
    )
    row(
        "budget range",
        lambda t: f"{_pct(t['bauc']['b_lo'])} to {_pct(t['bauc']['b_hi'])}",
        lambda r: (
            f"{_pct((r.get('bauc') or {}).get('b_lo'))} to "
            f"{_pct((r.get('bauc') or {}).get('b_hi'))}"
        ),
    )
    first = c[labels[0]]["transferred"]
    for b in first["recall_at"]:
        row(
            f"recall at {_pct(float(b))} (realised flag rate)",
            lambda t, b=b: f"{_f(t['recall_at'].get(b))} ({_pct(t['flag_rate_at'].get(b))})",
            lambda r, b=b: _f((r.get("recall_at") or {}).get(b)),
        )
    row("AUROC", lambda t: "", lambda r: _f(r.get("auroc")))
    row("pAUC (McClish)", lambda t: "", lambda r: _f(r.get("pauc")))
    row(
        "realised / nominal flag rate (geometric mean)",
        lambda t: _f(t.get("flag_ratio"), 2),
        lambda r: "1.00",
    )
    return headers, rows


def _dimensions(c: dict[str, Any], labels: list[str]) -> tuple[list[str], list[list[str]]]:
    headers = ["dimension", "failures"]
    for lb in labels:
        headers += [f"{lb}: from val", f"{lb}: recalibrated"]
    dims = sorted(
        set().union(*(c[lb]["transferred"]["bauc"]["by_dimension"] for lb in labels))
        | set().union(*(c[lb]["transferred"]["bauc"]["absent"] for lb in labels))
    )
    rows = []
    for d in dims:
        n = c[labels[0]]["transferred"]["bauc"]["n_failures"].get(d, 0)
        cells = [d, str(n)]
        for lb in labels:
            t = c[lb]["transferred"]["bauc"]["by_dimension"].get(d)
            r = (c[lb]["recalibrated"].get("bauc") or {}).get("by_dimension", {}).get(d)
            cells += ["absent" if t is None else _f(t), "absent" if r is None else _f(r)]
        rows.append(cells)
    return headers, rows


def _tasks(c: dict[str, Any], labels: list[str]) -> tuple[list[str], list[list[str]]]:
    headers = ["task", "dimension", "runs", "failure rate"]
    for lb in labels:
        headers += [f"{lb}: from val", f"{lb}: recalibrated"]
    headers.append("flag share (from val)")
    first = c[labels[0]]
    rows = []
    for task, t in first["transferred"]["per_task"].items():
        cells = [task, t["dimension"], str(t["n"]), _pct(t["base_rate"])]
        for lb in labels:
            tt = c[lb]["transferred"]["per_task"].get(task, {})
            rr = (c[lb]["recalibrated"].get("per_task") or {}).get(task, {})
            cells += [_f(tt.get("bauc")), _f(rr.get("bauc"))]
        cells.append(_f(t.get("flag_rate_mean"), 2))
        rows.append(cells)
    return headers, rows


def _escalation_tables(report: dict[str, Any], name: str) -> list[Block]:
    esc = report.get("escalation") or {}
    curves = (esc.get("curves") or {}).get(name, {})
    if "panel" not in curves:
        return []
    by_rule = curves["panel"]
    n = len(esc["budgets"])
    idx = sorted({round(i * (n - 1) / (ESCALATION_POINTS - 1)) for i in range(ESCALATION_POINTS)})
    usd = esc["usd_per_unit"]
    headers = ["rule"] + [
        f"Y = {esc['budgets'][i]:.3g} (${esc['budgets'][i] * usd * 1000:,.0f})" for i in idx
    ]
    rows = []
    for rule, curve in by_rule.items():
        cells = [rule]
        for i in idx:
            p = curve["points"][i]
            if not p["feasible"]:
                cells.append("infeasible")
                continue
            cells.append(
                f"recall {_f(p['recall'], 2)}, escalate {_pct(p['escalation_rate'])}, "
                f"audit {_pct(p['audit_rate'])}, ${p['usd_per_1000_benign']:,.0f} per 1k benign, "
                f"${p['usd_per_1000']:,.0f} per 1k runs"
            )
        rows.append(cells)
    return [
        ("h3", f"Selective escalation on {name}"),
        (
            "p",
            "Rules fitted on val (panel labels), applied unchanged. The judge is the corpus's "
            "escalation judge (its oracle verdicts, replayed: not the label panel). "
            "Y is the budget per benign "
            "run in cost units (in brackets: dollars per 1,000 benign runs); each cell gives "
            "recall, the benign share escalated to the judge panel, the benign audit rate and "
            "the realised dollars per 1,000 benign runs and per 1,000 runs of this corpus "
            "(failures included: each one caught is an audit).",
        ),
        ("table", headers, rows),
    ]


def document(report: dict[str, Any], images: dict[str, str]) -> list[Block]:
    """The report as blocks; ``images`` maps plot names to file names."""
    strat = report["strategy"]
    corpus = report["corpus"]
    ledger = report["ledger"]
    ev = report["evaluation"]
    blocks: list[Block] = [
        ("h1", f"Sealed test of run {report['run_id']}"),
    ]
    if report["reopened"]:
        prev = ", ".join(p["opened_at"] for p in ledger["previous"])
        why = "; ".join(ledger.get("reasons") or []) or (
            f"this strategy was already tested on this corpus and split (earlier: {prev})"
        )
        blocks.append(
            (
                "banner",
                f"RE-OPENED: {why}. These labels have been seen before: the figures are no "
                "longer an unbiased test.",
            )
        )
    blocks += [
        (
            "p",
            f"Strategy {strat['id']} ({'the selected strategy' if strat['selected'] else 'a candidate of the lineage'}), "
            f"hash {_h(strat['strategy_hash'])}; val fitness {_f(strat.get('val_fitness'))}. "
            f"Corpus {corpus['name']}, content {_h(corpus['content_hash'])}, split assignment "
            f"{_h(corpus['assignment_hash'])}. Opened {ledger['opened_at']}: opening "
            f"{ledger.get('run_opening', ledger['opening'])} of this run's sealed test, "
            f"opening {ledger['opening']} of this program's.",
        ),
        (
            "p",
            f"Budget range {_pct(ev['b_lo'])} to {_pct(ev['b_hi'])} of benign runs flagged "
            f"({ev['n_budgets']} log-spaced budgets; raised where a benign set is too small). "
            '"From val": thresholds set on val\'s benign runs and applied unchanged (the '
            'realised benign flag rate is shown beside the nominal budget); "recalibrated": '
            "thresholds set again on the corpus's own benign runs. Loss vs val = val "
            "budget-AUC minus the corpus's (from val / recalibrated).",
        ),
        ("h2", "Summary"),
        ("table", *summary_table(report)),
    ]
    views = (report.get("val") or {}).get("views") or {}
    if any((c.get("panel") or {}).get("shifted") for c in report["corpora"].values()):
        blocks += [
            ("h2", "Under shifted base rates"),
            (
                "p",
                "A monitor is deployed on agents whose failure rates per task and outcome "
                "differ from this corpus's. Each corpus is reweighted (its runs, not "
                "re-run): flattened, every task x outcome cell at one failure share; "
                "inverted, each cell's failure share mirrored around one half, so a "
                "monitor that scores which task was solved instead of what the agent did "
                "loses here. A cell counts as much as its smaller class can carry "
                "(cell_mass minority; pure cells are left out). "
                f"Val is measured under the run's fitness view "
                f"({(views.get('panel') or {}).get('view', 'plain')}); the loss is val minus "
                "the worse of the two figures.",
            ),
            ("table", *shifted_table(report, "panel")),
        ]
        if any((c.get("true") or {}).get("shifted") for c in report["corpora"].values()):
            blocks += [
                ("h3", "The same on true labels"),
                ("table", *shifted_table(report, "true")),
            ]
    if report.get("val_scores_reproduced") is False:
        blocks.append(("banner", "Val scores differ from those the run's lineage stored."))
    for key, caption in (
        ("transfer", "Thresholds from val against recalibrated, per corpus; calibration drift."),
        ("recall_by_dimension", "Recall against audit budget per failure dimension (log axis)."),
        ("recall_by_dimension_true", "The same on true labels."),
        ("escalation", "Selective escalation R*(Y) with the baselines."),
    ):
        if key in images:
            blocks.append(("img", images[key], caption))
    for name, c in report["corpora"].items():
        blocks.append(("h2", f"{name} ({c.get('kind', '')})"))
        labels = [lb for lb in ("panel", "true") if lb in c]
        if not labels:
            blocks.append(("p", f"Not scored: {c.get('status')} {c.get('message', '')}"))
            continue
        gens = ", ".join(c.get("generators", []))
        spend = c.get("oracle") or {}
        blocks.append(
            (
                "p",
                f"{c['n']} labelled runs; generators: {gens}. Oracle calls per benign run "
                f"{_f(spend.get('rho'))}"
                + (" (over the cap)" if spend.get("over_cap") else "")
                + ".",
            )
        )
        blocks.append(("table", *_measures(c, labels)))
        blocks.append(("h3", "Per dimension (budget-AUC)"))
        blocks.append(("table", *_dimensions(c, labels)))
        blocks.append(("h3", "Per task (budget-AUC against the pooled thresholds)"))
        blocks.append(
            (
                "p",
                "Flag share: the task's realised benign flag rate over the nominal budget "
                "(mean over the grid); far from 1 means one pooled threshold spends the budget "
                "unevenly across tasks.",
            )
        )
        blocks.append(("table", *_tasks(c, labels)))
        blocks += _escalation_tables(report, name)
    esc = report.get("escalation") or {}
    if esc.get("skipped") and isinstance(esc["skipped"], str):
        blocks.append(("p", f"Selective escalation skipped: {esc['skipped']}."))
    if report.get("notes"):
        blocks.append(("h2", "Notes"))
        blocks += [("p", n) for n in report["notes"]]
    return blocks


# --------------------------------------------------------------------------- rendering


# Markup anywhere in a line: HTML tags and autolinks, entities, code, emphasis, links and
# images, table cells, strikethrough, headings' closing runs. An underscore between two
# letters or digits can neither open nor close emphasis, so names like credential_opsec
# stay readable.
_MD_INLINE = re.compile(r"[\\`*\[\]<>&|~#]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
# Markup at the start of a line: list items, thematic breaks, setext underlines, ordered
# list items ("12." or "12)"); block quotes and headings are escaped inline already.
_MD_LINE_START = re.compile(r"[-+=]|\d{1,9}(?=[.)])")


def md_text(text: Any, *, line_start: bool = False) -> str:
    """``text`` as literal Markdown on one line (see the module doc); ``line_start``: it
    begins a line, where a leading ``-``, ``+``, ``=`` or ``1.`` would start a block."""
    s = " ".join(re.split(r"\r\n|\r|\n", str(text)))
    s = _MD_INLINE.sub(lambda m: "\\" + m.group(0), s)
    if line_start:
        s = s.lstrip(" \t")  # four leading blanks would make a code block
        m = _MD_LINE_START.match(s)
        if m and m.group(0)[0].isdigit():
            s = s[: m.end()] + "\\" + s[m.end() :]
        elif m:
            s = "\\" + s
    return s


def to_markdown(blocks: list[Block]) -> str:
    out: list[str] = []
    for b in blocks:
        kind = b[0]
        if kind in ("h1", "h2", "h3"):
            out.append("#" * int(kind[1]) + " " + md_text(b[1]))
        elif kind == "p":
            out.append(md_text(b[1], line_start=True))
        elif kind == "banner":
            out.append(f"> **{md_text(b[1])}**")
        elif kind == "table":
            headers, rows = b[1], b[2]
            lines = ["| " + " | ".join(md_text(h) for h in headers) + " |"]
            lines.append("|" + "|".join("---" for _ in headers) + "|")
            lines += ["| " + " | ".join(md_text(c) for c in r) + " |" for r in rows]
            out.append("\n".join(lines))
        elif kind == "img":
            out.append(f"![{md_text(b[2])}]({quote(str(b[1]))})")
    return "\n\n".join(out) + "\n"


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2em auto;
max-width:1400px;padding:0 1.5em;color:#1b1b1b;background:#fff;line-height:1.45}
h1{font-size:1.6em;border-bottom:2px solid #333;padding-bottom:.2em}
h2{font-size:1.25em;margin-top:1.8em;border-bottom:1px solid #ccc}
h3{font-size:1.05em;margin-top:1.2em}
table{border-collapse:collapse;margin:.6em 0;font-size:.85em}
th,td{border:1px solid #ccc;padding:.25em .55em;text-align:right;vertical-align:top}
th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}
tr:nth-child(even) td{background:#fafafa}
.banner{background:#fde8e8;border:2px solid #c0392b;color:#7b1d13;padding:.7em 1em;
font-weight:600;margin:1em 0}
figure{margin:1.2em 0}figure img{max-width:100%;border:1px solid #ddd}
figcaption{font-size:.85em;color:#555}
"""


def to_html(blocks: list[Block], folder: Path, title: str) -> str:
    """A self-contained page: images from ``folder`` inlined as base64."""
    e = html.escape
    body: list[str] = []
    for b in blocks:
        kind = b[0]
        if kind in ("h1", "h2", "h3"):
            body.append(f"<{kind}>{e(b[1])}</{kind}>")
        elif kind == "p":
            body.append(f"<p>{e(b[1])}</p>")
        elif kind == "banner":
            body.append(f'<div class="banner">{e(b[1])}</div>')
        elif kind == "table":
            head = "".join(f"<th>{e(h)}</th>" for h in b[1])
            rows = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in b[2])
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        elif kind == "img":
            data = base64.b64encode((folder / b[1]).read_bytes()).decode("ascii")
            body.append(
                f'<figure><img alt="{e(b[2])}" src="data:image/png;base64,{data}">'
                f"<figcaption>{e(b[2])}</figcaption></figure>"
            )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{e(title)}</title><style>{_CSS}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def _write(path: Path, text: str) -> None:
    # Temporary file + rename: a report is never left half-written.
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def clean(value: Any) -> Any:
    """``value`` with every NaN or infinity made None (JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    return value


def report_json(report: dict[str, Any]) -> str:
    return json.dumps(clean(report), indent=2, allow_nan=False) + "\n"


def write_report(report: dict[str, Any], out: Path) -> dict[str, Path]:
    """Write every report file into ``out``: ``{kind: path}``."""
    from .plots import write_plots

    out.mkdir(parents=True, exist_ok=True)
    plots = write_plots(report, out)
    blocks = document(report, {k: p.name for k, p in plots.items()})
    files = {
        "json": out / "report.json",
        "markdown": out / "report.md",
        "html": out / "report.html",
    }
    _write(files["json"], report_json(report))
    _write(files["markdown"], to_markdown(blocks))
    title = f"monsearch sealed test: run {report['run_id']}"
    _write(files["html"], to_html(blocks, out, title))
    return {**files, **plots}
