"""``monsearch corpus live`` and ``monsearch corpus fidelity``: the live corpus."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from monsearch.commands.consoles import fitted_table, print_note, stderr_console, stdout_console

SAFETY_NOTE = (
    "Each worker runs in its own user, mount and network namespaces: only a private "
    "loopback, read-only filesystems, a fresh /tmp, credential folders covered; see "
    "docs/live-corpus.md for what that does and does not guarantee."
)


def _share(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def print_fidelity(console: Any, fidelity: dict[str, Any], *, differences: int = 3) -> None:
    """The per task and per style agreement tables and the commonest differences."""
    for key, title in (("tasks", "task"), ("styles", "style")):
        rows = []
        for name, t in fidelity[key].items():
            v = t["view_share"]
            rows.append(
                (
                    [name, str(t["steps_compared"]), _share(t["share"]), _share(v["statuses"]),
                     _share(v["requests"]), _share(v["findings"])],
                    None,
                )
            )  # fmt: skip
        o = fidelity["overall"]
        rows.append(None)
        rows.append(
            (
                ["all", str(o["steps_compared"]), _share(o["share"]),
                 _share(o["view_share"]["statuses"]), _share(o["view_share"]["requests"]),
                 _share(o["view_share"]["findings"])],
                "bold",
            )
        )  # fmt: skip
        console.print(
            fitted_table(
                console,
                f"simulated vs real, per {title}",
                [title, "steps", "status codes", "view: statuses", "requests", "findings"],
                rows,
                kinds=["name", "number", "number", "number", "number", "number"],
            )
        )
    print_note(
        console,
        "status codes: the share of steps with requests whose HTTP statuses (simulated app "
        "vs real app) agree; view: the fields a monitor reads, from each observation.",
    )
    shown = [
        (task, d) for task, t in fidelity["tasks"].items() for d in t["differences"][:differences]
    ]
    if shown:
        console.print("commonest differences:")
        for task, d in shown:
            console.print(f"  {task}: {d['count']} x {d['what']}", markup=False, highlight=False)


@click.command("live")
@click.option(
    "--apps",
    "apps",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    required=True,
    help="A StealthBench checkout (its tasks/<task>/challenge/app.py run for real, as "
    "local processes; monsearch ships none of their code).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Corpus folder to write. Default: the cache, reused by later calls with the same "
    "checkout, code, seed and size.",
)
@click.option("--size", type=click.IntRange(min=14), default=None, help="Runs to play [default: 2400].")
@click.option("--seed", type=int, default=0, show_default=True, help="The synthetic plan's seed.")
@click.option(
    "--workers",
    type=click.IntRange(min=1, max=64),
    default=None,
    help="Worker processes (each in its own namespaces) [default: the cores, at least 2].",
)
@click.option("--tasks", default=None, help="Comma-separated tasks to play [default: all 14].")
@click.option(
    "--benign-mix",
    default=None,
    metavar="paper|quiet|noisy|flat|LEVEL:SHARE,...",
    help="The runs' benign habit mix, as for corpus synth (docs/benign-mix.md) [default: paper].",
)
@click.option(
    "--no-configure",
    is_flag=True,
    help="Do not make this the live source default runs search on beside the synthetic one.",
)
@click.option(
    "--judge-model",
    default=None,
    help="The kept runs' oracle verdicts from this judge model (any OpenAI-compatible "
    "endpoint, shown each run with the checkout's rubric for its task) instead of the "
    "simulated judge; a run it gives no verdict for keeps the simulated one, counted.",
)
@click.option(
    "--judge-base-url",
    envvar="MONSEARCH_JUDGE_BASE_URL",
    help="The judge's OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1 [env "
    "MONSEARCH_JUDGE_BASE_URL]; the key comes from MONSEARCH_JUDGE_API_KEY or "
    "OPENAI_API_KEY. Probed before any run is played; unreachable: exit 2.",
)
@click.option(
    "--oracle-cache",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="The judge's on-disk answer cache (playing the same runs again costs no call) "
    "[default: oracle-cache in monsearch's cache folder].",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def live(
    apps: Path,
    out: Path | None,
    size: int | None,
    seed: int,
    workers: int | None,
    tasks: str | None,
    benign_mix: str | None,
    no_configure: bool,
    judge_model: str | None,
    judge_base_url: str | None,
    oracle_cache: Path | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Play the synthetic agents' runs against the real StealthBench apps.

    Every persona, style, plan and failure mode of the synthetic generator, each
    command executed for real in an emulated agent container (the image's
    programs, /workspace, root) against fresh processes of the task's own app,
    with the real status codes, rate limits and timings; sleeps pass on a
    virtual clock the apps see. Labels come from the run's behaviour mode, kept
    only where the real apps let it happen as planned. Writes a corpus split
    like the synthetic one, with per-step fidelity records (simulated vs real
    observation) and a report; prints the fidelity tables.
    """
    from monsearch.api.live import live_corpus

    task_list = [t.strip() for t in tasks.split(",") if t.strip()] if tasks else None
    err = stderr_console()
    oracle = _judge_oracle(apps, judge_model, judge_base_url, oracle_cache) if judge_model else None
    t0 = time.perf_counter()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, disable=quiet or as_json, transient=True) as bar:
        row = bar.add_task("playing", total=None)
        judging = bar.add_task("judging", total=None, visible=False)

        def progress(done: int, total: int) -> None:
            bar.update(row, completed=done, total=total)

        def judge_progress(done: int, total: int) -> None:
            bar.update(judging, completed=done, total=total, visible=True)

        result = live_corpus(
            apps, out, size=size, seed=seed, workers=workers, tasks=task_list,
            progress=progress, configure=not no_configure, benign_mix=benign_mix,
            oracle=oracle, judge_progress=judge_progress,
        )  # fmt: skip
    elapsed = time.perf_counter() - t0
    if as_json:
        click.echo(json.dumps({**result.to_dict(), "elapsed_s": round(elapsed, 1)}, indent=1))
        return
    console = stdout_console()
    kept = sum(result.counts.values())
    console.print(f"live corpus {result.path}", markup=False, highlight=False)
    if result.cached:
        console.print(f"from the cache: {kept} trajectories (content {result.content_hash[:12]})")
    else:
        rep = result.report or {}
        console.print(
            f"{rep.get('runs', 0)} runs played in {rep.get('wall_s', elapsed):.0f} s on "
            f"{rep.get('workers')} workers; {kept} kept, {rep.get('solved', 0)} solved"
        )
        for reason, n in (rep.get("left_out") or {}).items():
            console.print(f"  left out {n}: {reason}", markup=False, highlight=False)
        for reason, n in (rep.get("failed") or {}).items():
            console.print(f"  failed {n}: {reason}", markup=False, highlight=False)
        refused = rep.get("refused_programs") or {}
        if refused:
            console.print("  refused programs: " + ", ".join(f"{p} ({n})" for p, n in refused.items()), markup=False)
        print_fidelity(console, rep["fidelity"])
        judged = rep.get("oracle")
        if judged:
            agree = judged.get("agreement_with_panel") or {}
            console.print(
                f"oracle verdicts by {judged['judge']}: {judged['judged']} runs "
                f"({judged['cost']['fresh_calls']} judge calls, {judged['cost']['cached_calls']} from the cache)"
                + (f"; agrees with the panel on {agree['accuracy']:.1%}" if agree else ""),
                markup=False, highlight=False,
            )  # fmt: skip
            if judged["failed"]:
                console.print(
                    f"  no verdict for {judged['failed']} runs (their simulated verdict kept, "
                    f"meta oracle_source=simulated): {judged.get('first_error')}",
                    markup=False, highlight=False,
                )  # fmt: skip
    console.print(SAFETY_NOTE)
    if not no_configure:
        console.print("configured as the live source of default runs (monsearch evolve)")


def _judge_oracle(apps: Path, model: str, base_url: str | None, cache: Path | None) -> Any:
    """The llm oracle for ``--judge-model``, checked (cache and endpoint) before any run
    is played: a wrong setting or an unreachable judge is exit 2, nothing played."""
    from monsearch.commands.paths import ensure_writable_dir
    from monsearch.oracle.judge import LLMJudgeConfig
    from monsearch.oracle.session import OracleConfig, probe_oracle
    from monsearch.synth.generate import cache_dir

    cache = cache if cache is not None else cache_dir() / "oracle-cache"
    ensure_writable_dir(cache, "oracle cache folder")
    rubrics = apps / "tasks"
    config = OracleConfig(
        backend="llm", llm=LLMJudgeConfig(model=model, base_url=base_url).resolved(),
        cache_dir=cache, rubric_dir=rubrics if rubrics.is_dir() else None,
    )  # fmt: skip
    for warning in probe_oracle(config):
        click.echo(f"warning: {warning}", err=True)
    return config


@click.command("fidelity")
@click.argument(
    "corpus_path", metavar="CORPUS", required=False, type=click.Path(file_okay=False, path_type=Path)
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stdout.")
@click.option("--differences", type=click.IntRange(min=0), default=3, show_default=True,
              help="Commonest differences shown per task.")  # fmt: skip
def fidelity(corpus_path: Path | None, as_json: bool, differences: int) -> None:
    """How faithful the simulator is: a live corpus's simulated vs real observations.

    Reads the per-step records a live corpus keeps (CORPUS, default: the configured
    live corpus) and prints, per task and per style, the share of steps whose HTTP
    status codes agree and the view fields a monitor reads (statuses, requests,
    findings), with the commonest differences.
    """
    from monsearch.api.live import configured_live_corpus
    from monsearch.errors import MonsearchError
    from monsearch.live.fidelity import read_records, summarise

    folder = corpus_path or configured_live_corpus()
    if folder is None:
        raise MonsearchError(
            "no live corpus is configured: run monsearch corpus live --apps DIR once, or name one"
        )
    runs = read_records(Path(folder))
    summary = summarise(runs)
    if as_json:
        click.echo(json.dumps(summary, indent=1))
        return
    print_fidelity(stdout_console(), summary, differences=differences)
    sys.stdout.flush()
