"""The HTML report of a run (``monsearch report``): one self-contained page.

Everything is inline — styles, the lineage tree (an SVG drawn here), the fitness
plot (a matplotlib PNG as a data URI), highlighted source — so the page opens
anywhere, offline, and loads nothing from the network.

Sections: a summary (status, budget used, best and selected fitness, corpus,
spend), fitness over evaluations, the lineage tree, the path from a seed to the
selected program, what each operator achieved, the selected program (metrics,
source, diff to its parent), and the run's configuration.

Every value read from the run (``lineage.sqlite``, ``selected.json``, ``config.json``)
is escaped where it lands, text or attribute, SVG included, whatever its origin: a run
folder is data, and may come from someone else. Table cells are escaped by
:func:`_table` itself; numbers go through :func:`_num`, which shows a value that is not a
number as (escaped) text instead of failing.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from collections.abc import Mapping, Sequence
from numbers import Real
from typing import Any

from .lineage import CandidateRecord
from .runs import Run, SelectedStrategy
from .tree import Lineage

#: Colours of the page and the tree (one place, so the plot and the SVG agree).
SELECTED_COLOUR = "#1a9850"
BEST_COLOUR = "#f46d43"
PATH_COLOUR = "#2c7fb8"
FAILED_COLOUR = "#bbbbbb"
CROSS_COLOUR = "#c51b7d"

_CSS = """
body { font: 14px/1.45 -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
       color: #222; background: #fafafa; margin: 0; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 60px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 34px 0 10px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
h3 { font-size: 14px; margin: 18px 0 6px; }
.sub { color: #666; margin-bottom: 16px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(200px, 1fr)); gap: 10px; }
.card { background: #fff; border: 1px solid #e3e3e3; border-radius: 6px; padding: 10px 12px; }
.card .k { color: #777; font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card .v { font-size: 18px; font-weight: 600; margin-top: 2px; }
.card .d { color: #666; font-size: 12px; margin-top: 2px; word-break: break-all; }
table { border-collapse: collapse; background: #fff; margin: 6px 0 10px; }
th, td { border: 1px solid #e3e3e3; padding: 3px 9px; text-align: left; vertical-align: top; }
th { background: #f1f1f1; font-weight: 600; white-space: nowrap; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.sel td { background: #e8f5e9; }
code, pre { font: 12.5px/1.4 "SFMono-Regular", Menlo, Consolas, monospace; }
pre { background: #fff; border: 1px solid #e3e3e3; border-radius: 4px; padding: 10px;
      overflow-x: auto; margin: 6px 0; }
.figure { background: #fff; border: 1px solid #e3e3e3; border-radius: 6px; padding: 8px; }
.code { background: #fff; border: 1px solid #e3e3e3; border-radius: 4px; padding: 8px 10px;
        overflow-x: auto; margin: 6px 0; }
.code pre { border: 0; padding: 0; margin: 0; background: transparent; overflow: visible; }
.code table { margin: 0; background: transparent; }
.code td { border: 0; padding: 0 10px 0 0; }
.figure img { width: 100%; height: auto; display: block; }
.tree { overflow-x: auto; }
.note { color: #666; font-size: 12.5px; margin: 4px 0 8px; }
.bad { color: #b2182b; }
.two { display: grid; grid-template-columns: 1fr 1fr; gap: 18px; }
details summary { cursor: pointer; color: #2c7fb8; margin: 6px 0; }
.legend span { display: inline-block; margin-right: 16px; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 50%;
          vertical-align: -1px; margin-right: 4px; }
"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


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


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *,
           numeric_from: int = 1, row_class: Sequence[str | None] | None = None) -> str:
    """A table of plain-text cells (each escaped here); row classes are ours, never data."""
    out = ["<table><tr>", *(f"<th>{_e(h)}</th>" for h in headers), "</tr>"]
    for i, row in enumerate(rows):
        cls = row_class[i] if row_class else None
        out.append(f'<tr class="{_e(cls)}">' if cls else "<tr>")
        for j, cell in enumerate(row):
            text = _e(cell)
            out.append(f'<td class="n">{text}</td>' if j >= numeric_from else f"<td>{text}</td>")
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def _highlight(code: str, language: str) -> str:
    """Source as HTML with inline colours (pygments, which rich brings), or plain."""
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import DiffLexer, PythonLexer
    except ImportError:  # pragma: no cover - pygments comes with rich
        return f"<pre>{_e(code)}</pre>"
    lexer = PythonLexer() if language == "python" else DiffLexer()
    # Inline line numbers: each number sits in its own line of the one <pre>, so it
    # cannot drift from its line the way a separate numbers column (another <pre> with
    # pygments' own line height) does.
    formatter = HtmlFormatter(noclasses=True, nobackground=True,
                              linenos="inline" if language == "python" else False,
                              style="friendly")
    return f'<div class="code">{highlight(code, lexer, formatter)}</div>'


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
                width: int = 1100) -> str:
    """The whole lineage as an SVG: depth left to right, one row per leaf.

    Edges follow first parents (dashed: further parents of a crossover); the path
    from a seed to the selected program is drawn thick; node colour is val fitness
    (grey: did not score). Every node has a tooltip with its id, fitness and operator.
    """
    records = lineage.records
    if not records:
        return "<p class='note'>no candidates yet</p>"
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

    max_depth = max(depth.values())
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
    parts = [
        f'<svg width="{svg_w}" height="{height}" viewBox="0 0 {svg_w} {height}" '
        'role="img" aria-label="lineage tree" font-family="Helvetica, Arial, sans-serif">'
    ]
    edges, thick, nodes, labels = [], [], [], []
    for r in records:
        x1, y1 = xy(r.id)
        parent = lineage.first_parent(r.id)
        if parent is not None:
            x0, y0 = xy(parent)
            xm = (x0 + x1) / 2
            d = f"M{x0:.1f},{y0:.1f} C{xm:.1f},{y0:.1f} {xm:.1f},{y1:.1f} {x1:.1f},{y1:.1f}"
            if r.id in on_path:
                thick.append(f'<path d="{d}" fill="none" stroke="{PATH_COLOUR}" stroke-width="3"/>')
            else:
                edges.append(f'<path d="{d}" fill="none" stroke="#c8c8c8" stroke-width="1"/>')
        for other in r.parent_ids[1:]:
            if other in lineage.by_id:
                x0, y0 = xy(other)
                edges.append(
                    f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x1:.1f}" y2="{y1:.1f}" '
                    f'stroke="{CROSS_COLOUR}" stroke-width="0.8" stroke-dasharray="3,3" '
                    'opacity="0.35"/>'
                )
        radius = max(2.5, min(5.0, row * 0.38))
        fill = _colour(r.fitness, lo, hi) if r.ok else "#ffffff"
        stroke = "#333" if r.ok else FAILED_COLOUR
        tip = (f"{r.id} · {r.fitness:.4f} · {r.operator} · gen {r.generation}"
               if r.ok else f"{r.id} · {r.status} · {r.operator}")
        if r.description and r.description != r.operator:
            tip += f"\n{r.description}"
        nodes.append(
            f'<circle cx="{x1:.1f}" cy="{y1:.1f}" r="{radius:.1f}" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="0.7"><title>{_e(tip)}</title></circle>'
        )
        ring = None
        if r.id == selected_id:
            ring = SELECTED_COLOUR
        elif r.id == best_id:
            ring = BEST_COLOUR
        if ring:
            nodes.append(f'<circle cx="{x1:.1f}" cy="{y1:.1f}" r="{radius + 4:.1f}" fill="none" '
                         f'stroke="{ring}" stroke-width="2.5"/>')
        label = None
        if r.id == selected_id:
            label = f"{r.id} selected {r.fitness:.4f}"
        elif r.id == best_id:
            label = f"{r.id} best {r.fitness:.4f}"
        elif parent is None:
            labels.append(
                f'<text x="{x1 - radius - 5:.1f}" y="{y1:.1f}" font-size="12" '
                'font-weight="600" fill="#333" text-anchor="end" dominant-baseline="middle" '
                f'paint-order="stroke" stroke="#fff" stroke-width="3">{_e(_seed_label(r))}</text>'
            )
        if label:
            colour = {selected_id: SELECTED_COLOUR, best_id: BEST_COLOUR}.get(r.id, "#333")
            labels.append(
                f'<text x="{x1 + radius + 6:.1f}" y="{y1 - radius - 3:.1f}" font-size="12" '
                f'font-weight="600" fill="{colour}" paint-order="stroke" stroke="#fff" '
                f'stroke-width="3">{_e(label)}</text>'
            )
    parts += edges + thick + nodes + labels
    parts.append("</svg>")
    return "".join(parts)


def _seed_label(record: CandidateRecord) -> str:
    return record.operator.replace("seed:", "seed ")


def _tree_legend(lineage: Lineage) -> str:
    ok = [r.fitness for r in lineage.records if r.ok]
    lo, hi = (min(ok), max(ok)) if ok else (0.0, 1.0)
    ramp = "".join(
        f'<span class="swatch" style="background:{_colour(lo + (hi - lo) * i / 4, lo, hi)};'
        'margin-right:0"></span>'
        for i in range(5)
    )
    return (
        '<p class="legend note">'
        f"<span>{ramp} val budget-AUC {lo:.3f} → {hi:.3f}</span>"
        f'<span><span class="swatch" style="border:1px solid {FAILED_COLOUR}"></span>'
        "did not score</span>"
        f'<span><span class="swatch" style="background:{PATH_COLOUR}"></span>'
        "path from a seed to the selected program</span>"
        f'<span><span class="swatch" style="background:{SELECTED_COLOUR}"></span>selected</span>'
        f'<span><span class="swatch" style="background:{BEST_COLOUR}"></span>'
        "best point fitness</span>"
        f'<span><span class="swatch" style="background:{CROSS_COLOUR}"></span>'
        "second parent (crossover)</span>"
        "</p>"
    )


# --------------------------------------------------------------------------- sections


def _cards(lineage: Lineage, config: dict[str, Any], selected: SelectedStrategy | None,
           status: str, reason: str, spend: dict[str, Any]) -> str:
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
    cards = [
        ("status", status, reason),
        ("evaluations", f"{len(lineage.records)} / {config.get('budget', '?')}", status_detail),
        ("selected", _num(selected.fitness) if selected else "none",
         f"{selected.id}, bootstrap 5% {_num(selected.fitness_low)}" if selected else ""),
        ("best point fitness", _num(best.fitness) if best else "none", best.id if best else ""),
        ("corpus", corpus.get("name") or "?", f"content {str(corpus.get('content_hash', ''))[:16]}"),
        ("seed / proposers", f"{config.get('seed', '?')}", proposers),
        ("spend", f"${_num(spend.get('usd', 0.0))}", _spend_detail(spend)),
        ("created", str(config.get("created", "?"))[:19].replace("T", " "), "UTC"),
    ]
    return '<div class="cards">' + "".join(
        f'<div class="card"><div class="k">{_e(k)}</div><div class="v">{_e(v)}</div>'
        f'<div class="d">{_e(d)}</div></div>'
        for k, v, d in cards
    ) + "</div>"


def _spend_detail(spend: dict[str, Any]) -> str:
    parts = []
    for kind, v in sorted(spend.items()):
        if isinstance(v, dict):
            tokens = v.get("prompt_tokens", 0) + v.get("completion_tokens", 0)
            parts.append(f"{kind}: {v.get('calls', 0)} calls" + (f", {tokens} tokens" if tokens else ""))
    return "; ".join(parts) or "no LLM or oracle spend"


def _path_table(lineage: Lineage, target: str | None) -> str:
    if target is None or target not in lineage.by_id:
        return "<p class='note'>no selected program</p>"
    chain = lineage.path(target)
    rows, classes = [], []
    prev: CandidateRecord | None = None
    for r in chain:
        delta = "" if prev is None or not (r.ok and prev.ok) else f"{r.fitness - prev.fitness:+.4f}"
        rows.append([str(r.generation), r.id, r.operator, r.description,
                     _num(r.fitness) if r.ok else r.status, delta])
        classes.append("sel" if r.id == target else None)
        prev = r
    return _table(["gen", "id", "operator", "description", "fitness", "Δ parent"], rows,
                  numeric_from=4, row_class=classes)


def _operator_table(lineage: Lineage) -> str:
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
    return _table(["operator", "candidates", "scored", "beat their parent", "best fitness"], rows)


def _metrics_html(fj: dict[str, Any], fitness_low: float | None) -> str:
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
    out = [_table(head, summary)]
    if panel:
        out.append(
            "<p class='note'>"
            + _e(f"{panel.get('n')} val trajectories ({panel.get('n_benign')} benign, "
                 f"{panel.get('n_failures')} failures, panel labels); budget range "
                 f"[{_num(pb.get('b_lo', 0), 3)}, {_num(pb.get('b_hi', 0), 3)}]"
                 + (" (raised: too few benign runs for the requested one)"
                    if panel.get("range_raised") else "") + ".")
            + "</p>"
        )
    by_dim, tb_dim, n_failures = _d(pb.get("by_dimension")), _d(tb.get("by_dimension")), _d(
        pb.get("n_failures"))
    dims = sorted(by_dim, key=str)
    if dims:
        rows = [[d, str(n_failures.get(d, "–")), _num(by_dim.get(d))]
                + ([_num(tb_dim.get(d))] if has_true else []) for d in dims]
        dim_table = _table(["dimension", "failures", "BAUC panel"]
                           + (["BAUC true"] if has_true else []), rows)
    else:
        dim_table = ""
    recall = _d(panel.get("recall_at"))
    rows = []
    for key, value in recall.items():
        thr = _d(_d(panel.get("thresholds")).get(key))
        rows.append([_budget(key), _num(value)]
                    + ([_num(_d(true.get("recall_at")).get(key))] if has_true else [])
                    + [_num(thr.get("tau"))])
    recall_table = _table(["audit budget", "recall panel"] + (["recall true"] if has_true else [])
                          + ["threshold"], rows) if rows else ""
    out.append(f'<div class="two"><div><h3>Per dimension</h3>{dim_table}</div>'
               f"<div><h3>Recall at audit budgets</h3>{recall_table}"
               "<p class='note'>–: not estimable on this split.</p></div></div>")
    oracle = _d(fj.get("oracle"))
    cap = oracle.get("rho_cap")
    out.append(
        "<p>Oracle: " + _e(f"{oracle.get('calls', 0)} calls ({oracle.get('fresh_calls')} fresh), "
                           f"{_num(oracle.get('rho', 0.0))} per benign run")
        + (_e(f" (cap {_num(cap, spec='g')})") if cap is not None else "")
        + _e(f", at most {oracle.get('max_per_trajectory', 0)} on one run, "
             f"${_num(oracle.get('cost_usd') or 0.0)}") + "</p>"
    )
    return "".join(out)


def _selected_section(lineage: Lineage, selected: SelectedStrategy | None) -> str:
    if selected is None:
        best = lineage.best()
        if best is None:
            return "<p class='note'>No program was selected and none scored.</p>"
        note = ("<p class='note'>No strategy is selected yet (the run has not finished); "
                f"showing the best candidate so far, {_e(best.id)}.</p>")
        record, fj, low, source = best, best.fitness_json or {}, None, best.source or ""
    else:
        record = lineage.by_id.get(selected.id)
        rule = _d(selected.selection).get("rule", "the bootstrap lower bound")
        note = (f"<p>{_e(selected.id)}, sha256 <code>{_e(selected.strategy_hash)}</code>, chosen by "
                f"{_e(rule)}.</p>")
        fj, low, source = selected.fitness_json, selected.fitness_low, selected.source
    parts = [note, _metrics_html(fj, low)]
    if record is not None:
        parts.append(f"<p>Proposed by {_e(record.proposer)} ({_e(record.operator)}): "
                     f"{_e(record.description)}</p>")
    parts.append("<h3>Source</h3>" + _highlight(source, "python"))
    if record is not None and record.diff:
        parent = f" to its parent {_e(record.parent_ids[0])}" if record.parent_ids else ""
        parts.append(f"<details><summary>Diff{parent}</summary>"
                     + _highlight(record.diff, "diff") + "</details>")
    return "".join(parts)


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
    png = base64.b64encode(fitness_plot_png(lineage, selected_id)).decode("ascii")
    body = [
        f"<h1>monsearch run {_e(run.id)}</h1>",
        f"<div class='sub'>{len(lineage.records)} candidates evaluated on val · {_e(status)}</div>",
        _cards(lineage, config, selected, status, reason, spend),
        "<h2>Fitness over evaluations</h2>",
        f'<div class="figure"><img alt="fitness over evaluations" src="data:image/png;base64,{png}"></div>',
        "<p class='note'>Each point is one candidate's val budget-AUC, in the order it was "
        "evaluated, coloured by the operator that proposed it; the line is the best so far.</p>",
        "<h2>Lineage</h2>",
        _tree_legend(lineage),
        f'<div class="figure tree">{lineage_svg(lineage, selected_id, best.id if best else None)}</div>',
        "<p class='note'>Depth (first-parent generations) runs left to right; hover over a node "
        "for its id, fitness and operator.</p>",
        "<h3>From a seed to the " + ("selected program" if selected else "best candidate") + "</h3>",
        _path_table(lineage, focus),
        "<h3>Operators</h3>",
        _operator_table(lineage),
        "<h2>Selected program</h2>",
        _selected_section(lineage, selected),
        "<h2>Configuration</h2>",
        "<details><summary>config.json</summary><pre>"
        + _e(json.dumps(config, indent=2, sort_keys=True)) + "</pre></details>",
        "<h3>Spend</h3>",
        _spend_table(spend),
    ]
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>monsearch run {_e(run.id)}</title><style>{_CSS}</style></head>"
        f"<body><main>{''.join(body)}</main></body></html>\n"
    )


def _spend_table(spend: dict[str, Any]) -> str:
    rows = [
        [kind, str(v.get("calls", 0)), str(v.get("prompt_tokens", 0)),
         str(v.get("completion_tokens", 0)), f"${_num(v.get('usd', 0.0))}"]
        for kind, v in sorted(spend.items()) if isinstance(v, dict)
    ]
    rows.append(["total", "", "", "", f"${_num(spend.get('usd', 0.0))}"])
    return _table(["kind", "calls", "prompt tokens", "completion tokens", "USD"], rows)
