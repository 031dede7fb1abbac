"""``monsearch evolve``: the main job — evolve a monitor, select and freeze it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from monsearch.errors import MonsearchError

#: Exit code of a run stopped by Ctrl-C (resumable), as a shell reports SIGINT.
EXIT_INTERRUPTED = 130


def _model_spec(text: str) -> dict[str, Any]:
    """``name`` or ``name:weight``; a tag like ``qwen2.5-coder:7b`` stays part of the name.
    No weight given: none in the result (the config's weight, else 1, applies)."""
    name, _, weight = text.rpartition(":")
    try:
        return {"name": name, "weight": float(weight)} if name else {"name": text}
    except ValueError:
        return {"name": text}


@click.command("evolve")
@click.option("--budget", type=click.IntRange(min=1), default=None,
              help="Candidate evaluations on val (a hard stop). On --resume: the new total. "
              "[default: 100]")
@click.option("--seed", type=int, default=None, help="Run seed (proposals, database). [default: 0]")
@click.option("--run-id", default=None, help="Name of the run folder. [default: date-time-seed]")
@click.option("--corpus", "corpus_path", type=click.Path(path_type=Path, file_okay=False),
              default=None, help="Corpus folder with train and val splits. "
              "[default: the embedded synthetic corpus, built once and cached]")
@click.option("--source", "sources", multiple=True,
              type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="Another corpus to search on beside --corpus (repeatable): each source is a "
              "group whose fitness counts and must hold up (docs/DESIGN.md, Several sources).")
@click.option("--no-live", "no_live", is_flag=True,
              help="A run on the default corpus does not add the configured live corpus "
              "(monsearch corpus live) as a second source.")
@click.option("--config", "config_file", type=click.Path(path_type=Path, dir_okay=False),
              default=None, help="TOML file with any of the settings of config.json; "
              "options given here override it.")
@click.option("--seed-program", "seed_programs", multiple=True,
              type=click.Path(path_type=Path, dir_okay=False),
              help="Start from this program file as well (repeatable); the built-in seeds "
              "(baseline, stronger) are always included.")
@click.option("--proposer", default=None, metavar="NAME[:W],...",
              help="Proposers and weights: offline, perturb, llm (e.g. offline:0.8,llm:0.2). "
              "[default: offline]")
@click.option("--llm-model", "llm_models", multiple=True, metavar="NAME[:W]",
              help="Model for the llm proposer (repeatable: a weighted ensemble). Key from "
              "$MONSEARCH_LLM_API_KEY or $OPENAI_API_KEY, or api_key_env in --config.")
@click.option("--llm-base-url", default=None, metavar="URL",
              help="OpenAI-compatible endpoint of the llm proposer (vLLM, Ollama, llama.cpp, "
              "hosted). [default: $MONSEARCH_LLM_BASE_URL]")
@click.option("--llm-timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="S", help="Seconds one LLM request may take, streamed answer included "
              "(for every model). [default: the config's, else 600]")
@click.option("--llm-deadline", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="S", help="Wall-clock seconds one LLM proposal may take, repair turns "
              "included; a mixed run never waits for it meanwhile. [default: the config's, "
              "else 300]")
@click.option("--llm-slots", type=click.IntRange(min=1, max=64), default=None, metavar="N",
              help="LLM proposals in flight at once (a server with parallel slots: vLLM, a "
              "hosted API). [default: 1, as a llama.cpp server answers one at a time]")
@click.option("--llm-max-tokens", type=click.IntRange(min=1), default=None, metavar="N",
              help="max_tokens of every LLM answer. [default: the model's, else 1024 for "
              "edit detector, 4096 otherwise]")
@click.option("--llm-edit", type=click.Choice(["detector", "diff", "full"]), default=None,
              help="What the LLM is asked for: one detect_* function wired in by the "
              "convention (small models), SEARCH/REPLACE edits, or the whole program. "
              "[default: the model's, else detector]")
@click.option("--rho", type=click.FloatRange(min=0), default=None,
              help="Oracle query cap: mean oracle calls per benign trajectory; a candidate "
              "over it is infeasible. [default: 0.05]")
@click.option("--per-traj-cap", type=click.IntRange(min=0), default=None,
              help="Oracle calls per trajectory past which oracle() returns None. [default: 1]")
@click.option("--b-lo", type=click.FloatRange(min=0, max=1, min_open=True), default=None,
              help="Lowest audit budget of the budget-AUC range. [default: 0.01]")
@click.option("--b-hi", type=click.FloatRange(min=0, max=1, min_open=True), default=None,
              help="Highest audit budget of the budget-AUC range. [default: 0.10]")
@click.option("--fitness", type=click.Choice(["invariant", "plain"]), default=None,
              help="invariant: val budget-AUC with every task x outcome cell reweighted to one "
              "failure share, so a monitor cannot score by learning the corpus's base rates "
              "(which task was given, whether it was solved); plain: val as it is. The other "
              "figure is recorded beside it. [default: invariant]")
@click.option("--islands", type=click.IntRange(min=1), default=None, help="Islands. [default: 3]")
@click.option("--population", type=click.IntRange(min=4), default=None,
              help="Programs kept in the database (the lineage keeps all). [default: 200]")
@click.option("--batch", type=click.IntRange(min=1), default=None,
              help="Candidates proposed per database state. [default: 4]")
@click.option("--optuna-trials", type=click.IntRange(min=0), default=None,
              help="Optuna trials on train per tuned candidate (0: off). [default: 12]")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Sandbox workers scoring val. [default: 2]")
@click.option("--backend", type=click.Choice(["local", "dask", "dask-local"]), default=None,
              help="Where val evaluations run: local worker processes, an existing Dask "
              "scheduler (--scheduler), or a Dask LocalCluster. [default: local]")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Dask scheduler address for --backend dask (e.g. tcp://host:8786).")
@click.option("--max-usd", type=click.FloatRange(min=0), default=None,
              help="Stop when LLM and oracle spend reaches this many dollars.")
@click.option("--max-tokens", type=click.IntRange(min=0), default=None,
              help="Stop when LLM tokens reach this many.")
@click.option("--resume", default=None, metavar="RUN",
              help="Continue a stopped or killed run (its own settings; --budget is the new total).")
@click.option("--runs-dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Where runs live. [default: $MONSEARCH_RUNS or ./runs]")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON on stdout.")
@click.option("--quiet", is_flag=True, help="No progress display.")
def evolve_cmd(
    budget: int | None,
    seed: int | None,
    run_id: str | None,
    corpus_path: Path | None,
    sources: tuple[Path, ...],
    no_live: bool,
    config_file: Path | None,
    seed_programs: tuple[Path, ...],
    proposer: str | None,
    llm_models: tuple[str, ...],
    llm_base_url: str | None,
    llm_timeout: float | None,
    llm_deadline: float | None,
    llm_slots: int | None,
    llm_max_tokens: int | None,
    llm_edit: str | None,
    rho: float | None,
    per_traj_cap: int | None,
    b_lo: float | None,
    b_hi: float | None,
    fitness: str | None,
    islands: int | None,
    population: int | None,
    batch: int | None,
    optuna_trials: int | None,
    workers: int | None,
    backend: str | None,
    scheduler: str | None,
    max_usd: float | None,
    max_tokens: int | None,
    resume: str | None,
    runs_dir: Path | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Evolve a monitor program on val, then select and freeze the strategy.

    Without options: builds the embedded synthetic corpus if needed, starts from
    the seed strategies, proposes candidates with the offline proposer (no
    network, no model), tunes constants with optuna on train, scores every
    candidate in the sandbox on val (budget-AUC under the oracle query caps),
    records each in runs/<run-id>/lineage.sqlite and, at the end, freezes the
    candidate with the best bootstrap lower bound as runs/<run-id>/selected.py.

    Ctrl-C during start-up (corpus, views, sandbox) stops at once (exit 130): a
    new run that recorded nothing is removed, a resumed one is left as it was.
    Once evolving, Ctrl-C stops after the candidates in flight are recorded (exit
    130); a stopped or killed run continues with --resume RUN. Same seed, corpus
    and offline proposer: the same lineage, bit for bit.
    """
    from monsearch.search.config import EvolveConfig, load_config_file, parse_proposers

    cfg = load_config_file(config_file) if config_file else EvolveConfig()
    from monsearch.search.llm_proposer import merge_cli_options

    llm = dict(cfg.llm)
    if (
        llm_models or llm_base_url or llm_timeout or llm_max_tokens or llm_edit
        or llm_deadline or llm_slots
    ):
        llm = merge_cli_options(
            llm,
            [_model_spec(m) for m in llm_models],
            base_url=llm_base_url,
            timeout=llm_timeout,
            max_tokens=llm_max_tokens,
            edit=llm_edit,
            deadline=llm_deadline,
            slots=llm_slots,
        )
    if budget is None and not resume and config_file is None:
        budget = 100
    cfg = cfg.with_overrides(
        budget=budget,
        seed=seed,
        run_id=run_id,
        corpus_path=None if corpus_path is None else str(corpus_path),
        sources=tuple(str(p) for p in sources) if sources else None,
        live_source="off" if no_live else None,
        proposers=None if proposer is None else parse_proposers(proposer),
        llm=llm if llm != cfg.llm else None,
        seeds=tuple(cfg.seeds) + tuple(str(p) for p in seed_programs) if seed_programs else None,
        workers=workers,
        backend=backend,
        scheduler=scheduler,
        max_usd=max_usd,
        max_tokens=max_tokens,
        **{
            "evaluation.rho": rho,
            "evaluation.per_traj_cap": per_traj_cap,
            "evaluation.b_lo": b_lo,
            "evaluation.b_hi": b_hi,
            "evaluation.fitness": fitness,
            "search.islands": islands,
            "search.population": population,
            "search.batch": batch,
            "search.optuna_trials": optuna_trials,
        },
    )
    outcome = _run(cfg, resume, budget, runs_dir, quiet)
    report = _report(outcome)
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        _print_outcome(report)
    if outcome.status == "interrupted":
        raise SystemExit(EXIT_INTERRUPTED)
    if outcome.status == "endpoint_failed" or outcome.selected is None:
        raise SystemExit(1)


def _run(
    cfg: Any, resume: str | None, budget: int | None, runs_dir: Path | None, quiet: bool
) -> Any:
    from monsearch.api.evolve import run_search
    from monsearch.commands.consoles import stderr_console
    from monsearch.search.engine import StopFlag, install_stop_handler

    console = stderr_console(quiet=quiet)
    display = _Display(console, quiet)
    stop = StopFlag()
    restore: list[Any] = []

    def started(cfg: Any, run: Any, already: int) -> None:
        # Until the loop starts, Ctrl-C stops at once (Python's KeyboardInterrupt, even in
        # a wait for the corpus): start-up has nothing in flight worth finishing. From
        # here the first Ctrl-C lets the candidates in flight be recorded.
        restore.append(install_stop_handler(stop))
        display.start(cfg, run, already)

    try:
        return run_search(
            cfg,
            resume=resume,
            resume_budget=budget if resume else None,
            runs_dir=runs_dir,
            on_stage=display.stage,
            on_start=started,
            on_progress=display.update,
            on_llm_progress=display.llm,
            stop=stop,
        )
    except KeyboardInterrupt:
        if restore:
            raise MonsearchError(
                "stopped at once by a second Ctrl-C; every recorded candidate is kept — "
                "continue with monsearch evolve --resume RUN"
            ) from None
        raise Interrupted(
            f"stopped during start-up; run {resume} is as it was (continue with monsearch "
            f"evolve --resume {resume})"
            if resume
            else "stopped during start-up, before the run recorded anything: its folder was "
            "removed"
        ) from None
    finally:
        display.close()
        for undo in restore:
            undo()


class Interrupted(MonsearchError):
    """Ctrl-C during start-up: the command stopped there (exit 130, as a shell reports
    SIGINT)."""

    exit_code = EXIT_INTERRUPTED


class _Display:
    """Stages, then a progress bar: evaluations, best fitness, evaluations/s, spend."""

    def __init__(self, console: Any, quiet: bool) -> None:
        self.console = console
        self.quiet = quiet
        self.progress: Any = None
        self.task: Any = None

    def stage(self, text: str) -> None:
        if not self.quiet:
            # Not markup: a stage can quote a server (a model id "[/dim]" ended the command)
            self.console.print(text, style="dim", markup=False)

    def start(self, cfg: Any, run: Any, already: int) -> None:
        if self.quiet:
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        resumed = f", resuming after {already} recorded" if already else ""
        self.console.print(f"run [bold]{run.id}[/bold] in {run.dir}{resumed}")
        self.progress = Progress(
            TextColumn("evolving" if cfg.backend == "local" else "evolving (val on Dask)"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("best {task.fields[best]:.3f}"),
            TextColumn("{task.fields[rate]:.2f} eval/s"),
            TextColumn("${task.fields[usd]:.4f}"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[llm]}"),
            console=self.console,
            transient=False,
        )
        self.progress.start()
        self.task = self.progress.add_task(
            "evolve", total=cfg.budget, best=0.0, rate=0.0, usd=0.0, llm=""
        )

    def update(self, p: Any) -> None:
        if self.progress is not None:
            self.progress.update(
                self.task, completed=p.done, best=p.best, rate=p.evals_per_s, usd=p.usd
            )

    def llm(self, text: str) -> None:
        """A streamed LLM answer's progress ("llm NAME: 143 tokens, 17.2 tok/s"): a slow
        proposal on a CPU model is visibly alive. Without a bar (quiet) nothing shows."""
        if self.progress is not None:
            self.progress.update(self.task, llm=text)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


def _report(outcome: Any) -> dict[str, Any]:
    sel = outcome.selected
    run = outcome.run
    return {
        "run_id": run.id,
        "run_dir": str(run.dir),
        "status": outcome.status,
        "reason": outcome.reason,
        "evaluated": outcome.evaluated,
        "replayed": outcome.replayed,
        "best": {"id": outcome.best_id, "fitness": outcome.best_fitness},
        "selected": None
        if sel is None
        else {
            "id": sel.id,
            "fitness": sel.fitness,
            "fitness_low": sel.fitness_low,
            "strategy_hash": sel.strategy_hash,
            "source": str(run.dir / "selected.py"),
        },
        "spend": outcome.spend,
        "next": _next_steps(outcome),
    }


def _next_steps(outcome: Any) -> list[str]:
    """What to run next, as the user can type it. The sealed test is once-only: it is
    offered only for a finished run, not for one that will go on."""
    from monsearch.commands.invocation import program, run_ref

    prog, ref = program(), run_ref(outcome.run.dir)
    finished = outcome.status == "finished"
    steps = [] if finished else [f"{prog} evolve --resume {ref}"]
    if outcome.selected is None:
        return steps
    steps += [f"{prog} lineage {ref}", f"{prog} report {ref}"]
    if finished:
        steps += [f"{prog} test {ref}", f"{prog} export {ref} --out monitor-{outcome.run.id}"]
    return steps


def _print_outcome(report: dict[str, Any]) -> None:
    click.echo(f"run {report['run_id']}: {report['status']} ({report['reason']})")
    click.echo(
        f"  evaluated {report['evaluated']} candidate(s)"
        + (f", {report['replayed']} replayed from the lineage" if report["replayed"] else "")
    )
    best = report["best"]
    if best["id"]:
        click.echo(f"  best val budget-AUC: {best['fitness']:.4f} ({best['id']})")
    sel = report["selected"]
    if sel:
        click.echo(
            f"  selected: {sel['id']}  val budget-AUC {sel['fitness']:.4f}, "
            f"bootstrap 5th percentile {sel['fitness_low']:.4f}"
        )
        click.echo(f"  frozen as {sel['source']} (sha256 {sel['strategy_hash'][:16]}…)")
    spend = report["spend"]
    if spend.get("usd"):
        click.echo(f"  spend: ${spend['usd']:.4f}")
    click.echo("next:")
    for line in report["next"]:
        click.echo(f"  {line}")
