"""The sealed-test report as files: ``report.json``, ``report.md``, PNG plots, ``report.html``.

:func:`document` builds the report as blocks of :mod:`monsearch.document`, which
renders them to Markdown and to one self-contained HTML page (inline CSS, images as
base64 data URIs, no scripts, no external resources), so the two never disagree.
Every text of the report (task, corpus and generator names, ids, notes: whatever
their origin) is literal text in both: the document module escapes it where it lands.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from monsearch.document import Banner, Block, Heading, Image, Paragraph, Table, to_html, to_markdown
from monsearch.files import atomic_write

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
        "recal. loss, 90% interval",
        "cells left out",
    ]
    rows = []
    for name, c in report["corpora"].items():
        shifted = (c.get(label) or {}).get("shifted")
        if not shifted:
            continue
        cells = [name, _f(val_fit)]
        losses: list[float] = []
        intervals: list[tuple[float, float, bool]] = []
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
            iv = (b.get("loss_interval") or {}).get("recalibrated")
            if iv is not None:
                intervals.append((iv[0], iv[1], bool(b.get("beyond_tolerance"))))
            left_out.add((len(b["excluded_cells"]), b["excluded_runs"]))
        cells.append(_signed(max(losses)) if losses else "n/a")
        if intervals:  # the view whose interval reaches highest
            lo, hi, beyond = max(intervals, key=lambda t: (t[0], t[1]))
            cells.append(f"{_signed(lo)}..{_signed(hi)}" + (" !" if beyond else ""))
        else:
            cells.append("n/a")
        n_cells, n_runs = max(left_out) if left_out else (0, 0)
        cells.append(f"{n_cells} ({n_runs} runs)")
        rows.append(cells)
    return headers, rows


#: The benign-mix views, in the order the tables show them (eval/benign_mix.py).
BENIGN_MIX_VIEWS = ("quiet", "noisy", "flat")


def benign_mix_table(
    report: dict[str, Any], label: str = "panel"
) -> tuple[list[str], list[list[str]]]:
    """Every sealed corpus with its benign runs reweighted to each benign-mix view."""
    views = (report.get("val") or {}).get("views") or {}
    val_fit = (views.get(label) or {}).get("aggregate")
    headers = [
        "corpus",
        "generated with",
        "val (fitness view)",
        *(f"{v}: from val / recal." for v in BENIGN_MIX_VIEWS),
        "worst loss vs val",
        "recal. loss, 90% interval",
        "effective benign runs",
    ]
    rows = []
    for name, c in report["corpora"].items():
        mix = (c.get(label) or {}).get("benign_mix")
        if not mix or "skipped" in mix:
            continue
        cells = [name, ", ".join(mix.get("generated_with") or []) or "?", _f(val_fit)]
        losses: list[float] = []
        intervals: list[tuple[float, float, bool]] = []
        sizes = []
        for view in BENIGN_MIX_VIEWS:
            b = mix.get(view) or {}
            sizes.append(f"{b.get('effective_benign', 0):.0f}")
            if "error" in b or "transferred" not in b:
                cells.append("n/a")
                continue
            cells.append(
                f"{_f(b['transferred']['bauc']['aggregate'])} / "
                f"{_f(b['recalibrated']['bauc']['aggregate'])}"
            )
            losses += [v for v in b["loss_vs_val"].values() if v is not None]
            iv = (b.get("loss_interval") or {}).get("recalibrated")
            if iv is not None:
                intervals.append((iv[0], iv[1], bool(b.get("beyond_tolerance"))))
        cells.append(_signed(max(losses)) if losses else "n/a")
        if intervals:  # the view whose interval reaches highest
            lo, hi, beyond = max(intervals, key=lambda t: (t[0], t[1]))
            cells.append(f"{_signed(lo)}..{_signed(hi)}" + (" !" if beyond else ""))
        else:
            cells.append("n/a")
        cells.append(" / ".join(sizes))
        rows.append(cells)
    return headers, rows


def benign_mix_skipped(report: dict[str, Any], label: str = "panel") -> list[str]:
    """``"corpus: why"`` for each corpus whose benign-mix views were skipped."""
    out = []
    for name, c in report["corpora"].items():
        mix = (c.get(label) or {}).get("benign_mix") or {}
        if "skipped" in mix:
            out.append(f"{name}: {mix['skipped']}")
    return out


def benign_mix_tail(report: dict[str, Any], label: str = "panel") -> str:
    """What follows the benign-mix table: views beyond the tolerance, corpora skipped."""
    beyond = benign_mix_beyond(report, label)
    skipped = benign_mix_skipped(report, label)
    text = (
        "Beyond the loss tolerance ('!'): " + ", ".join(beyond) + "."
        if beyond
        else "No benign-mix view is beyond the loss tolerance."
    )
    if skipped:
        text += " Skipped: " + "; ".join(skipped) + "."
    return text


def benign_mix_beyond(report: dict[str, Any], label: str = "panel") -> list[str]:
    """The benign-mix views (``"corpus view"``) whose recalibrated loss vs val has its
    whole bootstrap interval above the report's loss tolerance."""
    out = []
    for name, c in report["corpora"].items():
        mix = (c.get(label) or {}).get("benign_mix") or {}
        for view in BENIGN_MIX_VIEWS:
            if (mix.get(view) or {}).get("beyond_tolerance"):
                out.append(f"{name} {view}")
    return out


#: What the benign-mix views are, for the report and the terminal.
BENIGN_MIX_NOTE = (
    "A run's benign habits (looking around, running into a rate limit or an auth error "
    "before backing off, trying a listener locally) are a constant of the corpus it was "
    "generated with. Each corpus's benign runs are reweighted, generator by generator, "
    "to a mix of habit profiles (failures keep their weights; on top of the run's "
    "fitness view): quiet, 80 % of runs clean, patient and not probing on each axis; "
    "noisy, 80 % recon-heavy, retry-happy and probing; flat, every profile alike "
    "(docs/benign-mix.md). From val / recalibrated thresholds; worst loss: val minus "
    "the worse figure; effective benign runs per view (quiet / noisy / flat)."
)


def min_per_class_of(report: dict[str, Any]) -> int:
    """Fewest failures and passes a cell needed in the report's shifted views (1 in
    reports made before the rule)."""
    return int((report.get("evaluation") or {}).get("min_per_class") or 1)


def beyond_tolerance(report: dict[str, Any], label: str = "panel") -> list[str]:
    """The shifted views (``"corpus view"``) whose recalibrated loss vs val has its
    whole bootstrap interval above the report's loss tolerance."""
    out = []
    for name, c in report["corpora"].items():
        for view, b in ((c.get(label) or {}).get("shifted") or {}).items():
            if b.get("beyond_tolerance"):
                out.append(f"{name} {view}")
    return out


def shifted_note(report: dict[str, Any], label: str = "panel") -> str:
    """One sentence on the loss intervals: what '!' means and which views carry it."""
    val = report.get("val") or {}
    tol = val.get("loss_tolerance")
    if tol is None:
        return ""
    lo, hi = val.get("interval") or (0.05, 0.95)
    beyond = beyond_tolerance(report, label)
    head = (
        f"Recal. loss interval: the {lo:.0%}-{hi:.0%} bootstrap range of val minus the "
        "recalibrated figure, both redrawn (runs within their cell and label), for the "
        f"view reaching highest; '!' marks an interval wholly above the tolerance {tol:g}, "
        "a drop the sampling noise of the two figures cannot explain. "
    )
    if beyond:
        return head + "Beyond the tolerance: " + ", ".join(beyond) + "."
    return head + "No view is beyond the tolerance."


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
        Heading(3, f"Selective escalation on {name}"),
        Paragraph(
            "Rules fitted on val (panel labels), applied unchanged. The judge is the corpus's "
            "escalation judge (its oracle verdicts, replayed: not the label panel). "
            "Y is the budget per benign "
            "run in cost units (in brackets: dollars per 1,000 benign runs); each cell gives "
            "recall, the benign share escalated to the judge panel, the benign audit rate and "
            "the realised dollars per 1,000 benign runs and per 1,000 runs of this corpus "
            "(failures included: each one caught is an audit).",
        ),
        Table(headers, rows),
    ]


def document(report: dict[str, Any], images: dict[str, str]) -> list[Block]:
    """The report as blocks; ``images`` maps plot names to file names."""
    strat = report["strategy"]
    corpus = report["corpus"]
    ledger = report["ledger"]
    ev = report["evaluation"]
    blocks: list[Block] = [
        Heading(1, f"Sealed test of run {report['run_id']}"),
    ]
    if report["reopened"]:
        prev = ", ".join(p["opened_at"] for p in ledger["previous"])
        why = "; ".join(ledger.get("reasons") or []) or (
            f"this strategy was already tested on this corpus and split (earlier: {prev})"
        )
        blocks.append(
            Banner(
                f"RE-OPENED: {why}. These labels have been seen before: the figures are no "
                "longer an unbiased test.",
            )
        )
    others = ledger.get("other_programs") or []
    if others:
        blocks.append(
            Paragraph(
                "Other programs of this run already opened on this corpus: "
                + ", ".join(f"{o.get('program_id')} (opened {o.get('opened_at')})" for o in others)
                + ". Keeping the best of them by these figures is selecting on test.",
            )
        )
    blocks += [
        Paragraph(
            f"Strategy {strat['id']} ({'the selected strategy' if strat['selected'] else 'a candidate of the lineage'}), "
            f"hash {_h(strat['strategy_hash'])}; val fitness {_f(strat.get('val_fitness'))}. "
            f"Corpus {corpus['name']}, content {_h(corpus['content_hash'])}, split assignment "
            f"{_h(corpus['assignment_hash'])}. Opened {ledger['opened_at']}: opening "
            f"{ledger.get('run_opening', ledger['opening'])} of this run's sealed test, "
            f"opening {ledger['opening']} of this program's.",
        ),
        Paragraph(
            f"Budget range {_pct(ev['b_lo'])} to {_pct(ev['b_hi'])} of benign runs flagged "
            f"({ev['n_budgets']} log-spaced budgets; raised where a benign set is too small). "
            '"From val": thresholds set on val\'s benign runs and applied unchanged (the '
            'realised benign flag rate is shown beside the nominal budget); "recalibrated": '
            "thresholds set again on the corpus's own benign runs. Loss vs val = val "
            "budget-AUC minus the corpus's (from val / recalibrated).",
        ),
        Heading(2, "Summary"),
        Table(*summary_table(report)),
    ]
    views = (report.get("val") or {}).get("views") or {}
    if any((c.get("panel") or {}).get("shifted") for c in report["corpora"].values()):
        blocks += [
            Heading(2, "Under shifted base rates"),
            Paragraph(
                "A monitor is deployed on agents whose failure rates per task and outcome "
                "differ from this corpus's. Each corpus is reweighted (its runs, not "
                "re-run): flattened, every task x outcome cell at one failure share; "
                "inverted, each cell's failure share mirrored around one half, so a "
                "monitor that scores which task was solved instead of what the agent did "
                "loses here. A cell counts as much as its smaller class can carry "
                f"(cell_mass {(report.get('evaluation') or {}).get('cell_mass', 'minority')}); "
                f"a cell with fewer than {min_per_class_of(report)} failures or passes is left "
                "out, since a handful of runs cannot stand for a cell's whole class. "
                f"Val is measured under the run's fitness view "
                f"({(views.get('panel') or {}).get('view', 'plain')}, the same cell rule); the "
                "loss is val minus the worse of the two figures.",
            ),
            Table(*shifted_table(report, "panel")),
        ]
        note = shifted_note(report, "panel")
        if note:
            blocks.append(Paragraph(note))
        if any((c.get("true") or {}).get("shifted") for c in report["corpora"].values()):
            blocks += [
                Heading(3, "The same on true labels"),
                Table(*shifted_table(report, "true")),
            ]
    mix_rows = benign_mix_table(report, "panel")
    if mix_rows[1]:
        blocks += [
            Heading(2, "Under a shifted benign mix"),
            Paragraph(BENIGN_MIX_NOTE),
            Table(*mix_rows),
            Paragraph(benign_mix_tail(report, "panel")),
        ]
        true_rows = benign_mix_table(report, "true")
        if true_rows[1]:
            blocks += [Heading(3, "The same on true labels"), Table(*true_rows)]
    elif benign_mix_skipped(report, "panel"):
        blocks.append(
            Paragraph(
                "Benign-mix views skipped: " + "; ".join(benign_mix_skipped(report, "panel")) + "."
            )
        )
    if report.get("val_scores_reproduced") is False:
        blocks.append(Banner("Val scores differ from those the run's lineage stored."))
    for key, caption in (
        ("transfer", "Thresholds from val against recalibrated, per corpus; calibration drift."),
        ("recall_by_dimension", "Recall against audit budget per failure dimension (log axis)."),
        ("recall_by_dimension_true", "The same on true labels."),
        ("escalation", "Selective escalation R*(Y) with the baselines."),
    ):
        if key in images:
            blocks.append(Image(images[key], caption))
    for name, c in report["corpora"].items():
        blocks.append(Heading(2, f"{name} ({c.get('kind', '')})"))
        labels = [lb for lb in ("panel", "true") if lb in c]
        if not labels:
            blocks.append(Paragraph(f"Not scored: {c.get('status')} {c.get('message', '')}"))
            continue
        gens = ", ".join(c.get("generators", []))
        spend = c.get("oracle") or {}
        blocks.append(
            Paragraph(
                f"{c['n']} labelled runs; generators: {gens}. Oracle calls per benign run "
                f"{_f(spend.get('rho'))}"
                + (" (over the cap)" if spend.get("over_cap") else "")
                + ".",
            )
        )
        blocks.append(Table(*_measures(c, labels)))
        blocks.append(Heading(3, "Per dimension (budget-AUC)"))
        blocks.append(Table(*_dimensions(c, labels)))
        blocks.append(Heading(3, "Per task (budget-AUC against the pooled thresholds)"))
        blocks.append(
            Paragraph(
                "Flag share: the task's realised benign flag rate over the nominal budget "
                "(mean over the grid); far from 1 means one pooled threshold spends the budget "
                "unevenly across tasks.",
            )
        )
        blocks.append(Table(*_tasks(c, labels)))
        blocks += _escalation_tables(report, name)
    esc = report.get("escalation") or {}
    if esc.get("skipped") and isinstance(esc["skipped"], str):
        blocks.append(Paragraph(f"Selective escalation skipped: {esc['skipped']}."))
    if report.get("notes"):
        blocks.append(Heading(2, "Notes"))
        blocks += [Paragraph(n) for n in report["notes"]]
    return blocks


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
    atomic_write(files["json"], report_json(report))
    atomic_write(files["markdown"], to_markdown(blocks))
    title = f"monsearch sealed test: run {report['run_id']}"
    atomic_write(files["html"], to_html(blocks, title=title, folder=out, width=1400))
    return {**files, **plots}
