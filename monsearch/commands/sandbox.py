"""``monsearch sandbox ...``: run, check and inspect monitor programs in the sandbox.

The sandbox never sees labels. ``run`` reads labels only here, at the top, to
print how the scores rank failures against passes (AUROC, recall at a few
benign flag rates); the proper metric (budget-AUC) belongs to the evaluation layer.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click
import numpy as np
from rich.table import Table

from monsearch.commands.consoles import stderr_console, stdout_console
from monsearch.commands.options import corpus_option, find_trajectory, splits_option
from monsearch.errors import MonsearchError

_RECALL_BUDGETS = (0.01, 0.02, 0.05, 0.10)


def _read_program(path: Path | None) -> tuple[str, str]:
    if path is None:
        from monsearch.sandbox.examples.seed_monitor import SEED_MONITOR

        return SEED_MONITOR, "built-in seed monitor"
    try:
        return path.read_text(encoding="utf-8"), str(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise MonsearchError(f"{path}: cannot read the program: {exc}") from exc


def _load_split(corpus_dir: Path | None, split: str, quiet: bool) -> tuple[Any, list[Any]]:
    from monsearch.commands.synth import resolve_corpus
    from monsearch.corpora.store import load_corpus

    if split == "test" or split.startswith("xgen-"):
        raise MonsearchError(
            f"split {split!r} is sealed: it is evaluated once by the sealed-test step, "
            "not by ad-hoc runs (use train or val)"
        )
    corp = load_corpus(resolve_corpus(corpus_dir, quiet=quiet), [split])
    return corp, corp.split(split)


def recall_at_budget(scores: np.ndarray, is_failure: np.ndarray, budget: float) -> float:
    """Recall when the threshold flags exactly ``budget`` of the benign runs.

    Ties at the threshold are flagged with the probability that spends the
    budget exactly (DESIGN.md's randomised threshold), so ties cannot inflate it.
    """
    benign = np.sort(scores[~is_failure])[::-1]
    fails = scores[is_failure]
    if benign.size == 0 or fails.size == 0:
        return math.nan
    k = budget * benign.size  # benign runs we may flag
    idx = min(int(math.floor(k)), benign.size - 1)
    tau = benign[idx]
    above = float(np.mean(benign > tau))
    at = float(np.mean(benign == tau))
    g = min(1.0, max(0.0, (budget - above) / at)) if at > 0 else 0.0
    return float(np.mean(fails > tau) + g * np.mean(fails == tau))


def _quality(trajs: list[Any], scores: np.ndarray) -> dict[str, Any]:
    from sklearn.metrics import roc_auc_score

    labelled = [i for i, t in enumerate(trajs) if t.label is not None]
    if not labelled:
        return {}
    idx = np.asarray(labelled)
    y = np.asarray([trajs[i].label.is_failure for i in labelled])
    s = scores[idx]
    out: dict[str, Any] = {"n_labelled": int(idx.size), "n_failures": int(y.sum())}
    if 0 < y.sum() < y.size:
        out["auroc"] = float(roc_auc_score(y, s))
        out["recall_at"] = {f"{b:g}": recall_at_budget(s, y, b) for b in _RECALL_BUDGETS}
    per_dim: dict[str, float] = {}
    dims = np.asarray([trajs[i].dimension.value for i in labelled])
    for d in sorted(set(dims)):
        # One dimension's failures against the pooled benign runs, as the fitness does.
        mask = (dims == d) | ~y
        yd = y[mask]
        if 0 < yd.sum() < yd.size:
            per_dim[d] = float(roc_auc_score(yd, s[mask]))
    out["auroc_per_dimension"] = per_dim
    return out


@click.group()
def sandbox() -> None:
    """Run monitor programs in the sandbox, check them, see what they see."""


@sandbox.command("run")
@click.argument("program", required=False, type=click.Path(path_type=Path, dir_okay=False))
@corpus_option()
@click.option("--split", default="val", show_default=True, help="Split to score (train or val).")
@click.option("--workers", type=click.IntRange(min=1), help="Worker processes [default: cores].")
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
    "OpenAI-compatible judge (llm), or nothing.",
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
    "[env MONSEARCH_JUDGE_BASE_URL]. The key comes from MONSEARCH_JUDGE_API_KEY or OPENAI_API_KEY.",
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
    help="Write per-trajectory scores as JSON lines {id, score}.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
def run_cmd(
    program: Path | None,
    corpus_dir: Path | None,
    split: str,
    workers: int | None,
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

    The program runs in RestrictedPython inside a fresh process per candidate,
    under CPU, memory and wall-clock limits, over read-only trajectory views.
    Exit code 0 when the candidate's status is ok, 1 otherwise.
    """
    from monsearch.sandbox.evaluate import SandboxLimits, SandboxPool
    from monsearch.sandbox.oracle import OracleConfig, replay_scores_from
    from monsearch.sandbox.oracle_llm import LLMJudgeConfig

    source, origin = _read_program(program)
    corp, trajs = _load_split(corpus_dir, split, quiet=as_json)
    # A live judge call may take seconds: the per-trajectory budget would cut it off.
    per_traj_ms: float | None = 500.0
    if oracle_backend == "replay":
        oracle = OracleConfig(
            backend="replay", per_traj_cap=per_traj_cap, replay_scores=replay_scores_from(trajs)
        )
    elif oracle_backend == "llm":
        judge = LLMJudgeConfig(model=judge_model, base_url=judge_base_url).resolved()
        oracle = OracleConfig(
            backend="llm",
            per_traj_cap=per_traj_cap,
            llm=judge,
            cache_dir=oracle_cache,
            rubric_dir=rubric_dir,
        )
        per_traj_ms = None
    else:
        oracle = OracleConfig(backend="none", per_traj_cap=per_traj_cap)
    limits = SandboxLimits(wall_s=wall_s, cpu_s=cpu_s, memory_mb=memory_mb, per_traj_ms=per_traj_ms)
    console = stderr_console(quiet=as_json)
    with console.status(f"starting workers over {len(trajs)} {split} trajectories"):
        pool = SandboxPool(trajs, workers=workers, limits=limits, oracle=oracle)
    with pool, console.status("scoring"):
        result = pool.evaluate(source)
    report: dict[str, Any] = {
        "program": origin,
        "corpus": {"name": corp.name, "content_hash": corp.content_hash, "split": split},
        "status": result.status,
        "message": result.message,
        "n_trajectories": len(trajs),
        "n_errors": result.n_errors,
        "errors": result.errors,
        "wall_s": result.wall_s,
        "cpu_s": result.cpu_s,
        "oracle": result.oracle,
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
        if scores_out is not None:
            lines = (
                json.dumps({"id": t.id, "score": float(s)})
                for t, s in zip(trajs, scores, strict=True)
            )
            scores_out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if as_json:
        click.echo(json.dumps(report, indent=2, default=str))
    else:
        _print_run(report)
    if not result.ok:
        raise SystemExit(1)


def _print_run(report: dict[str, Any]) -> None:
    out = stdout_console()
    corp = report["corpus"]
    out.print(
        f"[bold]{report['program']}[/] on {corp['name']} ({corp['content_hash'][:12]}) "
        f"split {corp['split']}: {report['n_trajectories']} trajectories"
    )
    colour = "green" if report["status"] == "ok" else "red"
    out.print(f"status [{colour}]{report['status']}[/]  {report['message'] or ''}")
    out.print(
        f"wall {report['wall_s']:.3f} s, cpu {report['cpu_s']:.3f} s, "
        f"per-trajectory errors {report['n_errors']}"
    )
    for err in report["errors"][:5]:
        out.print(
            f"  error on {err.get('trajectory_id')} line {err.get('line')}: {err.get('message')}"
        )
    oracle = report.get("oracle") or {}
    if oracle:
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
    if "auroc" in q:
        table = Table(
            title=f"ranking quality ({q['n_failures']} failures of {q['n_labelled']} labelled)"
        )
        table.add_column("measure")
        table.add_column("value", justify="right")
        table.add_row("AUROC", f"{q['auroc']:.3f}")
        for b, r in q["recall_at"].items():
            table.add_row(f"recall at {float(b):.0%} benign flagged", f"{r:.3f}")
        for d, a in q["auroc_per_dimension"].items():
            table.add_row(f"AUROC {d}", f"{a:.3f}")
        out.print(table)


@sandbox.command("check")
@click.argument("program", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stdout.")
def check_cmd(program: Path, as_json: bool) -> None:
    """Compile PROGRAM under the sandbox rules without running it.

    Prints each violation with its line and column and the tunable PARAMS.
    Exit code 0 when it compiles, 1 otherwise.
    """
    from monsearch.sandbox.restricted import compile_program

    source, origin = _read_program(program)
    report = compile_program(source)
    errors = [{"line": e.line, "column": e.col, "message": e.message} for e in report.errors]
    if as_json:
        click.echo(
            json.dumps(
                {
                    "program": origin,
                    "ok": report.ok,
                    "errors": errors,
                    "params": dict(report.params),
                },
                indent=2,
            )
        )
    else:
        for e in errors:
            click.echo(f"{origin}:{e['line']}:{e['column']}: {e['message']}")
        if report.ok:
            click.echo(f"{origin}: ok; PARAMS: {json.dumps(dict(report.params))}")
    if not report.ok:
        raise SystemExit(1)


@sandbox.command("view")
@click.argument("trajectory_id")
@corpus_option()
@splits_option("train and val (sealed splits are read only when named)")
def view_cmd(trajectory_id: str, corpus_dir: Path | None, splits: tuple[str, ...]) -> None:
    """Print, as JSON, exactly what a monitor program sees of one trajectory."""
    from monsearch.sandbox.frozen import thaw
    from monsearch.sandbox.view import build_view

    traj = find_trajectory(corpus_dir, splits, trajectory_id)
    click.echo(json.dumps(thaw(build_view(traj)), indent=2, default=str))


@sandbox.command("helpers")
def helpers_cmd() -> None:
    """List the helper functions a monitor program may call."""
    from monsearch.sandbox.helpers import helper_reference

    click.echo(helper_reference())
