"""The HTML report of a run (``monsearch report``): one self-contained page.

Everything is inline — styles, the lineage tree (an SVG drawn here), the fitness
plot (a matplotlib PNG as a data URI), highlighted source — so the page opens
anywhere, offline, and loads nothing from the network.

Sections: a summary (status, budget used, best and selected fitness, corpus,
spend), fitness over evaluations, the lineage tree, the path from a seed to the
selected program, what each operator achieved, the selected program (metrics,
source, diff to its parent), and the run's configuration.

The page is built as blocks of :mod:`monsearch.document`, which renders them and
escapes every text where it lands: a value read from the run (``lineage.sqlite``,
``selected.json``, ``config.json``) is text whatever its origin, for a run folder is
data and may come from someone else. The tree is drawn with
:func:`monsearch.document.element`, which escapes every attribute and text it is
given. Numbers go through :func:`_num`, which shows a value that is not a number as
text instead of failing.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Mapping
from numbers import Real
from typing import Any

from monsearch.document import (
    Block,
    Card,
    Cards,
    CodeBlock,
    Columns,
    Details,
    Drawing,
    Heading,
    Image,
    Legend,
    LegendEntry,
    Markup,
    Paragraph,
    Swatch,
    Table,
    element,
    inline,
    to_html,
)

from .counts import counted
from .lineage import CandidateRecord
from .runs import Run, SelectedStrategy
from .tree import Lineage

#: Colours of the page and the tree (one place, so the plot and the SVG agree).
SELECTED_COLOUR = "#1a9850"
BEST_COLOUR = "#f46d43"
PATH_COLOUR = "#2c7fb8"
FAILED_COLOUR = "#bbbbbb"
CROSS_COLOUR = "#c51b7d"


def _num(x: Any, digits: int = 4, spec: str = "f") -> str:
    """A number for reading (plain text, escaped where it lands); a value of a tampered
    file that is not a number is shown as it is rather than failing the report."""
    if x is None:
        return "–"
    if isinstance(x, Real) and not isinstance(x, bool):
        return f"{x:.{digits}{spec}}" if spec == "f" else f"{x:{spec}}"
    return str(x)


def _d(x: Any) -> Mapping[str, Any]:
    """``x`` if it is a mapping, else empty (a tampered file's field of the wrong kind)."""
    return x if isinstance(x, Mapping) else {}


def _budget(key: Any) -> str:
    """A recall table's budget key (``"0.05"``) as a percentage."""
    try:
        value = float(key)
    except (TypeError, ValueError):
        return str(key)
    return f"{100 * value:g}%" if math.isfinite(value) else str(key)


def _highlight(code: str, language: str) -> Markup | None:
    """Source as HTML with inline colours (pygments, which rich brings; it escapes the
    code), or None without pygments (the page then shows it plain)."""
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import DiffLexer, PythonLexer
    except ImportError:  # pragma: no cover - pygments comes with rich
        return None
    lexer = PythonLexer() if language == "python" else DiffLexer()
    # Inline line numbers: each number sits in its own line of the one <pre>, so it
    # cannot drift from its line the way a separate numbers column (another <pre> with
    # pygments' own line height) does.
    formatter = HtmlFormatter(noclasses=True, nobackground=True,
                              linenos="inline" if language == "python" else False,
                              style="friendly")
    return Markup(highlight(code, lexer, formatter))


def _code(code: str, language: str) -> CodeBlock:
    return CodeBlock(code, language, numbered=language == "python",
                     highlighted=_highlight(code, language))


# --------------------------------------------------------------------------- fitness plot


def fitness_plot_png(lineage: Lineage, selected_id: str | None) -> bytes:
    """Each candidate's val fitness by evaluation number, coloured by operator, and the
    running best; candidates that did not score sit at 0 as grey crosses."""
    from matplotlib.figure import Figure

    records = lineage.records
    fig = Figure(figsize=(11, 4.2), dpi=110, layout="constrained")
    ax = fig.subplots()
    ok = [r for r in records if r.ok]
    bad = [r for r in records if not r.ok]
    operators = sorted({_op_family(r.operator) for r in ok})
    for i, op in enumerate(operators):
        pts = [r for r in ok if _op_family(r.operator) == op]
        marker = "s" if op == "seed" else "o"
        ax.scatter([r.seq for r in pts], [r.fitness for r in pts], s=18 if op != "seed" else 36,
                   marker=marker, color=f"C{i % 10}", alpha=0.8, label=_plain(op), zorder=3)
    if bad:
        ax.scatter([r.seq for r in bad], [0.0] * len(bad), s=16, marker="x", color="0.6",
                   label="did not score", zorder=2)
    running, best = [], float("-inf")
    for r in records:
        if r.ok:
            best = max(best, r.fitness)
        running.append(best if best > float("-inf") else None)
    xs = [r.seq for r, b in zip(records, running, strict=True) if b is not None]
    ys = [b for b in running if b is not None]
    if xs:
        ax.step(xs, ys, where="post", color="black", lw=1.6, label="running best", zorder=4)
    if selected_id and selected_id in lineage.by_id:
        s = lineage.by_id[selected_id]
        ax.scatter([s.seq], [s.fitness], s=220, marker="*", color=SELECTED_COLOUR,
                   edgecolor="black", linewidth=0.8, label=_plain(f"selected {s.id}"), zorder=5)
    ax.set_xlabel("evaluation (sequence number)")
    ax.set_ylabel("val budget-AUC")
    ax.set_xlim(-1, max(1, len(records)))
    ax.grid(alpha=0.3)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=9, frameon=False)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _plain(text: str) -> str:
    """A plot label drawn as it is (``$`` would start matplotlib's mathtext)."""
    return text.replace("$", r"\$")


def _op_family(operator: str) -> str:
    """``seed:baseline`` -> ``seed``; operators with arguments keep their name only."""
    return operator.split(":", 1)[0].split("(", 1)[0] or "?"


# --------------------------------------------------------------------------- tree SVG


def _colour(x: float, lo: float, hi: float) -> str:
    """Viridis-like colour of ``x`` on [lo, hi] (a few stops, linear between them)."""
    stops = [(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)]
    t = 0.5 if hi <= lo else min(1.0, max(0.0, (x - lo) / (hi - lo)))
    pos = t * (len(stops) - 1)
    i = min(int(pos), len(stops) - 2)
    f = pos - i
    rgb = [round(a + (b - a) * f) for a, b in zip(stops[i], stops[i + 1], strict=True)]
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def lineage_svg(lineage: Lineage, selected_id: str | None, best_id: str | None,
                width: int = 1100) -> Markup:
    """The whole lineage as an SVG: depth left to right, one row per leaf.

    Edges follow first parents (dashed: further parents of a crossover); the path
    from a seed to the selected program is drawn thick; node colour is val fitness
    (grey: did not score). Every node has a tooltip with its id, fitness and operator.
    Every element is made by :func:`element`: ids, operators and descriptions from the
    lineage are escaped text.
    """
    records = lineage.records
    depth = lineage.depth()
    order: list[str] = []  # leaves in drawing order
    y: dict[str, float] = {}

    for root in lineage.roots:
        # Post-order without recursion: a run's first-parent chains can be hundreds deep.
        stack = [(root, False)]
        while stack:
            cid, kids_placed = stack.pop()
            kids = lineage.children[cid]
            if not kids:
                y[cid] = float(len(order))
                order.append(cid)
            elif kids_placed:
                y[cid] = (y[kids[0]] + y[kids[-1]]) / 2
            else:
                stack.append((cid, True))
                stack.extend((k, False) for k in reversed(kids))

    max_depth = max(depth.values(), default=0)
    # Seed labels sit left of their root, so they never cover the seed's children;
    # the left margin makes room for the longest (about 7 px a character at 12 px).
    seed_labels = [_seed_label(r) for r in records if lineage.first_parent(r.id) is None]
    left = 14 + 7 * max((len(t) for t in seed_labels), default=0)
    right, top, bottom = 170, 26, 16
    col = max(12.0, min(90.0, (width - left - right) / max(1, max_depth)))
    row = max(7.0, min(24.0, 900.0 / max(1, len(order))))
    height = int(top + bottom + row * max(0, len(order) - 1)) + 10
    svg_w = int(left + right + col * max_depth)

    def xy(cid: str) -> tuple[float, float]:
        return left + col * depth[cid], top + row * y[cid]

    ok = [r.fitness for r in records if r.ok]
    lo, hi = (min(ok), max(ok)) if ok else (0.0, 1.0)
    on_path = {r.id for r in lineage.path(selected_id)} if selected_id in lineage.by_id else set()
    label_style = {"font-size": 12, "font-weight": 600, "paint-order": "stroke",
                   "stroke": "#fff", "stroke-width": 3}
    edges: list[Markup] = []
    thick: list[Markup] = []
    nodes: list[Markup] = []
    labels: list[Markup] = []
    for r in records:
        x1, y1 = xy(r.id)
        parent = lineage.first_parent(r.id)
        if parent is not None:
            x0, y0 = xy(parent)
            xm = (x0 + x1) / 2
            d = f"M{x0:.1f},{y0:.1f} C{xm:.1f},{y0:.1f} {xm:.1f},{y1:.1f} {x1:.1f},{y1:.1f}"
            if r.id in on_path:
                thick.append(element("path", {"d": d, "fill": "none", "stroke": PATH_COLOUR,
                                              "stroke-width": 3}))
            else:
                edges.append(element("path", {"d": d, "fill": "none", "stroke": "#c8c8c8",
                                              "stroke-width": 1}))
        for other in r.parent_ids[1:]:
            if other in lineage.by_id:
                x0, y0 = xy(other)
                edges.append(element("line", {
                    "x1": f"{x0:.1f}", "y1": f"{y0:.1f}", "x2": f"{x1:.1f}", "y2": f"{y1:.1f}",
                    "stroke": CROSS_COLOUR, "stroke-width": 0.8, "stroke-dasharray": "3,3",
                    "opacity": 0.35}))
        radius = max(2.5, min(5.0, row * 0.38))
        tip = (f"{r.id} · {r.fitness:.4f} · {r.operator} · gen {r.generation}"
               if r.ok else f"{r.id} · {r.status} · {r.operator}")
        if r.description and r.description != r.operator:
            tip += f"\n{r.description}"
        nodes.append(element(
            "circle", {"cx": f"{x1:.1f}", "cy": f"{y1:.1f}", "r": f"{radius:.1f}",
                       "fill": _colour(r.fitness, lo, hi) if r.ok else "#ffffff",
                       "stroke": "#333" if r.ok else FAILED_COLOUR, "stroke-width": 0.7},
            element("title", None, tip)))
        ring = (SELECTED_COLOUR if r.id == selected_id
                else BEST_COLOUR if r.id == best_id else None)
        if ring:
            nodes.append(element("circle", {"cx": f"{x1:.1f}", "cy": f"{y1:.1f}",
                                            "r": f"{radius + 4:.1f}", "fill": "none",
                                            "stroke": ring, "stroke-width": 2.5}))
            label = f"{r.id} {'selected' if r.id == selected_id else 'best'} {r.fitness:.4f}"
            labels.append(element("text", {"x": f"{x1 + radius + 6:.1f}",
                                           "y": f"{y1 - radius - 3:.1f}", **label_style,
                                           "fill": ring}, label))
        elif parent is None:
            labels.append(element("text", {"x": f"{x1 - radius - 5:.1f}", "y": f"{y1:.1f}",
                                           **label_style, "fill": "#333", "text-anchor": "end",
                                           "dominant-baseline": "middle"}, _seed_label(r)))
    return element(
        "svg",
        {"width": svg_w, "height": height, "viewBox": f"0 0 {svg_w} {height}", "role": "img",
         "aria-label": "lineage tree", "font-family": "Helvetica, Arial, sans-serif"},
        Markup.concat(edges + thick + nodes + labels),
    )


def _seed_label(record: CandidateRecord) -> str:
    return record.operator.replace("seed:", "seed ")


def _tree_legend(lineage: Lineage) -> Legend:
    ok = [r.fitness for r in lineage.records if r.ok]
    lo, hi = (min(ok), max(ok)) if ok else (0.0, 1.0)
    ramp = [Swatch(_colour(lo + (hi - lo) * i / 4, lo, hi)) for i in range(5)]
    return Legend([
        LegendEntry(f"val budget-AUC {lo:.3f} → {hi:.3f}", ramp),
        LegendEntry("did not score", [Swatch(FAILED_COLOUR, hollow=True)]),
        LegendEntry("path from a seed to the selected program", [Swatch(PATH_COLOUR)]),
        LegendEntry("selected", [Swatch(SELECTED_COLOUR)]),
        LegendEntry("best point fitness", [Swatch(BEST_COLOUR)]),
        LegendEntry("second parent (crossover)", [Swatch(CROSS_COLOUR)]),
    ])


# --------------------------------------------------------------------------- sections


def _cards(lineage: Lineage, config: dict[str, Any], selected: SelectedStrategy | None,
           status: str, reason: str, spend: dict[str, Any]) -> Cards:
    corpus = _d(config.get("corpus"))
    best = lineage.best()
    listed = [_d(p) for p in config.get("proposers") or [] if isinstance(p, Mapping)]
    proposers = ", ".join(
        f"{p.get('name')}" + (f":{_num(p.get('weight'), spec='g')}" if len(listed) > 1 else "")
        for p in listed
    )
    counts: dict[str, int] = {}
    for r in lineage.records:
        counts[r.status] = counts.get(r.status, 0) + 1
    status_detail = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    return Cards([
        Card("status", status, reason),
        Card("evaluations", f"{len(lineage.records)} / {config.get('budget', '?')}",
             status_detail),
        Card("selected", _num(selected.fitness) if selected else "none",
             f"{selected.id}, bootstrap 5% {_num(selected.fitness_low)}" if selected else ""),
        Card("best point fitness", _num(best.fitness) if best else "none",
             best.id if best else ""),
        Card("corpus", str(corpus.get("name") or "?"),
             f"content {str(corpus.get('content_hash', ''))[:16]}"),
        Card("seed / proposers", f"{config.get('seed', '?')}", proposers),
        Card("spend", f"${_num(spend.get('usd', 0.0))}", _spend_detail(spend)),
        Card("created", str(config.get("created", "?"))[:19].replace("T", " "), "UTC"),
    ])


def _spend_detail(spend: dict[str, Any]) -> str:
    parts = []
    for kind, v in sorted(spend.items()):
        if isinstance(v, dict):
            tokens = v.get("prompt_tokens", 0) + v.get("completion_tokens", 0)
            parts.append(f"{kind}: {counted(v.get('calls', 0), 'call')}"
                         + (f", {counted(tokens, 'token')}" if tokens else ""))
    return "; ".join(parts) or "no LLM or oracle spend"


def _path_table(lineage: Lineage, target: str | None) -> Block:
    if target is None or target not in lineage.by_id:
        return Paragraph("no selected program", note=True)
    chain = lineage.path(target)
    rows, classes = [], []
    prev: CandidateRecord | None = None
    for r in chain:
        delta = "" if prev is None or not (r.ok and prev.ok) else f"{r.fitness - prev.fitness:+.4f}"
        rows.append([str(r.generation), r.id, r.operator, r.description,
                     _num(r.fitness) if r.ok else r.status, delta])
        classes.append("selected" if r.id == target else None)
        prev = r
    return Table(["gen", "id", "operator", "description", "fitness", "Δ parent"], rows,
                 numeric_from=4, row_classes=classes)


def _operator_table(lineage: Lineage) -> Table:
    stats: dict[str, dict[str, Any]] = {}
    for r in lineage.records:
        s = stats.setdefault(r.operator if r.operator.startswith("seed") else _op_family(r.operator),
                             {"n": 0, "ok": 0, "improved": 0, "best": None})
        s["n"] += 1
        if r.ok:
            s["ok"] += 1
            s["best"] = r.fitness if s["best"] is None else max(s["best"], r.fitness)
            parent = lineage.first_parent(r.id)
            if parent is not None and lineage.by_id[parent].ok \
                    and r.fitness > lineage.by_id[parent].fitness:
                s["improved"] += 1
    rows = [
        [op, str(s["n"]), str(s["ok"]), str(s["improved"]), _num(s["best"])]
        for op, s in sorted(stats.items(), key=lambda kv: (-kv[1]["n"], kv[0]))
    ]
    return Table(["operator", "candidates", "scored", "beat their parent", "best fitness"], rows)


def _metrics(fj: dict[str, Any], fitness_low: float | None) -> list[Block]:
    fj = _d(fj)
    panel, true = _d(fj.get("metrics")), _d(fj.get("metrics_true"))
    pb, tb = _d(panel.get("bauc")), _d(true.get("bauc"))
    has_true = bool(true)
    head = ["metric", "panel labels"] + (["true labels"] if has_true else [])

    def row(name: str, a: Any, b: Any) -> list[str]:
        return [name, _num(a)] + ([_num(b)] if has_true else [])

    view = fj.get("view") or "plain"
    plain_m, plain_t = fj.get("metrics_plain") or {}, fj.get("metrics_true_plain") or {}
    summary = [
        row(f"val budget-AUC (fitness, {view})", fj.get("fitness"), tb.get("aggregate")),
        row(f"worst dimension ({pb.get('worst_dimension') or '–'})", pb.get("worst"), tb.get("worst")),
        row("pooled BAUC", panel.get("bauc_pooled"), true.get("bauc_pooled")),
        row("BAUC of chance", panel.get("chance_bauc"), true.get("chance_bauc")),
        row("AUROC", panel.get("auroc"), true.get("auroc")),
        row(f"pAUC (FPR ≤ {panel.get('pauc_max_fpr', '')})", panel.get("pauc"), true.get("pauc")),
    ]
    if view != "plain" and plain_m:
        # The unweighted figure beside the invariant one: what the corpus's own rates say.
        summary.insert(1, row("val budget-AUC, plain (the corpus's own rates)",
                              (plain_m.get("bauc") or {}).get("aggregate"),
                              (plain_t.get("bauc") or {}).get("aggregate")))
    if fitness_low is not None:
        summary.insert(1, ["bootstrap 5th percentile", _num(fitness_low)]
                       + (["–"] if has_true else []))
    out: list[Block] = [Table(head, summary)]
    if panel:
        out.append(Paragraph(
            f"{counted(panel.get('n'), 'val trajectory', 'val trajectories')} "
            f"({panel.get('n_benign')} benign, {counted(panel.get('n_failures'), 'failure')}, "
            "panel labels); budget range "
            f"[{_num(pb.get('b_lo', 0), 3)}, {_num(pb.get('b_hi', 0), 3)}]"
            + (" (raised: too few benign runs for the requested one)"
               if panel.get("range_raised") else "") + ".",
            note=True,
        ))
    by_dim, tb_dim, n_failures = _d(pb.get("by_dimension")), _d(tb.get("by_dimension")), _d(
        pb.get("n_failures"))
    dims = sorted(by_dim, key=str)
    per_dimension: list[Block] = [Heading(3, "Per dimension")]
    if dims:
        rows = [[d, str(n_failures.get(d, "–")), _num(by_dim.get(d))]
                + ([_num(tb_dim.get(d))] if has_true else []) for d in dims]
        per_dimension.append(Table(["dimension", "failures", "BAUC panel"]
                                   + (["BAUC true"] if has_true else []), rows))
    recall = _d(panel.get("recall_at"))
    rows = []
    for key, value in recall.items():
        thr = _d(_d(panel.get("thresholds")).get(key))
        rows.append([_budget(key), _num(value)]
                    + ([_num(_d(true.get("recall_at")).get(key))] if has_true else [])
                    + [_num(thr.get("tau"))])
    at_budgets: list[Block] = [Heading(3, "Recall at audit budgets")]
    if rows:
        at_budgets.append(Table(["audit budget", "recall panel"]
                                + (["recall true"] if has_true else []) + ["threshold"], rows))
    at_budgets.append(Paragraph("–: not estimable on this split.", note=True))
    out.append(Columns([per_dimension, at_budgets]))
    oracle = _d(fj.get("oracle"))
    cap = oracle.get("rho_cap")
    out.append(Paragraph(
        f"Oracle: {counted(oracle.get('calls', 0), 'call')} ({oracle.get('fresh_calls')} fresh), "
        f"{_num(oracle.get('rho', 0.0))} per benign run"
        + (f" (cap {_num(cap, spec='g')})" if cap is not None else "")
        + f", at most {oracle.get('max_per_trajectory', 0)} on one run, "
        f"${_num(oracle.get('cost_usd') or 0.0)}"
    ))
    return out


def _selected_section(lineage: Lineage, selected: SelectedStrategy | None) -> list[Block]:
    if selected is None:
        best = lineage.best()
        if best is None:
            return [Paragraph("No program was selected and none scored.", note=True)]
        note = Paragraph("No strategy is selected yet (the run has not finished); showing the "
                         f"best candidate so far, {best.id}.", note=True)
        record, fj, low, source = best, best.fitness_json or {}, None, best.source or ""
    else:
        record = lineage.by_id.get(selected.id)
        rule = _d(selected.selection).get("rule", "the bootstrap lower bound")
        note = Paragraph(inline("{id}, sha256 `{hash}`, chosen by {rule}.", id=selected.id,
                                hash=selected.strategy_hash, rule=rule))
        fj, low, source = selected.fitness_json, selected.fitness_low, selected.source
    blocks = [note, *_metrics(fj, low)]
    if record is not None:
        blocks.append(Paragraph(f"Proposed by {record.proposer} ({record.operator}): "
                                f"{record.description}"))
    blocks += [Heading(3, "Source"), _code(source, "python")]
    if record is not None and record.diff:
        parent = f" to its parent {record.parent_ids[0]}" if record.parent_ids else ""
        blocks.append(Details(f"Diff{parent}", [_code(record.diff, "diff")]))
    return blocks


def build_report(
    run: Run,
    lineage: Lineage,
    *,
    config: dict[str, Any],
    selected: SelectedStrategy | None,
    status: str,
    reason: str,
    spend: dict[str, Any],
) -> str:
    """The report page as one HTML string."""
    best = lineage.best()
    selected_id = selected.id if selected else None
    focus = selected_id or (best.id if best else None)
    tree: Block = (
        Drawing(lineage_svg(lineage, selected_id, best.id if best else None),
                "Depth (first-parent generations) runs left to right; hover over a node for "
                "its id, fitness and operator.", alt="lineage tree")
        if lineage.records else Paragraph("no candidates yet", note=True)
    )
    blocks = [
        Heading(1, f"monsearch run {run.id}"),
        Paragraph(f"{counted(len(lineage.records), 'candidate')} evaluated on val · {status}",
                  note=True),
        _cards(lineage, config, selected, status, reason, spend),
        Heading(2, "Fitness over evaluations"),
        Image(fitness_plot_png(lineage, selected_id),
              "Each point is one candidate's val budget-AUC, in the order it was evaluated, "
              "coloured by the operator that proposed it; the line is the best so far.",
              alt="fitness over evaluations"),
        Heading(2, "Lineage"),
        _tree_legend(lineage),
        tree,
        Heading(3, "From a seed to the " + ("selected program" if selected else "best candidate")),
        _path_table(lineage, focus),
        Heading(3, "Operators"),
        _operator_table(lineage),
        Heading(2, "Selected program"),
        *_selected_section(lineage, selected),
        Heading(2, "Configuration"),
        Details("config.json", [CodeBlock(json.dumps(config, indent=2, sort_keys=True),
                                          "json")]),
        Heading(3, "Spend"),
        _spend_table(spend),
    ]
    return to_html(blocks, title=f"monsearch run {run.id}")


def _spend_table(spend: dict[str, Any]) -> Table:
    rows = [
        [kind, str(v.get("calls", 0)), str(v.get("prompt_tokens", 0)),
         str(v.get("completion_tokens", 0)), f"${_num(v.get('usd', 0.0))}"]
        for kind, v in sorted(spend.items()) if isinstance(v, dict)
    ]
    rows.append(["total", "", "", "", f"${_num(spend.get('usd', 0.0))}"])
    return Table(["kind", "calls", "prompt tokens", "completion tokens", "USD"], rows)
