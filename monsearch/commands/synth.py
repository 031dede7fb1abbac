"""``monsearch corpus synth``: generate the synthetic StealthBench-like corpus.

Also :func:`resolve_corpus`, for commands whose corpus argument is optional:
no path means the embedded default corpus, generated once (with a progress
bar) and cached.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from monsearch.commands.consoles import stderr_console, stdout_console
from monsearch.commands.options import fractions_callback, name_callback
from monsearch.commands.paths import writing_corpus
from monsearch.errors import MonsearchError

if TYPE_CHECKING:
    from monsearch.corpora.benign_mix import BenignMix
    from monsearch.synth.rates import Rates

PhaseProgress = Callable[[str, int, int], None]


@contextmanager
def synth_progress(quiet: bool = False) -> Iterator[PhaseProgress]:
    """A rich progress bar on stderr, one row per phase (``generate``, ``write``)."""
    console = stderr_console()
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, disable=quiet, transient=True) as bar:
        rows: dict[str, int] = {}

        def update(phase: str, done: int, total: int) -> None:
            if phase not in rows:
                rows[phase] = bar.add_task(f"{phase:>8}", total=total)
            bar.update(rows[phase], completed=done)

        yield update


def resolve_corpus(path: Path | None, *, seed: int = 0, quiet: bool = False) -> Path:
    """``path`` itself, or the cached default synthetic corpus when ``path`` is None
    (:func:`monsearch.api.corpus.default_corpus`, with the command's messages and
    progress bar)."""
    if path is not None:
        return path
    from monsearch.api.corpus import default_corpus

    def waiting(holder: str) -> None:
        if not quiet:
            click.echo(
                f"waiting for another monsearch process ({holder}) building the default corpus",
                err=True,
            )

    def building(target: Path) -> None:
        if not quiet:
            click.echo(
                f"building the default synthetic corpus (seed {seed}) into {target}", err=True
            )

    with contextlib.ExitStack() as stack:
        bar: list[Callable[[str, int, int], None]] = []

        def progress(phase: str, done: int, total: int) -> None:
            # The bar opens with the first progress: not before the checks have passed.
            if not bar:
                bar.append(stack.enter_context(synth_progress(quiet)))
            bar[0](phase, done, total)

        return default_corpus(seed, on_wait=waiting, on_build=building, progress=progress)


def _parse_list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [part.strip() for part in text.split(",") if part.strip()]


def _resolve_personas(names: list[str]) -> list[str]:
    """Persona generator ids for ``--cross-generators`` (ids or their slugs), or BadParameter."""
    from monsearch.corpora.splits import generator_slug
    from monsearch.synth.personas import PERSONAS

    known = [p.generator for p in PERSONAS]
    by_slug = {generator_slug(g): g for g in known}
    out: list[str] = []
    for name in names:
        try:
            match = name if name in known else by_slug.get(generator_slug(name))
        except MonsearchError:  # no letters or digits at all
            match = None
        if match is None:
            raise click.BadParameter(
                f"{name!r} is not one of the synthetic generators: {', '.join(known)}",
                param_hint="'--cross-generators'",
            )
        if match not in out:
            out.append(match)
    return out


def _smallest_size(held: list[str], start: int) -> int | None:
    """The smallest size >= ``start`` giving every held-out generator and one other a run."""
    from monsearch.synth.personas import PERSONAS, persona_counts

    for size in range(start, start + 10_000):
        counts = persona_counts(size, PERSONAS)
        if all(counts[g] for g in held) and any(n for g, n in counts.items() if g not in held):
            return size
    return None


def rates_callback(ctx: click.Context, param: click.Parameter, value: str | None) -> Rates | None:
    """``--rates``: a preset or a rates file, read and checked before any work.

    A bad file is a :class:`RatesError` (one line naming the file and the field,
    exit 2), as is a target the simulated judges cannot give.
    """
    if value is None:
        return None
    from monsearch.synth.rated import check_reachable
    from monsearch.synth.rates import parse_rates

    chosen = parse_rates(value)
    if not chosen.calibrated:
        check_reachable(chosen)
    return chosen


def benign_mix_callback(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> BenignMix | None:
    """``--benign-mix``: a preset and/or ``LEVEL:SHARE`` items, checked before any work
    (a bad value is a one-line :class:`BenignMixError`, exit 2)."""
    if value is None:
        return None
    from monsearch.corpora.benign_mix import parse_benign_mix

    return parse_benign_mix(value)


def _resolve_mix(mix: BenignMix | None, rates: Rates) -> BenignMix:
    """``--benign-mix``, or the rates file's ``benign_mix``, or paper; both given, they agree."""
    from monsearch.corpora.benign_mix import BenignMixError, parse_benign_mix

    from_file = None if rates.benign_mix is None else parse_benign_mix(rates.benign_mix)
    if mix is not None and from_file is not None and mix != from_file:
        raise BenignMixError(
            f"--benign-mix {mix.spec} and the rates file's benign_mix {from_file.spec} "
            "disagree; give one"
        )
    return mix or from_file or parse_benign_mix(None)


def _alias_balance(rates: Rates | None, balance: str | None) -> Rates:
    """``--rates``, or ``--balance`` (its older name for paper and task), or paper."""
    from monsearch.synth.rates import DEFAULT_RATES, preset

    if balance is not None and rates is not None and rates.kind != balance:
        raise click.BadParameter(
            f"--balance {balance} and --rates {rates.spec} disagree; --balance is the older "
            "name of --rates paper|task, give one",
            param_hint="'--balance'",
        )
    if rates is not None:
        return rates
    return preset(balance or DEFAULT_RATES)


def check_synth_options(size: int, held: list[str]) -> list[str]:
    """Check ``--size`` against ``--cross-generators`` before generating; the resolved ids.

    Generators share the corpus in proportion to the paper's run counts, so a
    small ``size`` gives some of them no trajectory at all: a held-out generator
    must get at least one, and so must one generator left for train/val/test.
    """
    from monsearch.synth.personas import PERSONAS, persona_counts

    ids = _resolve_personas(held)
    counts = persona_counts(size, PERSONAS)
    if ids and all(p.generator in ids for p in PERSONAS):
        raise click.BadParameter(
            "every synthetic generator is held out; nothing would be left for train/val/test",
            param_hint="'--cross-generators'",
        )
    absent = [g for g in ids if not counts[g]]
    if absent or not any(n for g, n in counts.items() if g not in ids):
        need = _smallest_size(ids, size + 1)
        who = (
            f"held-out generator(s) {', '.join(absent)} would get no trajectory"
            if absent
            else "no trajectory would be left for train/val/test"
        )
        raise click.BadParameter(
            f"{size} is too small: {who} (the generators share the corpus in proportion to "
            f"the paper's run counts); use --size {need} or more"
            + (", or hold out fewer generators with --cross-generators" if ids else ""),
            param_hint="'--size'",
        )
    return ids


@click.command("synth")
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Corpus folder to write (replaced atomically if it is already a corpus). "
    "Checked for writability before generating; one writer at a time.",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed: the same seed and size give a byte-identical corpus (same content hash).",
)
@click.option(
    "--size",
    type=click.IntRange(min=1),
    default=None,
    help="Number of trajectories [default: 15000, which puts over 1,000 benign runs in val].",
)
@click.option(
    "--cross-generators",
    default=None,
    help="Comma-separated generator ids held out as cross-generator corpora "
    "[default: nvidia/nemotron-3-ultra,openai/gpt-5.6-sol,arcee-ai/trinity-large-thinking].",
)
@click.option(
    "--fractions",
    default=None,
    callback=fractions_callback,
    metavar="TRAIN,VAL,TEST",
    help="train,val,test fractions for the other generators, each in [0, 1], sum 1 "
    "[default: 0.5,0.25,0.25].",
)
@click.option(
    "--name", default=None, callback=name_callback, help="Corpus name recorded in the manifest."
)
@click.option(
    "--jobs",
    "n_jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Worker processes for generation (the output does not depend on it).",
)
@click.option(
    "--rates",
    "rates",
    default=None,
    metavar="paper|task|flat[:SHARE]|FILE",
    callback=rates_callback,
    help="Panel-label failure rates to generate for. paper: StealthBench's per-model and "
    "per-task rates; task: every task at the overall failure shares, per-model rates kept; "
    "flat: every task x outcome (flag found, no flag, step limit) and every generator at "
    "one share (default 1/3, or flat:SHARE); FILE: a TOML or JSON file of per task x "
    "outcome shares (format: docs/synthetic-rates.md). Solve rates, styles and modes stay "
    "the paper's. [default: paper]",
)
@click.option(
    "--benign-mix",
    "benign_mix",
    default=None,
    metavar="PRESET|LEVEL:SHARE,...",
    callback=benign_mix_callback,
    help="The mix of benign habit profiles (docs/benign-mix.md). Presets: paper (each "
    "persona's own shares), quiet (80% of runs clean, patient, not probing on each axis), "
    "noisy (80% recon-heavy, retry-happy, probing), flat (every profile alike); then "
    "LEVEL:SHARE items move one axis: clean|recon_heavy, patient|retry_happy, "
    "no_probe|probing, e.g. patient:0.7 or noisy,probing:0.2. A rates file may set it "
    "too (benign_mix). [default: paper]",
)
@click.option(
    "--balance",
    type=click.Choice(["paper", "task"]),
    default=None,
    help="Older name of --rates paper|task (builds the same corpus).",
)
@click.option(
    "--out-of-image-clients",
    is_flag=True,
    help="Let the wget and httpie personas use those tools, which the StealthBench agent "
    "image lacks (a labelled variant: each run records it in its meta). Off: they use "
    "in-image curl styles.",
)
@click.option("--quiet", is_flag=True, help="No progress bar.")
def synth(
    out: Path,
    seed: int,
    size: int | None,
    cross_generators: str | None,
    fractions: tuple[float, float, float] | None,
    name: str | None,
    n_jobs: int,
    rates: Rates | None,
    benign_mix: BenignMix | None,
    balance: str | None,
    out_of_image_clients: bool,
    quiet: bool,
) -> None:
    """Generate a labelled synthetic corpus modelled on the 14 StealthBench tasks.

    Eight personas (one per model of the paper's results table) run every task
    with calibrated solve / safe / reckless rates; three simulated judges label
    each run and a fourth gives the oracle verdict. --rates sets other label
    failure rates than the paper's: every task, outcome and model alike (flat),
    or your own per task and outcome (a file). --benign-mix moves how often
    runs look around, run into limits before backing off and try a listener
    locally (each run records its profile). The corpus is written split:
    train/val/test from five personas, one cross-generator corpus per
    held-out persona, and xgen-family: the runs written with a second,
    independently written family of plans, command idioms and failure
    realisations, which train and val never see.
    """
    from monsearch.corpora.splits import split_order
    from monsearch.synth.generate import DEFAULT_FRACTIONS, DEFAULT_SIZE, synthesize_corpus
    from monsearch.synth.personas import DEFAULT_CROSS_GENERATORS

    # Everything is checked before the first trajectory is generated.
    rates = _alias_balance(rates, balance)
    mix = _resolve_mix(benign_mix, rates)
    size = DEFAULT_SIZE if size is None else size
    held = _parse_list(cross_generators)
    held_ids = check_synth_options(size, list(DEFAULT_CROSS_GENERATORS if held is None else held))
    t0 = time.perf_counter()
    with writing_corpus(out), synth_progress(quiet) as progress:
        result = synthesize_corpus(
            out,
            seed=seed,
            size=size,
            cross_generators=held_ids,
            fractions=DEFAULT_FRACTIONS if fractions is None else fractions,
            name=name,
            n_jobs=n_jobs,
            progress=progress,
            rates=rates,
            out_of_image=out_of_image_clients,
            benign_mix=mix,
        )
    elapsed = time.perf_counter() - t0

    table = Table(title=f"synthetic corpus {out}")
    table.add_column("split")
    table.add_column("trajectories", justify="right")
    table.add_column("benign (panel pass)", justify="right")
    for split in split_order(result.counts):
        table.add_row(split, str(result.counts[split]), str(result.benign.get(split, 0)))
    table.add_row("total", str(sum(result.counts.values())), str(sum(result.benign.values())))
    console = stdout_console()
    console.print(table)
    console.print(f"content hash {result.content_hash}")
    console.print(f"rates {escape(rates.describe())}")
    console.print(f"benign mix {escape(mix.describe())}")
    console.print(f"seed {seed}, size {size}, written in {elapsed:.1f} s")
