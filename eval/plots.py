"""PNG plots of the sealed-test report (matplotlib, Agg; no display needed).

Each function takes the report dict of :func:`.sealed.run_sealed_test` and writes one
PNG: recall against audit budget per dimension (log axis), the escalation curves
R*(Y) beside their baselines, and transferred against recalibrated thresholds per
corpus. Figures are built with ``matplotlib.figure.Figure`` (no pyplot global state).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

RULE_STYLE = {
    "np": ("Neyman-Pearson band", "-", "tab:blue"),
    "band": ("monotone band", "-", "tab:green"),
    "program": ("program alone", "--", "tab:gray"),
    "judge": ("judge panel on everything", ":", "tab:red"),
    "and": ("AND-cascade", "-.", "tab:purple"),
}
DPI = 110


def _figure(
    n_panels: int, width: float = 4.2, height: float = 3.2, legend_rows: int = 2
) -> tuple[Any, list[Any]]:
    """A grid of panels with room for a title above and a legend below.

    Margins are set by hand: matplotlib's constrained layout doubles the drawing time.
    """
    from matplotlib.figure import Figure

    cols = min(3, max(1, n_panels))
    rows = math.ceil(n_panels / cols)
    top_in, bottom_in = 0.7, 0.6 + 0.18 * legend_rows
    fig_h = height * rows + top_in + bottom_in
    fig = Figure(figsize=(width * cols, fig_h), dpi=DPI)
    fig.subplots_adjust(
        left=0.55 / (width * cols),
        right=1 - 0.15 / (width * cols),
        top=1 - top_in / fig_h,
        bottom=bottom_in / fig_h,
        wspace=0.25,
        hspace=0.45,
    )
    axes = fig.subplots(rows, cols, squeeze=False).ravel().tolist()
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    return fig, axes[:n_panels]


def _plain(text: Any) -> str:
    """``text`` drawn as it is: matplotlib reads ``$...$`` as mathtext and fails on a name
    that is not valid TeX, so every dollar is escaped."""
    return str(text).replace("$", r"\$")


def _short(name: str, limit: int = 28) -> str:
    return _plain(name if len(name) <= limit else name[: limit - 1] + "…")


def _percent_axis(ax: Any, axis: str = "x") -> None:
    """Percent labels at 1-2-3-5-7 steps of a log axis (minor ticks unlabelled)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0, 7.0)))
    target.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:.0%}" if v >= 0.01 else f"{v:.1%}"))
    target.set_minor_formatter(NullFormatter())


def recall_by_dimension(report: dict[str, Any], path: Path, label: str = "panel") -> Path:
    """Recall vs audit budget per dimension (recalibrated thresholds), one panel per corpus."""
    panels: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = []
    val = report["val"].get(label) or {}
    if "curve" in val:
        panels.append(("val", val["curve"], None))
    for name, c in report["corpora"].items():
        block = c.get(label)
        if block and "curve" in block["recalibrated"]:
            panels.append((name, block["recalibrated"]["curve"], block["transferred"]["curve"]))
    fig, axes = _figure(max(1, len(panels)))
    dims = sorted({d for _, cur, _ in panels for d in cur["recall"]})
    colours = {d: f"C{i % 10}" for i, d in enumerate(dims)}
    for ax, (name, cur, trans) in zip(axes, panels, strict=False):
        b = cur["budgets"]
        for d, r in cur["recall"].items():
            ax.plot(b, r, color=colours[d], lw=1.4, label=_plain(d))
        if trans is not None and trans.get("recall_pooled") is not None:
            ax.plot(
                trans["budgets"],
                trans["recall_pooled"],
                color="black",
                ls="--",
                lw=1.2,
                label="all, thresholds from val",
            )
        ax.plot(b, b, color="0.6", ls=":", lw=1, label="chance")
        ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.set_title(_short(name), fontsize=10)
        ax.set_xlabel("audit budget (benign flag rate)", fontsize=8)
        ax.set_ylabel("recall", fontsize=8)
        ax.tick_params(labelsize=7)
        _percent_axis(ax)
        ax.grid(alpha=0.3, which="both")
    if panels:
        handles, labels = axes[0].get_legend_handles_labels()
        for ax in axes[1:]:
            for h, lb in zip(*ax.get_legend_handles_labels(), strict=True):
                if lb not in labels:
                    handles.append(h)
                    labels.append(lb)
        fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=7, frameon=False)
    fig.suptitle(f"Recall per failure dimension ({label} labels, recalibrated)", fontsize=11)
    fig.savefig(path)
    return path


def escalation(report: dict[str, Any], path: Path, label: str = "panel") -> Path | None:
    """R*(Y): recall against the budget in dollars per 1,000 benign runs, rules and baselines."""
    esc = report.get("escalation") or {}
    curves = esc.get("curves") or {}
    names = [n for n in curves if label in curves[n]]
    if not names:
        return None
    usd = float(esc.get("usd_per_unit", 1.0))
    fig, axes = _figure(len(names), legend_rows=1)
    for ax, name in zip(axes, names, strict=True):
        for rule, curve in curves[name][label].items():
            pts = [p for p in curve["points"] if p["feasible"]]
            if not pts:
                continue
            text, ls, colour = RULE_STYLE.get(rule, (_plain(rule), "-", None))
            x = [p["budget"] * usd * 1000.0 for p in pts]
            ax.plot(x, [p["recall"] for p in pts], ls=ls, color=colour, lw=1.5, label=text)
        ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.set_title(_short(name), fontsize=10)
        ax.set_xlabel("budget Y ($ per 1,000 benign runs)", fontsize=8)
        ax.set_ylabel("recall R*(Y)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3, which="both")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=7, frameon=False)
    fig.suptitle(
        f"Selective escalation, fitted on val ({label} labels): recall at each budget", fontsize=11
    )
    fig.savefig(path)
    return path


def transfer(report: dict[str, Any], path: Path) -> Path:
    """Transferred vs recalibrated BAUC per corpus, and realised vs nominal flag rates."""
    import numpy as np

    names = [n for n, c in report["corpora"].items() if "panel" in c]
    fig, axes = _figure(2, width=5.6, height=3.6, legend_rows=2)  # room for slanted names
    ax1, ax2 = axes
    x = np.arange(len(names))
    val = (report["val"].get("panel") or {}).get("bauc", {}).get("aggregate")

    def agg(name: str, label: str, kind: str) -> float:
        block = report["corpora"][name].get(label)
        if not block:
            return math.nan
        v = (block[kind].get("bauc") or {}).get("aggregate")
        return math.nan if v is None else v

    w = 0.38
    ax1.bar(
        x - w / 2, [agg(n, "panel", "transferred") for n in names], w, label="thresholds from val"
    )
    ax1.bar(x + w / 2, [agg(n, "panel", "recalibrated") for n in names], w, label="recalibrated")
    true_rc = [agg(n, "true", "recalibrated") for n in names]
    if any(not math.isnan(v) for v in true_rc):
        ax1.plot(x + w / 2, true_rc, "kD", ms=5, label="recalibrated, true labels")
    if val is not None:
        ax1.axhline(val, color="black", ls="--", lw=1, label="val")
    ax1.set_xticks(x, [_short(n, 16) for n in names], rotation=25, ha="right", fontsize=7)
    ax1.set_ylabel("budget-AUC (mean over dimensions)", fontsize=8)
    ax1.set_ylim(0, 1)
    ax1.legend(fontsize=7)
    ax1.set_title("Budget-AUC per corpus (panel labels)", fontsize=10)
    lo, hi = 1.0, 0.0
    for i, n in enumerate(names):
        cur = report["corpora"][n]["panel"]["transferred"]["curve"]
        ax2.plot(cur["budgets"], cur["flag_rate"], color=f"C{i % 10}", lw=1.4, label=_short(n, 24))
        lo, hi = min(lo, min(cur["budgets"])), max(hi, max(cur["budgets"]))
    ax2.plot([lo, hi], [lo, hi], color="0.5", ls=":", lw=1, label="calibrated")
    ax2.set_xscale("log")
    ax2.set_yscale("log")
    ax2.set_xlabel("nominal budget (thresholds set on val)", fontsize=8)
    ax2.set_ylabel("realised benign flag rate", fontsize=8)
    _percent_axis(ax2, "x")
    _percent_axis(ax2, "y")
    ax2.tick_params(labelsize=7)
    ax2.grid(alpha=0.3, which="both")
    ax2.legend(fontsize=7)
    ax2.set_title("Calibration drift of val thresholds", fontsize=10)
    fig.savefig(path)
    return path


def write_plots(report: dict[str, Any], out: Path) -> dict[str, Path]:
    """Every plot of the report into ``out``: ``{name: path}``."""
    plots: dict[str, Path] = {}
    plots["recall_by_dimension"] = recall_by_dimension(report, out / "recall_by_dimension.png")
    if any("true" in c for c in report["corpora"].values()):
        plots["recall_by_dimension_true"] = recall_by_dimension(
            report, out / "recall_by_dimension_true.png", "true"
        )
    esc = escalation(report, out / "escalation.png")
    if esc is not None:
        plots["escalation"] = esc
    plots["transfer"] = transfer(report, out / "transfer.png")
    return plots
