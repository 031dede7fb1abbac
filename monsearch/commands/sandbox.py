"""``monsearch sandbox ...``: run, check and inspect monitor programs in the sandbox.

The sandbox never sees labels. ``run`` reads labels only here, at the top, to
print how the scores rank failures against passes (AUROC, recall at a few
benign flag rates); the proper metric (budget-AUC) belongs to the evaluation layer.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import click
import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from monsearch.commands import cells
from monsearch.commands.consoles import fitted_table, stderr_console, stdout_console
from monsearch.commands.options import corpus_option, find_trajectory, splits_option
from monsearch.errors import MonsearchError


def _read_program(path: Path | None) -> tuple[str, str]:
    if path is None:
        from monsearch.sandbox.examples.seed_monitor import SEED_MONITOR

        return SEED_MONITOR, "built-in seed monitor"
    try:
        return path.read_text(encoding="utf-8"), str(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise MonsearchError(f"{path}: cannot read the program: {exc}") from exc


def _load_split(corpus_dir: Path | None, split: str, startup: StartUp) -> tuple[Any, list[Any]]:
    from monsearch.commands.synth import resolve_corpus
    from monsearch.corpora.store import load_corpus

    _check_split(split)
    # Builds the default corpus on first use, with its own progress display.
    startup.stop()
    path = resolve_corpus(corpus_dir)
    startup.stage(f"loading corpus {path} (split {split})...")
    corp = load_corpus(path, [split])
    return corp, corp.split(split)


def _quality(trajs: list[Any], scores: np.ndarray) -> dict[str, Any]:
    """The evaluation layer's metrics on panel labels and, where known, on true labels.

    Budget-AUC per failure dimension (thresholds set once on the pooled benign runs),
    recall at 1/2/5/10 % of benign runs flagged, AUROC and McClish pAUC: all from
    :mod:`monsearch.eval`, the one home of every metric. Guard notes (a budget range
    raised because the split has few benign runs) are reported, not printed as
    Python warnings.
    """
    from monsearch.eval import compute_metrics

    panel_labels = [t.label for t in trajs]  # aggregated once: a panel vote per run
    labelled = [i for i, label in enumerate(panel_labels) if label is not None]
    if not labelled:
        return {}
    idx = np.asarray(labelled)
    s = scores[idx]
    dims = np.asarray([trajs[i].dimension.value for i in labelled])
    every_dim = sorted({t.dimension.value for t in trajs})
    label_sets = {"panel": [panel_labels[i].is_failure for i in labelled]}
    truth = [trajs[i].true_failure for i in labelled]
    if all(v is not None for v in truth):
        label_sets["true"] = truth
    out: dict[str, Any] = {"n_labelled": int(idx.size), "notes": []}
    for name, labels in label_sets.items():
        y = np.asarray(labels, dtype=bool)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            metrics = compute_metrics(s, y, dims, all_dimensions=every_dim)
        out[name] = metrics.to_dict()
        for w in caught:
            note = f"{name} labels: {w.message}"
            if note not in out["notes"]:
                out["notes"].append(note)
    return out


@click.group()
def sandbox() -> None:
    """Run monitor programs in the sandbox, check them, see what they see."""


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity, e.g. under ``taskset``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


class StartUp:
    """Start-up stages on stderr: a live line with counts on a terminal, a line per stage
    in a log. Never on stdout, which holds only the result."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live = console.is_terminal
        self._status: Any = None
        self._seen: set[str] = set()
        self._text = ""

    def stage(self, text: str) -> None:
        self._text = text
        self._show(text)

    def _show(self, text: str) -> None:
        if not self.live:
            click.echo(text, err=True)
        elif self._status is None:
            self._status = self.console.status(text)
            self._status.start()
        else:
            self._status.update(text)

    def progress(self, stage: str, done: int, total: int) -> None:
        """``SandboxPool``'s start-up callback: ``building views``, ``starting workers``."""
        if self.live:
            # A finished sub-stage gives the line back to the stage it belongs to.
            self._show(f"{stage} {done}/{total}" if done < total else self._text)
        elif stage not in self._seen:
            self._seen.add(stage)
            if stage == "building views":
                click.echo(
                    f"building views of {total} trajectories (once; cached for later runs)",
                    err=True,
                )
            elif stage != "starting workers":  # announced by the caller already
                click.echo(f"{stage} ({total})", err=True)

    def stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


def _refuse_program(origin: str, checked: Any, as_json: bool) -> None:
    """Report a program that fails ``sandbox check`` (nothing was scored) and exit 1."""
    errors = [
        {"kind": "compile", "line": e.line, "column": e.col, "message": e.message}
        for e in checked.errors
    ]
    message = "the program does not pass sandbox check; nothing was scored"
    if as_json:
        report = {
            "program": origin,
            "corpus": None,
            "status": "error",
            "message": f"{message}: {checked.message}",
            "n_trajectories": 0,
            "n_errors": 0,
            "errors": errors,
            "judge_errors": 0,
            "judge_error": None,
        }
        click.echo(json.dumps(report, indent=2))
    else:
        for e in errors:
            where = f"{e['line']}:{e['column'] or 1}" if e["line"] is not None else "-"
            click.echo(f"{origin}:{where}: {e['message']}")
        click.echo(f"status error: {message}")
    raise SystemExit(1)


@sandbox.command("run")
@click.argument("program", required=False, type=click.Path(path_type=Path, dir_okay=False))
@corpus_option()
@click.option("--split", default="val", show_default=True, help="Split to score (train or val).")
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Worker processes. One program runs in one worker (a fresh child of it), so more "
    "workers only cost start-up here; the search uses them to score candidates in parallel.",
)
@click.option(
    "--wall-s", type=float, default=60.0, show_default=True, help="Wall-clock limit per candidate."
)
@click.option(
    "--cpu-s", type=float, default=30.0, show_default=True, help="CPU-time limit per candidate."
)
@click.option(
    "--memory-mb",
    type=int,
    default=1024,
    show_default=True,
    help="Address-space limit per candidate.",
)
@click.option(
    "--oracle",
    "oracle_backend",
    type=click.Choice(["replay", "llm", "none"]),
    default="replay",
    show_default=True,
    help="What oracle(traj) answers: the corpus's stored oracle verdicts (replay), a live "
    "OpenAI-compatible judge (llm), or nothing (none: always None).",
)
@click.option(
    "--judge-model",
    envvar="MONSEARCH_JUDGE_MODEL",
    help="llm oracle: judge model name [env MONSEARCH_JUDGE_MODEL].",
)
@click.option(
    "--judge-base-url",
    envvar="MONSEARCH_JUDGE_BASE_URL",
    help="llm oracle: OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1 "
    "[env MONSEARCH_JUDGE_BASE_URL]. The key comes from MONSEARCH_JUDGE_API_KEY or OPENAI_API_KEY. "
    "The endpoint is probed before any work; an unreachable one is an error (exit 2).",
)
@click.option(
    "--oracle-cache",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("runs/oracle-cache"),
    show_default=True,
    help="llm oracle: on-disk answer cache; re-running costs no judge calls.",
)
@click.option(
    "--rubrics",
    "rubric_dir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="llm oracle: folder of task rubrics (<task>/rubric.txt or <task>.txt), e.g. a "
    "StealthBench checkout's tasks/ [default: the rubrics monsearch ships].",
)
@click.option(
    "--cap",
    "per_traj_cap",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Per-trajectory oracle query cap Q; calls past it return None.",
)
@click.option(
    "--scores-out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write per-trajectory scores as JSON lines {id, score} (missing folders are created).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
def run_cmd(
    program: Path | None,
    corpus_dir: Path | None,
    split: str,
    workers: int,
    wall_s: float,
    cpu_s: float,
    memory_mb: int,
    oracle_backend: str,
    judge_model: str | None,
    judge_base_url: str | None,
    oracle_cache: Path,
    rubric_dir: Path | None,
    per_traj_cap: int,
    scores_out: Path | None,
    as_json: bool,
) -> None:
    """Score every trajectory of a split with PROGRAM (default: the seed monitor).

    The program is checked first (as `sandbox check` does); then it runs in
    RestrictedPython inside a fresh process per candidate, under CPU, memory and
    wall-clock limits, over read-only trajectory views. Start-up stages go to
    stderr; stdout holds only the result. Exit code 0 when the candidate's status
    is ok, 1 otherwise (a program that fails the check included), 2 for bad
    options, an unwritable output, or an llm judge that cannot be reached.
    """
    from monsearch.commands.paths import ensure_writable_dir, ensure_writable_file
    from monsearch.sandbox.check import check_program

    # Everything that can be refused is refused before any work.
    _check_split(split)
    if scores_out is not None:
        ensure_writable_file(scores_out, "scores file")
    if oracle_backend == "llm" and per_traj_cap > 0:
        ensure_writable_dir(oracle_cache, "oracle cache folder")
    cores = available_cores()
    if workers is not None and workers > cores:
        _warn(
            f"--workers {workers} is more than the {cores} core(s) this process may use; "
            "the workers compete for CPU, so scoring is slower and programs may hit their "
            "time limits"
        )
    n_workers = workers
    source, origin = _read_program(program)
    checked = check_program(source)
    if not checked.ok:
        _refuse_program(origin, checked, as_json)

    from monsearch.oracle.judge import LLMJudgeConfig
    from monsearch.oracle.session import OracleConfig, probe_oracle, replay_scores_from
    from monsearch.sandbox.evaluate import SandboxLimits, SandboxPool

    startup = StartUp(stderr_console())
    try:
        llm_oracle: OracleConfig | None = None
        if oracle_backend == "llm":
            judge = LLMJudgeConfig(model=judge_model, base_url=judge_base_url).resolved()
            llm_oracle = OracleConfig(
                backend="llm",
                per_traj_cap=per_traj_cap,
                llm=judge,
                cache_dir=oracle_cache,
                rubric_dir=rubric_dir,
            )
            if per_traj_cap > 0:
                startup.stage(f"checking the judge at {judge.base_url}")
                for warning in probe_oracle(llm_oracle):
                    _warn(warning)
        corp, trajs = _load_split(corpus_dir, split, startup)
        # A live judge call may take seconds: the per-trajectory budget would cut it off.
        per_traj_ms: float | None = 500.0
        if llm_oracle is not None:
            oracle = llm_oracle
            per_traj_ms = None
        elif oracle_backend == "replay":
            oracle = OracleConfig(
                backend="replay",
                per_traj_cap=per_traj_cap,
                replay_scores=replay_scores_from(trajs),
            )
        else:
            oracle = OracleConfig(backend="none", per_traj_cap=per_traj_cap)
        limits = SandboxLimits(
            wall_s=wall_s, cpu_s=cpu_s, memory_mb=memory_mb, per_traj_ms=per_traj_ms
        )
        plural = "worker" if n_workers == 1 else "workers"
        startup.stage(f"starting {n_workers} {plural} over {len(trajs)} trajectories")
        pool = SandboxPool(
            trajs,
            workers=n_workers,
            limits=limits,
            oracle=oracle,
            identity=_split_identity(corp, split),
            progress=startup.progress,
        )
        with pool:
            startup.stage(f"scoring {len(trajs)} trajectories")
            result = pool.evaluate(source)
    finally:
        startup.stop()
    report = _run_report(origin, corp, split, trajs, result)
    if result.ok and result.scores is not None and scores_out is not None:
        _write_scores(scores_out, trajs, np.asarray(result.scores, dtype=float))
    if as_json:
        click.echo(json.dumps(report, indent=2, default=str))
    else:
        _print_run(report)
    if not result.ok:
        raise SystemExit(1)


def _check_split(split: str) -> None:
    if split == "test" or split.startswith("xgen-"):
        raise MonsearchError(
            f"split {split!r} is sealed: it is evaluated once by the sealed-test step, "
            "not by ad-hoc runs (use train or val)"
        )


def _split_identity(corp: Any, split: str) -> str | None:
    """What the views cache knows the split by: the corpus and the split part's own hash."""
    part = corp.manifest.parts.get(split)
    if part is None:
        return None
    return f"corpus {corp.content_hash} split {split} part {part.sha256}"


def _write_scores(path: Path, trajs: list[Any], scores: np.ndarray) -> None:
    from monsearch.commands.paths import UnwritablePathError

    lines = (
        json.dumps({"id": t.id, "score": float(s)}) for t, s in zip(trajs, scores, strict=True)
    )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    except OSError as exc:
        reason = os.strerror(exc.errno).lower() if exc.errno else str(exc)
        raise UnwritablePathError("scores file", path, reason) from None


def _run_report(
    origin: str, corp: Any, split: str, trajs: list[Any], result: Any
) -> dict[str, Any]:
    oracle = result.oracle or {}
    report: dict[str, Any] = {
        "program": origin,
        "corpus": {"name": corp.name, "content_hash": corp.content_hash, "split": split},
        "status": result.status,
        "message": result.message,
        "n_trajectories": len(trajs),
        "n_errors": result.n_errors,
        "errors": result.errors,
        # The judge's failures, kept apart from the program's own errors above.
        "judge_errors": int(oracle.get("judge_errors") or 0),
        "judge_error": oracle.get("judge_error"),
        "judge_disabled": oracle.get("judge_disabled"),
        "wall_s": result.wall_s,
        "cpu_s": result.cpu_s,
        "oracle": oracle,
    }
    if result.ok and result.scores is not None:
        scores = np.asarray(result.scores, dtype=float)
        report["scorings_per_s"] = len(trajs) / result.wall_s if result.wall_s > 0 else None
        report["score_summary"] = {
            "min": float(scores.min()),
            "median": float(np.median(scores)),
            "max": float(scores.max()),
            "distinct": int(np.unique(scores).size),
        }
        report["quality"] = _quality(trajs, scores)
    return report


def _print_run(report: dict[str, Any]) -> None:
    out = stdout_console()
    corp = report["corpus"]
    out.print(
        f"[bold]{escape(report['program'])}[/] on {escape(corp['name'])} "
        f"({corp['content_hash'][:12]}) split {corp['split']}: "
        f"{report['n_trajectories']} trajectories"
    )
    colour = "green" if report["status"] == "ok" else "red"
    out.print(f"status [{colour}]{report['status']}[/]  {escape(report['message'] or '')}")
    out.print(
        f"wall {report['wall_s']:.3f} s, cpu {report['cpu_s']:.3f} s, "
        f"program errors {report['n_errors']}"
    )
    for err in report["errors"][:5]:
        out.print(
            f"  error on {err.get('trajectory_id')} line {err.get('line')}: "
            f"{escape(str(err.get('message')))}",
        )
    oracle = report.get("oracle") or {}
    if report["judge_errors"]:
        out.print(
            f"[red]judge failures {report['judge_errors']}[/] (the judge's, not the "
            f"program's); first: {escape(str(report['judge_error']))}"
        )
        if report.get("judge_disabled"):
            out.print(f"  {escape(str(report['judge_disabled']))}")
    if oracle.get("backend") == "none" or oracle.get("no_oracle"):
        asked = int(oracle.get("no_oracle_calls") or 0)
        out.print(f"oracle: none (no oracle; oracle(traj) answered None to {asked} call(s))")
    elif oracle:
        calls = sum((oracle.get("counts") or {}).values())
        refused = sum((oracle.get("refused") or {}).values())
        out.print(
            f"oracle ({oracle.get('backend')}, Q={oracle.get('per_traj_cap')}): {calls} calls, "
            f"{refused} refused past the cap, {oracle.get('fresh', 0)} fresh"
        )
    if "score_summary" not in report:
        return
    s = report["score_summary"]
    out.print(
        f"scores: min {s['min']:.4g}, median {s['median']:.4g}, max {s['max']:.4g}, "
        f"{s['distinct']} distinct; {report['scorings_per_s']:.0f} scorings/s"
    )
    q = report.get("quality") or {}
    if "panel" in q:
        out.print(_quality_table(q))
        for note in q.get("notes", []):
            out.print(f"note: {escape(note)}")
        out.print(
            "Budget-AUC: mean recall over audit budgets from "
            f"{q['panel']['bauc']['b_lo']:.3g} to {q['panel']['bauc']['b_hi']:.3g} of benign runs "
            "flagged (log scale), per failure dimension; chance is "
            f"{q['panel']['chance_bauc']:.3f}. True labels are what the synthetic runs really "
            "did; the panel's noise caps what any monitor can show on panel labels."
        )


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _quality_table(q: dict[str, Any]) -> Table:
    """Panel-label and true-label figures side by side."""
    columns = [c for c in ("panel", "true") if c in q]
    panel = q["panel"]
    table = Table(
        title=f"ranking quality ({panel['n_failures']} failures of {q['n_labelled']} labelled)"
    )
    table.add_column("measure")
    for c in columns:
        table.add_column(f"{c} labels", justify="right")

    def row(name: str, get: Any) -> None:
        table.add_row(name, *(_fmt(get(q[c])) for c in columns))

    row("budget-AUC (mean over dimensions)", lambda m: m["bauc"]["aggregate"])
    worst = panel["bauc"].get("worst_dimension")
    row(f"budget-AUC, worst ({worst})", lambda m: m["bauc"]["worst"])
    row("AUROC", lambda m: m["auroc"])
    row(f"pAUC (McClish, FPR <= {panel['pauc_max_fpr']:g})", lambda m: m["pauc"])
    for b in panel["recall_at"]:
        row(f"recall at {float(b):.0%} benign flagged", lambda m, b=b: m["recall_at"].get(b))
    for d in panel["bauc"]["by_dimension"]:
        row(f"budget-AUC {d}", lambda m, d=d: m["bauc"]["by_dimension"].get(d))
    for d in panel["bauc"].get("absent", []):
        table.add_row(f"budget-AUC {d}", *("absent" for _ in columns))
    return table


@sandbox.command("check")
@click.argument("program", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stdout.")
def check_cmd(program: Path, as_json: bool) -> None:
    """Check PROGRAM under the sandbox rules without running it.

    Beyond compiling, it checks that the program defines score(traj) as a function
    the sandbox can call with one argument, and that PARAMS is a dict literal of
    numbers a tuner can adjust. Prints each violation with its line and column, and
    the tunable PARAMS. Exit code 0 when the program passes, 1 otherwise.
    """
    from monsearch.sandbox.check import check_program

    source, origin = _read_program(program)
    report = check_program(source)
    errors = [{"line": e.line, "column": e.col, "message": e.message} for e in report.errors]
    if as_json:
        click.echo(
            json.dumps(
                {
                    "program": origin,
                    "ok": report.ok,
                    "errors": errors,
                    "params": dict(report.params),
                    "warnings": list(report.warnings),
                },
                indent=2,
            )
        )
    else:
        for e in errors:
            where = f"{e['line']}:{e['column'] or 1}" if e["line"] is not None else "-"
            click.echo(f"{origin}:{where}: {e['message']}")
        if report.ok:
            # One parameter a line: a program's PARAMS on one line ran to hundreds of columns.
            params = dict(report.params)
            click.echo(f"{origin}: ok; PARAMS ({len(params)} tunable)" + (":" if params else ""))
            for key, value in params.items():
                click.echo(f"  {key}: {json.dumps(value)}")
    if not report.ok:
        raise SystemExit(1)


@sandbox.command("seed")
def seed_cmd() -> None:
    """Print the built-in seed monitor's source, to copy and edit.

    `monsearch sandbox seed > my_monitor.py`, edit it, then
    `monsearch sandbox check my_monitor.py` and `monsearch sandbox run my_monitor.py`.
    """
    from monsearch.sandbox.examples.seed_monitor import SEED_MONITOR

    click.echo(SEED_MONITOR.strip("\n"))


@sandbox.command("view")
@click.argument("trajectory_id")
@corpus_option()
@splits_option("train and val (sealed splits are read only when named)")
def view_cmd(trajectory_id: str, corpus_dir: Path | None, splits: tuple[str, ...]) -> None:
    """Print, as JSON, exactly what a monitor program sees of one trajectory.

    The view goes to stdout; a line on stderr says how many of the steps that look
    like HTTP the view parsed into requests, and names the steps it could not.
    (The id is salted with a secret of this process, as a sandbox pool salts its own.)
    """
    from monsearch.views.build import build_view
    from monsearch.views.coverage import http_steps
    from monsearch.views.frozen import thaw

    traj = find_trajectory(corpus_dir, splits, trajectory_id)
    click.echo(json.dumps(thaw(build_view(traj)), indent=2, default=str))
    steps = http_steps(traj)
    missed = [s for s in steps if not s.parsed]
    line = f"HTTP coverage: {len(steps) - len(missed)}/{len(steps)} HTTP-looking steps parsed"
    if missed:
        line += "; no request from " + ", ".join(f"step {s.index} ({s.kind})" for s in missed)
    click.echo(line, err=True)


@sandbox.command("helpers")
def helpers_cmd() -> None:
    """List the helper functions a monitor program may call."""
    from monsearch.sandbox.helpers import helper_reference

    rows, notes = _reference_table(helper_reference())
    console = stdout_console()
    console.print(
        fitted_table(
            console, "helpers a monitor program may call", ["helper", "returns"],
            [(row, None) for row in rows], kinds=[cells.NAME, cells.TEXT],
        )  # fmt: skip
    )
    for note in notes:
        console.print(Text(note))


def _reference_table(text: str) -> tuple[list[list[str]], list[str]]:
    """The helper reference (a reStructuredText simple table, then paragraphs) as table
    rows (a row's continuation lines joined) and plain paragraphs, literals unmarked."""
    lines = text.split("\n")
    rules = [i for i, line in enumerate(lines) if line.startswith("===")]
    rule = lines[rules[0]]
    split = rule.index("=", rule.index(" "))  # where the second column starts
    rows: list[list[str]] = []
    for line in lines[rules[1] + 1 : rules[2]]:
        name, what = (part.strip().replace("``", "") for part in (line[:split], line[split:]))
        if name or not rows:
            rows.append([name, what])
        else:
            rows[-1][1] += " " + what
    paragraphs = "\n".join(lines[rules[2] + 1 :]).replace("``", "").strip().split("\n\n")
    return rows, [" ".join(p.split()) for p in paragraphs if p.strip()]
