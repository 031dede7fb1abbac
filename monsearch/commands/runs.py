"""Inspecting runs: ``monsearch runs``, ``lineage``, ``show``, ``report``.

Everything here reads a run without writing to it (the lineage store is opened
read-only, so a run still being written can be inspected while ``evolve`` goes
on); only ``report`` writes a file, the HTML page. Tables and trees go to stdout;
with ``--json`` stdout holds nothing but JSON.

Whatever comes from the run (ids, operator names, descriptions, model answers,
programs, error texts) is printed through :mod:`.printable`: no escape sequence
reaches the terminal and no text starts a line of its own (the continuation lines
of a multi-line value are indented under it).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from monsearch.commands import cells
from monsearch.commands.consoles import (
    Row,
    fitted_table,
    print_note,
    stderr_console,
    stdout_console,
)
from monsearch.commands.printable import one_line, text_block
from monsearch.errors import MonsearchError
from monsearch.files import atomic_write

#: What ``show RUN PROGRAM`` accepts besides a candidate id.
ALIASES = ("selected", "best")
#: Lines of a raw LLM answer or program output ``show`` prints (``--json`` has all).
PREVIEW_LINES = 30


def _runs_dir_option() -> Any:
    return click.option(
        "--runs-dir",
        type=click.Path(path_type=Path, file_okay=False),
        default=None,
        help="Where runs live. [default: $MONSEARCH_RUNS or ./runs]",
    )


def _json_option(what: str) -> Any:
    return click.option("--json", "as_json", is_flag=True, help=f"Print {what} as JSON on stdout.")


def _num(x: Any, digits: int = 4) -> str:
    if x is None:
        return "-"
    if isinstance(x, int | float) and not isinstance(x, bool):
        return f"{x:.{digits}f}"
    return one_line(x)  # an edited file's value that is not a number, shown as it is


def _pct_key(key: Any) -> str:
    """A recall table's budget key (``"0.05"``) as a percentage."""
    try:
        return f"{100 * float(key):g}%"
    except (TypeError, ValueError):
        return one_line(key)


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2))


# --------------------------------------------------------------------------- loading


class _Loaded:
    """A run opened for reading: its config, selected strategy and every candidate."""

    def __init__(self, ref: str, runs_dir: Path | None) -> None:
        from monsearch.search.runs import resolve_run
        from monsearch.search.tree import Lineage

        self.run = resolve_run(ref, runs_dir)
        self.name = one_line(self.run.id)  # the folder's name, as printed
        self.config = self.run.config()
        self.selected = self.run.selected()
        if not self.run.lineage_path.is_file():
            raise MonsearchError(
                f"run {self.name} has no lineage store yet (it has not recorded a candidate)"
            )
        try:
            with self.run.store(readonly=True) as store:
                self.lineage = Lineage(store.records())
                self.status = recorded_status(store.get_meta("status"), len(self.lineage.records))
                self.reason = store.get_meta("reason") or ""
                self.spend = store.ledger_totals()
        except (sqlite3.Error, ValueError) as exc:  # a damaged file, a row that is not JSON
            raise MonsearchError(
                f"run {self.name}: unreadable lineage store ({one_line(exc)})"
            ) from None
        self.best = self.lineage.best()

    def candidate(self, ref: str) -> Any:
        """A candidate by id, or ``selected`` / ``best``."""
        if ref == "selected":
            if self.selected is None:
                raise MonsearchError(f"run {self.name} has no selected strategy (yet)")
            ref = self.selected.id
        elif ref == "best":
            if self.best is None:
                raise MonsearchError(f"run {self.name} has no candidate that scored")
            ref = self.best.id
        record = self.lineage.by_id.get(ref)
        if record is None:
            n = len(self.lineage.records)
            example = one_line(self.lineage.records[-1].id) if n else "c00000"
            raise MonsearchError(
                f"run {self.name} has no candidate {ref!r} ({n} candidates, ids like "
                f"{example}; `monsearch lineage {self.name} --all` lists them)"
            )
        return record

    def tags(self, cid: str) -> list[str]:
        tags = []
        if self.selected is not None and cid == self.selected.id:
            tags.append("selected")
        if self.best is not None and cid == self.best.id:
            tags.append("best")
        return tags


# --------------------------------------------------------------------------- runs


def recorded_status(status: str | None, candidates: int) -> str:
    """A run's status as its lineage store records it. None yet: a run that has recorded
    no candidate is still starting (loading its corpus, building views, starting the
    sandbox); one with candidates but no status was written by an older monsearch."""
    if status:
        return status
    return "starting" if candidates == 0 else "unknown"


def _run_summary(run: Any) -> dict[str, Any]:
    """One row of ``monsearch runs``; a run that cannot be read says so instead of failing."""
    from monsearch.search.tree import Lineage

    out: dict[str, Any] = {"id": run.id, "dir": str(run.dir)}
    try:
        config = run.config()
    except MonsearchError as exc:
        return {**out, "status": "unreadable", "reason": str(exc)}
    corpus = config.get("corpus") or {}
    out.update(
        created=config.get("created"),
        corpus={"name": corpus.get("name"), "content_hash": corpus.get("content_hash")},
        budget=config.get("budget"),
        seed=config.get("seed"),
        evaluated=0,
        best=None,
        selected=None,
        status="starting",
        reason="",
        spend_usd=0.0,
    )
    try:
        selected = run.selected()
    except MonsearchError as exc:
        return {**out, "status": "unreadable", "reason": str(exc)}
    if selected is not None:
        out["selected"] = {
            "id": selected.id,
            "fitness": selected.fitness,
            "fitness_low": selected.fitness_low,
        }
    if not run.lineage_path.is_file():
        return out
    try:
        with run.store(readonly=True) as store:
            lineage = Lineage(store.records())
            out["status"] = recorded_status(store.get_meta("status"), len(lineage.records))
            out["reason"] = store.get_meta("reason") or ""
            out["spend_usd"] = store.ledger_totals()["usd"]
    except (MonsearchError, sqlite3.Error, ValueError) as exc:  # one damaged run must not hide the others
        return {**out, "status": "unreadable", "reason": str(exc)}
    out["evaluated"] = len(lineage.records)
    best = lineage.best()
    if best is not None:
        out["best"] = {"id": best.id, "fitness": best.fitness}
    return out


def _date(created: str | None) -> str:
    # ISO 8601 in UTC as written by the driver; the minute is enough in a table (--json
    # has the full timestamp). A narrow table wraps it at the space: day over time.
    return "-" if not created else created.replace("T", " ")[:16]


RUNS_NOTE = (
    "evals: candidates evaluated on val / the budget; best: highest val budget-AUC; "
    "selected: the frozen strategy's val budget-AUC (chosen by the bootstrap lower bound, "
    "so not always the best); status as the run recorded it (a killed run still says running)."
)


@click.command("runs")
@_runs_dir_option()
@_json_option("the runs")
def runs_cmd(runs_dir: Path | None, as_json: bool) -> None:
    """List the runs: date, corpus, budget used, best and selected fitness, status."""
    from monsearch.search.runs import list_runs, runs_root

    summaries = [_run_summary(run) for run in list_runs(runs_dir)]
    if as_json:
        _echo_json(summaries)
        return
    root = runs_root(runs_dir)
    if not summaries:
        stderr_console().print(
            Text(f"no runs in {one_line(root)}/ (start one with: monsearch evolve)",
                 style="yellow")
        )
        return
    console = stdout_console()
    rows: list[Row] = []
    for s in summaries:
        corpus = s.get("corpus") or {}
        corpus_cell = " ".join(
            one_line(p) for p in (corpus.get("name"), str(corpus.get("content_hash") or "")[:8])
            if p
        )
        best, sel = s.get("best"), s.get("selected")
        style = {"finished": None, "running": "cyan", "interrupted": "yellow"}.get(
            s["status"], "red" if s["status"] in ("failed", "unreadable") else "yellow"
        )
        rows.append(
            (
                [
                    one_line(s["id"]),
                    corpus_cell or "-",
                    one_line(_date(s.get("created"))),
                    one_line(f"{s.get('evaluated', 0)}/{s.get('budget') or '?'}"),
                    _num(best and best["fitness"]),
                    _num(sel and sel["fitness"]),
                    one_line(s["status"]),
                ],
                style,
            )
        )
    headers = ["run", "corpus", "created (UTC)", "evals", "best", "selected", "status"]
    kinds = [cells.ID, cells.NAME] + [cells.NUMBER] * 4 + [cells.STATUS]
    console.print(fitted_table(console, f"runs in {one_line(root)}/", headers, rows, kinds=kinds))
    print_note(console, RUNS_NOTE)


# --------------------------------------------------------------------------- lineage


def _node_json(loaded: _Loaded, record: Any, hidden: int) -> dict[str, Any]:
    return {
        "id": record.id,
        "seq": record.seq,
        "parent_ids": list(record.parent_ids),
        "generation": record.generation,
        "island": record.island,
        "proposer": record.proposer,
        "operator": record.operator,
        "description": record.description,
        "fitness": record.fitness,
        "status": record.status,
        "tags": loaded.tags(record.id),
        "hidden_children": hidden,
    }


def _node_label(loaded: _Loaded, item: Any, verbose: bool, far: bool) -> Text:
    r = loaded.lineage.by_id[item.id]
    text = Text()
    if item.continuation:
        text.append("↳ ", style="dim")
    text.append(one_line(r.id), style="bold")
    if far:
        # Its parent's line is some way up (its other children came in between).
        text.append(f" (child of {one_line(r.parent_ids[0])})", style="dim")
    text.append("  ")
    if r.ok:
        text.append(f"{r.fitness:.4f}", style="green" if "selected" in loaded.tags(r.id) else "")
    else:
        text.append(one_line(r.status), style="red")
    text.append(f"  {one_line(r.operator)}", style="cyan")
    text.append(f"  gen {r.generation}", style="dim")
    others = [one_line(p) for p in r.parent_ids[1:]]
    if others:
        text.append(f"  × {', '.join(others)}", style="magenta")
    for tag in loaded.tags(r.id):
        text.append(f"  [{tag}]", style="bold green" if tag == "selected" else "bold yellow")
    if verbose and r.description and r.description != r.operator:
        desc = one_line(r.description)
        desc = desc if len(desc) <= 70 else desc[:69] + "…"
        text.append(f"  {desc}", style="dim")
    return text


def _hidden_label(loaded: _Loaded, hidden: list[str]) -> Text:
    recs = [loaded.lineage.by_id[h] for h in hidden]
    ok = [r for r in recs if r.ok]
    text = Text(f"+{len(recs)} more child{'ren' if len(recs) > 1 else ''}", style="dim")
    if ok:
        best = max(ok, key=lambda r: (r.fitness, -r.seq))
        text.append(f" (best {best.fitness:.4f}, {one_line(best.id)})", style="dim")
    return text


def _add_items(loaded: _Loaded, parent: Any, items: list[Any], verbose: bool) -> None:
    # Each item goes into the container of the chain it belongs to: continuations stay at
    # the level of the item above them, which is what keeps deep runs narrow.
    above = None
    for item in items:
        far = item.continuation and above is not None and bool(above.nested)
        node = parent.add(_node_label(loaded, item, verbose, far))
        above = item
        _add_items(loaded, node, item.nested, verbose)
        if item.hidden:
            node.add(_hidden_label(loaded, item.hidden))


def _lineage_note(loaded: _Loaded, items: list[Any], shown: set[str]) -> str:
    """The sentence under the tree: only the marks that appear in it."""

    def walk(its: list[Any]) -> Any:
        for it in its:
            yield it
            yield from walk(it.nested)

    flat = list(walk(items))
    parts = ["Each line: id, val budget-AUC (or the status of a candidate that did not score), "
             "operator, generation."]
    if any(it.continuation for it in flat):
        parts.append("↳ marks the child of the line just above it at the same level (the line "
                     "of descent continues there, to keep deep runs narrow); any other line is a "
                     "child of the line it hangs from.")
    if any(len(loaded.lineage.by_id[i].parent_ids) > 1 for i in shown):
        parts.append("× names further parents (crossover).")
    if any(it.hidden for it in flat):
        parts.append("+N: children that do not lead to the focus (--all shows them).")
    return " ".join(parts)


@click.command("lineage")
@click.argument("run_ref", metavar="RUN")
@click.option("--program", "program", default=None, metavar="ID",
              help="Focus on this candidate's ancestry and children (or 'selected' / 'best').")
@click.option("--all", "show_all", is_flag=True, help="Show every candidate of the run.")
@_runs_dir_option()
@_json_option("the nodes")
def lineage_cmd(
    run_ref: str, program: str | None, show_all: bool, runs_dir: Path | None, as_json: bool
) -> None:
    """The ancestry tree of a run, with fitness and operator per candidate.

    RUN is a run id or a run folder. By default the tree shows what leads to the
    selected and the best candidates (their ancestors and children); --program
    focuses on one candidate; --all shows every candidate.
    """
    from monsearch.search.tree import focus_ids, layout

    loaded = _Loaded(run_ref, runs_dir)
    lineage = loaded.lineage
    if program is not None:
        targets = [loaded.candidate(program).id]
        view = "program"
    else:
        targets = [
            t
            for t in dict.fromkeys(
                [loaded.selected.id if loaded.selected else None,
                 loaded.best.id if loaded.best else None]
            )
            if t is not None and t in lineage.by_id
        ]
        view = "focus"
    if show_all or not targets:
        shown = set(lineage.by_id)
        view = "all"
    else:
        shown = focus_ids(lineage, targets)
    items = layout(lineage, shown, targets)

    if as_json:
        hidden = {r.id: sum(1 for k in lineage.children[r.id] if k not in shown)
                  for r in lineage.records}
        _echo_json(
            {
                "run_id": loaded.run.id,
                "view": view,
                "targets": targets,
                "selected": loaded.selected.id if loaded.selected else None,
                "best": loaded.best.id if loaded.best else None,
                "total": len(lineage.records),
                "shown": len(shown),
                "nodes": [
                    _node_json(loaded, r, hidden[r.id]) for r in lineage.records if r.id in shown
                ],
            }
        )
        return

    from rich.tree import Tree

    console = stdout_console()
    title = Text(f"run {loaded.name}", style="bold")
    title.append(f" · {len(lineage.records)} candidates · {one_line(loaded.status)}", style="")
    for name, rec in (("selected", loaded.selected), ("best", loaded.best)):
        if rec is not None:
            title.append(f" · {name} {one_line(rec.id)} ({_num(rec.fitness)})")
    if view != "all":
        title.append(f" · showing {len(shown)}", style="dim")
    # The title as a hanging line too: the run's name and status are the run's text.
    grid = Table.grid()
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row(title[:4], title[4:])
    tree = Tree(grid, guide_style="dim")
    _add_items(loaded, tree, items, verbose=view != "all")
    console.print(tree)
    print_note(console, _lineage_note(loaded, items, shown))


# --------------------------------------------------------------------------- show


def _hang(console: Console, head: Text, rest: Text) -> None:
    """``head`` then ``rest`` on one line; when ``rest`` has several lines or wraps, its
    lines go under its start (a hanging indent), so no text from the run begins a line of
    the output, where it could pass for one of ours."""
    if "\n" not in rest.plain and head.cell_len + rest.cell_len <= console.width:
        console.print(Text.assemble(head, rest))
        return
    grid = Table.grid()
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row(head, rest)
    console.print(grid)


def _indented(console: Console, text: Text, by: int = 2) -> None:
    """``text`` (one line from the run) indented, wrapped lines included."""
    _hang(console, Text(" " * by), text)


def _kv(console: Console, key: str, value: Any, style: str | None = None) -> None:
    """``key  value``; a multi-line or wrapped value hangs under its first line."""
    value_text = Text(text_block(value).expandtabs(4), style=style or "")
    _hang(console, Text(f"{one_line(key):<13}", style="dim"), value_text)


def _section(console: Console, title: str) -> None:
    console.print()
    console.print(Text(title, style="bold underline"))


def _metrics_tables(console: Console, fj: dict[str, Any]) -> None:
    panel = fj.get("metrics") or {}
    true = fj.get("metrics_true") or {}
    pb, tb = panel.get("bauc") or {}, true.get("bauc") or {}
    has_true = bool(true)
    _kv(console, "fitness", f"{_num(fj.get('fitness', 0.0))}  ({fj.get('status')}"
        + (f": {fj['reason']}" if fj.get("reason") else "") + ")")
    if fj.get("fitness_low") is not None:
        _kv(console, "bootstrap 5%", _num(fj["fitness_low"]))
    if not panel:
        return
    rng = f"[{_num(pb.get('b_lo', 0), 3)}, {_num(pb.get('b_hi', 0), 3)}]"
    if panel.get("range_raised"):
        rng += (f" (raised from [{panel.get('b_lo_requested')}, "
                f"{panel.get('b_hi_requested')}]: too few benign runs)")
    _kv(console, "budget range", rng)
    _kv(console, "trajectories", f"{panel.get('n')} ({panel.get('n_benign')} benign, "
        f"{panel.get('n_failures')} failures; panel labels)")
    headers = ["", "panel labels"] + (["true labels"] if has_true else [])
    rows: list[Row] = []

    def row(name: str, a: Any, b: Any) -> None:
        rows.append(([name, _num(a)] + ([_num(b)] if has_true else []), None))

    row("BAUC aggregate", pb.get("aggregate"), tb.get("aggregate"))
    row(f"BAUC worst ({one_line(pb.get('worst_dimension') or '-')})", pb.get("worst"),
        tb.get("worst"))
    row("BAUC pooled", panel.get("bauc_pooled"), true.get("bauc_pooled"))
    row("BAUC of chance", panel.get("chance_bauc"), true.get("chance_bauc"))
    row("AUROC", panel.get("auroc"), true.get("auroc"))
    row(f"pAUC (FPR ≤ {one_line(panel.get('pauc_max_fpr'))})", panel.get("pauc"), true.get("pauc"))
    console.print()
    console.print(fitted_table(console, "metrics on val", headers, rows))

    dims = sorted(set(pb.get("by_dimension") or {}) | set(pb.get("n_failures") or {}))
    if dims:
        rows = []
        for d in dims:
            cells = [one_line(d), one_line((pb.get("n_failures") or {}).get(d, "-")),
                     _num((pb.get("by_dimension") or {}).get(d))]
            if has_true:
                cells.append(_num((tb.get("by_dimension") or {}).get(d)))
            rows.append((cells, "yellow" if d == pb.get("worst_dimension") else None))
        headers = ["dimension", "failures", "BAUC panel"] + (["BAUC true"] if has_true else [])
        console.print()
        console.print(fitted_table(console, "budget-AUC per dimension", headers, rows))

    recall = panel.get("recall_at") or {}
    if recall:
        rows = []
        for key, value in recall.items():
            thr = (panel.get("thresholds") or {}).get(key) or {}
            cells = [_pct_key(key), _num(value)]
            if has_true:
                cells.append(_num((true.get("recall_at") or {}).get(key)))
            cells.append(_num(thr.get("tau")))
            rows.append((cells, "dim" if value is None else None))
        headers = ["budget", "recall panel"] + (["recall true"] if has_true else []) + ["threshold"]
        console.print()
        console.print(fitted_table(console, "recall at audit budgets", headers, rows))
        if panel.get("not_estimable"):
            print_note(console, "-: not estimable (too few benign runs for that budget).")

    oracle = fj.get("oracle") or {}
    cap = oracle.get("rho_cap")
    _kv(console, "oracle", f"{oracle.get('calls', 0)} calls ({oracle.get('fresh_calls')} fresh), "
        f"{_num(oracle.get('rho', 0.0))} per benign run"
        + (f" (cap {cap:g})" if isinstance(cap, int | float) else "")
        + f", at most {oracle.get('max_per_trajectory', 0)} on one run, "
        f"${_num(oracle.get('cost_usd') or 0.0)}")


def _preview(console: Console, text: str, label: str) -> None:
    lines = text.splitlines()
    console.print(Text(f"{label}:", style="dim"))
    for line in lines[:PREVIEW_LINES]:
        _indented(console, Text(one_line(line.expandtabs(4))))
    if len(lines) > PREVIEW_LINES:
        console.print(Text(f"  … {len(lines) - PREVIEW_LINES} more lines (--json has all)",
                           style="dim"))


def _artifacts(console: Console, artifacts: dict[str, Any]) -> None:
    if not artifacts:
        console.print(Text("none", style="dim"))
        return
    if artifacts.get("proposal_error"):
        _kv(console, "proposal", str(artifacts["proposal_error"]), "red")
    if artifacts.get("duplicate_of"):
        _kv(console, "duplicate of", str(artifacts["duplicate_of"]))
    if artifacts.get("model"):
        _kv(console, "model", str(artifacts["model"]))
    tune = artifacts.get("optuna")
    if tune:
        _kv(console, "optuna", f"{tune.get('trials')} trials on train: "
            f"{_num(tune.get('train_before'))} → {_num(tune.get('train_after'))}, changed "
            + (", ".join(map(str, tune.get("changed") or [])) or "nothing"))
    sandbox = artifacts.get("sandbox")
    if sandbox:
        _kv(console, "sandbox", f"{sandbox.get('status')}: {sandbox.get('n')} runs scored, "
            f"{sandbox.get('n_errors', 0)} errors, {sandbox.get('n_timeouts', 0)} timeouts"
            + (f" — {sandbox['message']}" if sandbox.get("message") else ""),
            None if sandbox.get("status") == "ok" else "red")
        oracle = sandbox.get("oracle") or {}
        if oracle.get("judge_errors") or oracle.get("refused"):
            _kv(console, "oracle use", f"{oracle.get('calls')} calls, {oracle.get('refused')} "
                f"refused, {oracle.get('judge_errors')} judge errors"
                + (f" ({oracle['judge_error']})" if oracle.get("judge_error") else ""))
        for err in (sandbox.get("errors") or [])[:10]:
            where = err.get("trajectory_id") or err.get("where") or ""
            msg = err.get("error") or err.get("message") or json.dumps(err)
            where, msg = one_line(where), one_line(msg)
            _indented(console, Text(f"{where}: {msg}" if where else msg, style="red"))
        extra = len(sandbox.get("errors") or []) - 10
        if extra > 0:
            console.print(Text(f"  … {extra} more errors (--json has all)", style="dim"))
        if sandbox.get("output"):
            _preview(console, sandbox["output"], "program output")
    if artifacts.get("raw_response"):
        _preview(console, artifacts["raw_response"], "raw model answer")
    known = {"proposal_error", "duplicate_of", "model", "optuna", "sandbox", "raw_response"}
    for key in sorted(set(artifacts) - known):
        _kv(console, key, json.dumps(artifacts[key])[:200])  # JSON: control characters escaped


@click.command("show")
@click.argument("run_ref", metavar="RUN")
@click.argument("program", metavar="PROGRAM")
@_runs_dir_option()
@_json_option("the candidate (source, diff, metrics, artefacts)")
def show_cmd(run_ref: str, program: str, runs_dir: Path | None, as_json: bool) -> None:
    """One candidate of a run: source, diff to its parent, metrics, artefacts, timings.

    RUN is a run id or a run folder; PROGRAM a candidate id (see monsearch
    lineage), or 'selected' or 'best'.
    """
    loaded = _Loaded(run_ref, runs_dir)
    r = loaded.candidate(program)
    children = loaded.lineage.children.get(r.id, [])
    if as_json:
        data = r.to_dict()
        data["run_id"] = loaded.run.id
        data["tags"] = loaded.tags(r.id)
        data["children"] = children
        if loaded.selected is not None and loaded.selected.id == r.id:
            data["fitness_low"] = loaded.selected.fitness_low
        _echo_json(data)
        return

    from rich.padding import Padding
    from rich.syntax import Syntax

    console = stdout_console()
    head = Text(one_line(r.id), style="bold")
    head.append(f" of run {loaded.name}")
    for tag in loaded.tags(r.id):
        head.append(f"  [{tag}]", style="bold green")
    _hang(console, Text("candidate ", style="bold"), head)
    _kv(console, "status", r.status + (f" (sandbox {r.sandbox_status})"
                                       if r.sandbox_status and r.sandbox_status != r.status else ""),
        None if r.ok else "red")
    if r.ok:
        fj = r.fitness_json or {}
        view = fj.get("view") or "plain"
        plain = ((fj.get("metrics_plain") or {}).get("bauc") or {}).get("aggregate")
        beside = f"; plain (the corpus's own rates) {plain:.4f}" if view != "plain" and plain else ""
        _kv(console, "fitness", f"{r.fitness:.4f} val budget-AUC, {view}{beside}")
    else:
        dup = r.artifacts.get("duplicate_of")
        why = ((r.fitness_json or {}).get("reason") or r.artifacts.get("proposal_error")
               or (f"a duplicate of {dup}" if dup else None))
        _kv(console, "fitness", f"- (did not score: {why})" if why else "- (did not score)",
            "red")
    _kv(console, "proposed by", f"{r.proposer}, operator {r.operator}")
    if r.description:
        _kv(console, "description", r.description)
    parents = [
        f"{one_line(p)} ({loaded.lineage.by_id[p].fitness:.4f})" if p in loaded.lineage.by_id
        else one_line(p)
        for p in r.parent_ids
    ]
    _kv(console, "parents", ", ".join(parents) or "none (seed)")
    _kv(console, "children", ", ".join(map(one_line, children)) or "none")
    _kv(console, "position", f"seq {r.seq}, generation {r.generation}, island {r.island}")
    if r.source_hash:
        _kv(console, "sha256", r.source_hash)

    _section(console, "source")
    if r.source is None:
        console.print(Text("no program (the proposal failed; see artefacts)", style="dim"))
    else:
        console.print(Syntax(text_block(r.source), "python", line_numbers=True,
                             theme="ansi_dark", background_color="default", word_wrap=True))
    _section(console, f"diff to parent {one_line(r.parent_ids[0])}" if r.parent_ids else "diff")
    if r.diff:
        # Indented: the diff's lines are the run's text, not headings of ours.
        console.print(Padding(Syntax(text_block(r.diff), "diff", theme="ansi_dark",
                                     background_color="default", word_wrap=True), (0, 0, 0, 2)))
    elif r.source is None:
        console.print(Text("none (no program)", style="dim"))
    else:
        console.print(Text("none (a seed)" if not r.parent_ids
                           else "none (same source as the parent)", style="dim"))
    _section(console, "metrics (val)")
    if r.fitness_json:
        fj = dict(r.fitness_json)
        if loaded.selected is not None and loaded.selected.id == r.id:
            fj["fitness_low"] = loaded.selected.fitness_low
        _metrics_tables(console, fj)
    else:
        console.print(Text("not evaluated", style="dim"))
    _section(console, "artefacts")
    _artifacts(console, r.artifacts)
    _section(console, "timings and spend")
    _kv(console, "timings", ", ".join(f"{k} {v:.3f}" for k, v in sorted(r.timings.items()))
        or "-")
    _kv(console, "spend", ", ".join(f"{k} {v:g}" if isinstance(v, int | float) else f"{k} {v}"
                                    for k, v in sorted(r.spend.items())) or "-")


# --------------------------------------------------------------------------- report


@click.command("report")
@click.argument("run_ref", metavar="RUN")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="HTML file to write. [default: runs/<id>/report.html]")
@_runs_dir_option()
@_json_option("where the report went")
def report_cmd(run_ref: str, out: Path | None, runs_dir: Path | None, as_json: bool) -> None:
    """Write a self-contained HTML page about a run.

    The page holds the lineage tree, fitness over evaluations, the selected
    program with its metrics and source, the run's configuration and spend. It
    loads nothing from the network: open it anywhere.
    """
    from monsearch.commands.paths import ensure_writable_file
    from monsearch.search.report import build_report

    loaded = _Loaded(run_ref, runs_dir)
    target = out if out is not None else loaded.run.dir / "report.html"
    ensure_writable_file(target, "report file")  # before the page is built, not after
    html = build_report(
        loaded.run,
        loaded.lineage,
        config=loaded.config,
        selected=loaded.selected,
        status=loaded.status,
        reason=loaded.reason,
        spend=loaded.spend,
    )
    try:
        atomic_write(target, html)
    except OSError as exc:
        raise MonsearchError(f"cannot write the report to {target}: {exc.strerror or exc}") from None
    if as_json:
        _echo_json({"run_id": loaded.run.id, "report": str(target), "bytes": len(html.encode())})
    else:
        click.echo(f"wrote {one_line(target)}")
