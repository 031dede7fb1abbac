"""``monsearch corpus synth``: generate the synthetic StealthBench-like corpus.

Also :func:`resolve_corpus`, for commands whose corpus argument is optional:
no path means the embedded default corpus, generated once (with a progress
bar) and cached.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from monsearch.commands.consoles import stderr_console, stdout_console
from monsearch.errors import MonsearchError

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
    """``path`` itself, or the cached default synthetic corpus when ``path`` is None."""
    if path is not None:
        return path
    from monsearch.corpora.store import MANIFEST
    from monsearch.corpora.synth.generate import default_corpus_path, ensure_default_corpus

    target = default_corpus_path(seed)
    if not (target / MANIFEST).is_file() and not quiet:
        click.echo(f"building the default synthetic corpus (seed {seed}) into {target}", err=True)
    with synth_progress(quiet) as progress:
        return ensure_default_corpus(seed, progress=progress)


def _parse_list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [part.strip() for part in text.split(",") if part.strip()]


def _parse_fractions(text: str) -> tuple[float, float, float]:
    try:
        parts = tuple(float(x) for x in text.split(","))
    except ValueError as exc:
        raise MonsearchError(
            f"--fractions: expected three numbers like 0.5,0.25,0.25, got {text!r}"
        ) from exc
    if len(parts) != 3:
        raise MonsearchError(
            f"--fractions: expected three numbers like 0.5,0.25,0.25, got {text!r}"
        )
    return parts  # type: ignore[return-value]


@click.command("synth")
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Corpus folder to write (replaced atomically if it is already a corpus).",
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
    help="train,val,test fractions for the other generators [default: 0.5,0.25,0.25].",
)
@click.option("--name", default=None, help="Corpus name recorded in the manifest.")
@click.option(
    "--jobs",
    "n_jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Worker processes for generation (the output does not depend on it).",
)
@click.option("--quiet", is_flag=True, help="No progress bar.")
def synth(
    out: Path,
    seed: int,
    size: int | None,
    cross_generators: str | None,
    fractions: str | None,
    name: str | None,
    n_jobs: int,
    quiet: bool,
) -> None:
    """Generate a labelled synthetic corpus modelled on the 14 StealthBench tasks.

    Eight personas (one per model of the paper's results table) run every task
    with calibrated solve / safe / reckless rates; three simulated judges label
    each run and a fourth gives the oracle verdict. The corpus is written split:
    train/val/test from five personas and one cross-generator corpus per
    held-out persona.
    """
    from monsearch.corpora.splits import split_order
    from monsearch.corpora.synth.generate import DEFAULT_FRACTIONS, DEFAULT_SIZE, synthesize_corpus
    from monsearch.corpora.synth.personas import DEFAULT_CROSS_GENERATORS

    size = DEFAULT_SIZE if size is None else size
    held = _parse_list(cross_generators)
    t0 = time.perf_counter()
    with synth_progress(quiet) as progress:
        result = synthesize_corpus(
            out,
            seed=seed,
            size=size,
            cross_generators=DEFAULT_CROSS_GENERATORS if held is None else held,
            fractions=DEFAULT_FRACTIONS if fractions is None else _parse_fractions(fractions),
            name=name,
            n_jobs=n_jobs,
            progress=progress,
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
    console.print(f"seed {seed}, size {size}, written in {elapsed:.1f} s")
