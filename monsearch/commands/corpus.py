"""``monsearch corpus ...``: import, split, synthesise and inspect corpora.

Tables go to stdout; progress bars and warnings go to stderr, so
``corpus stats --json`` prints nothing but JSON on stdout.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn
from rich.table import Table

from monsearch.commands.consoles import stderr_console, stdout_console
from monsearch.commands.options import corpus_option, find_trajectory, splits_option
from monsearch.errors import MonsearchError


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.1f} kB"


def _reason(path: str, reason: str) -> str:
    # Reasons are full InputError messages that start with the path: do not print it twice.
    return reason[len(path) + 2 :] if reason.startswith(path + ": ") else reason


def _csv(text: str | None) -> list[str]:
    return [p.strip() for p in (text or "").split(",") if p.strip()]


def _fractions(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(p) for p in _csv(text))
    except ValueError:
        raise click.BadParameter(f"expected three numbers like 0.6,0.2,0.2, got {text!r}") from None


@contextmanager
def _progress(quiet: bool) -> Iterator[Progress]:
    console = stderr_console()
    bar = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        transient=True,
        # Off a terminal a bar is only noise in logs (and blank lines on stderr).
        disable=quiet or not console.is_terminal,
    )
    with bar:
        yield bar


def _write_with_progress(bar: Progress, out: Path, trajs: list, **kw: Any):
    from monsearch.corpora.store import write_corpus

    task = bar.add_task("writing", total=len(trajs))
    return write_corpus(
        out, trajs, progress=lambda done, total: bar.update(task, completed=done), **kw
    )


def _splits_table(manifest) -> Table:
    table = Table(title=f"corpus {escape(manifest.name)}")
    for col in (
        "split",
        "trajectories",
        "valid",
        "pass",
        "fail",
        "unlabelled",
        "min budget",
        "size",
    ):
        table.add_column(col, justify="left" if col == "split" else "right")
    per_split = manifest.counts.get("splits", {})
    for s in manifest.split_names:
        c = per_split.get(s, {})
        labels = c.get("labels", {})
        mb = c.get("min_budget")
        table.add_row(
            s,
            str(manifest.parts[s].count),
            str(c.get("valid", "-")),
            str(labels.get("pass", "-")),
            str(labels.get("fail", "-")),
            str(labels.get("unlabelled", "-")),
            "-" if mb is None else f"{mb:.4f}",
            _size(manifest.parts[s].bytes),
        )
    return table


def _print_manifest(console: Console, manifest) -> None:
    console.print(_splits_table(manifest))
    console.print(f"content hash     {manifest.content_hash}")
    if manifest.assignment_hash:
        console.print(f"assignment hash  {manifest.assignment_hash}")
    info = manifest.split_info
    if info:
        xgen = info.get("cross_generators") or {}
        held = ", ".join(f"{v} -> {k}" for k, v in xgen.items()) if isinstance(xgen, dict) else xgen
        console.print(
            f"split            {escape(str(info.get('method', '?')))}, seed {info.get('seed', '-')}, "
            f"fractions {info.get('fractions', '-')}"
            + (f", held out: {escape(str(held))}" if held else "")
        )
    else:
        console.print("split            none (unsplit: run `monsearch corpus split`)")


@click.group()
def corpus() -> None:
    """Build, split and inspect labelled trajectory corpora."""


# --------------------------------------------------------------------------- import


@corpus.command("import")
@click.argument("src", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["auto", "stealthbench", "atif"]),
    default="auto",
    show_default=True,
    help="Input format: 'stealthbench' (the harness's results tree, its trajectories/ folder, "
    "or one trajectory.atif.json), 'atif' (canonical Harbor ATIF v1.4-v1.8: a file, a folder "
    "of *.json, or a JSONL), or 'auto' to detect it.",
)
@click.option(
    "--labels",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help='ATIF only: a JSONL side file of labels, one {"trajectory_id", "verdicts": [...]} per line.',
)
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Corpus folder to write. An existing corpus there is replaced atomically.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Fail (exit 2) on the first unreadable file instead of skipping it.",
)
@click.option(
    "--name",
    default=None,
    help="Corpus name recorded in the manifest (default: the --out folder name).",
)
@click.option(
    "--oracle-judge",
    "oracle_judges",
    multiple=True,
    metavar="JUDGE",
    help="Judge id whose verdicts are the escalation oracle, not part of the label panel. Repeatable.",
)
@click.option(
    "--seed",
    type=int,
    default=None,
    help="Split at import time with this seed (default: write unsplit).",
)
@click.option(
    "--cross-generators",
    default=None,
    metavar="A,B,...",
    help="With --seed: comma-separated generators held out as cross-generator splits (xgen-<slug>).",
)
@click.option(
    "--fractions",
    default=None,
    metavar="TRAIN,VAL,TEST",
    help="With --seed: split fractions for the other generators [default: 0.6,0.2,0.2].",
)
@click.option("--quiet", is_flag=True, help="No progress bars.")
def import_cmd(
    src: Path,
    fmt: str,
    labels: Path | None,
    out: Path,
    strict: bool,
    name: str | None,
    oracle_judges: tuple[str, ...],
    seed: int | None,
    cross_generators: str | None,
    fractions: str | None,
    quiet: bool,
) -> None:
    """Import trajectories from SRC into a corpus folder.

    Unreadable files are skipped and listed with the reason (exit 0 with a
    warning), or stop the import with --strict (exit 2). With --seed the corpus
    is split into train/val/test (stratified by task and label) plus one
    xgen-<slug> split per cross generator; without it, everything goes into one
    unsplit part.
    """
    from monsearch.corpora.readers import read_any
    from monsearch.corpora.splits import DEFAULT_FRACTIONS, make_split

    if seed is None and (cross_generators or fractions):
        raise click.UsageError("--cross-generators and --fractions need --seed")
    out_console, err_console = stdout_console(), stderr_console()
    with _progress(quiet) as bar:
        reading = bar.add_task(f"reading {escape(str(src))}", total=None)
        report = read_any(
            src,
            fmt,
            labels=labels,
            strict=strict,
            oracle_judges=frozenset(oracle_judges),
            progress=lambda done, total: bar.update(reading, completed=done, total=total),
        )
        if not report.trajectories:
            raise MonsearchError(
                f"{src}: no trajectory could be read ({report.files_read} files examined, "
                f"{len(report.skipped)} skipped)"
                + (": " + report.skipped[0].reason if report.skipped else "")
            )
        split = None
        if seed is not None:
            split = make_split(
                report.trajectories,
                seed=seed,
                cross_generators=_csv(cross_generators),
                fractions=_fractions(fractions) if fractions else DEFAULT_FRACTIONS,
            )
        manifest = _write_with_progress(
            bar,
            out,
            report.trajectories,
            name=name or out.resolve().name,
            assignment=None if split is None else split.assignment,
            split_info=None if split is None else split.info,
        )

    out_console.print(
        f"files read {report.files_read}, trajectories kept {len(report.trajectories)} "
        f"({report.labelled} labelled), skipped {len(report.skipped)}"
    )
    if report.skipped:
        table = Table(title="skipped")
        table.add_column("path", overflow="fold")
        table.add_column("reason", overflow="fold")
        for s in report.skipped:
            table.add_row(escape(s.path), escape(_reason(s.path, s.reason)))
        out_console.print(table)
    for w in report.warnings:
        err_console.print(f"[yellow]warning:[/] {escape(w)}")
    _print_manifest(out_console, manifest)
    out_console.print(f"wrote {out}")
    if report.skipped:
        err_console.print(
            f"[yellow]warning:[/] {len(report.skipped)} input(s) skipped (listed above); "
            "use --strict to fail on them instead"
        )


# --------------------------------------------------------------------------- split


@corpus.command("split")
@click.argument("directory", metavar="DIR", type=click.Path(path_type=Path))
@click.option(
    "--seed",
    type=int,
    required=True,
    help="Seed of the assignment: the same seed gives the same split.",
)
@click.option(
    "--cross-generators",
    default=None,
    metavar="A,B,...",
    help="Comma-separated generators (ids or their slugs) held out as cross-generator splits; "
    "their trajectories go to xgen-<slug> and nowhere else.",
)
@click.option(
    "--fractions",
    default="0.6,0.2,0.2",
    show_default=True,
    metavar="TRAIN,VAL,TEST",
    help="Fractions of the remaining trajectories for train, val and test (sum 1), "
    "stratified by task and panel label.",
)
@click.option("--quiet", is_flag=True, help="No progress bars.")
def split_cmd(
    directory: Path, seed: int, cross_generators: str | None, fractions: str, quiet: bool
) -> None:
    """Split (or re-split) the corpus in DIR, rewriting it atomically.

    The content hash does not change (same data); the assignment hash does.
    """
    from monsearch.corpora.splits import make_split
    from monsearch.corpora.store import load_corpus

    with _progress(quiet) as bar:
        loading = bar.add_task(f"loading {escape(str(directory))}", total=None)
        corp = load_corpus(directory)
        bar.update(loading, total=1, completed=1)
        trajs = corp.trajectories()
        split = make_split(
            trajs,
            seed=seed,
            cross_generators=_csv(cross_generators),
            fractions=_fractions(fractions),
        )
        manifest = _write_with_progress(
            bar,
            directory,
            trajs,
            name=corp.name,
            assignment=split.assignment,
            split_info=split.info,
        )
    console = stdout_console()
    _print_manifest(console, manifest)
    console.print(f"rewrote {directory}")


# --------------------------------------------------------------------------- stats


def _outcome_table(
    title: str, rows: dict[str, dict[str, Any]], overall: dict[str, Any] | None, first: str
) -> Table:
    table = Table(title=title)
    table.add_column(first)
    for col in (
        "runs",
        "N",
        "solved",
        "solve %",
        "safe success %",
        "Stealth@Solve",
        "reckless %",
        "pass",
        "fail",
    ):
        table.add_column(col, justify="right")

    def row(name: str, b: dict[str, Any], style: str | None = None) -> None:
        table.add_row(
            escape(name),
            str(b["runs"]),
            str(b["valid"]),
            str(b["solved"]),
            _pct(b["solve_rate"]),
            _pct(b["safe_success_rate"]),
            _num(b["stealth_at_solve"]),
            _pct(b["reckless_rate"]),
            str(b["labels"]["pass"]),
            str(b["labels"]["fail"]),
            style=style,
        )

    for name, b in rows.items():
        row(name, b)
    if overall is not None:
        table.add_section()
        row("overall", overall, style="bold")
    return table


def _agreement_tables(agr: dict[str, Any], oracle: dict[str, Any]) -> list[Table]:
    head = Table(title="judge agreement (complete panels of valid runs)")
    for col in (
        "scope",
        "complete panels",
        "incomplete",
        "Fleiss' kappa",
        "unanimous",
        "failure votes",
    ):
        head.add_column(col, justify="left" if col == "scope" else "right")

    def row(name: str, a: dict[str, Any], style: str | None = None) -> None:
        head.add_row(
            escape(name),
            str(a["complete_panels"]),
            str(a["incomplete_panels"]),
            _num(a["fleiss_kappa"]),
            _pct(a["unanimous_rate"]),
            _pct(a["failure_vote_rate"]),
            style=style,
        )

    for g, a in agr.get("per_generator", {}).items():
        row(g, a)
    head.add_section()
    row("overall", agr, style="bold")
    tables = [head]
    if agr["cohen_kappa"]:
        pairs = Table(title="pairwise Cohen's kappa (overall)")
        pairs.add_column("judge A")
        pairs.add_column("judge B")
        pairs.add_column("kappa", justify="right")
        for p in agr["cohen_kappa"]:
            pairs.add_row(escape(p["judges"][0]), escape(p["judges"][1]), _num(p["kappa"]))
        tables.append(pairs)
    if oracle:
        ot = Table(title="oracle vs panel majority (valid labelled runs)")
        for col in ("oracle judge", "n", "accuracy", "Cohen's kappa"):
            ot.add_column(col, justify="left" if col == "oracle judge" else "right")
        for judge, o in oracle.items():
            ot.add_row(escape(judge), str(o["n"]), _pct(o["accuracy"]), _num(o["cohen_kappa"]))
        tables.append(ot)
    return tables


@corpus.command("stats")
@click.argument("directory", metavar="[DIR]", required=False, type=click.Path(path_type=Path))
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the statistics as JSON on stdout (and nothing else).",
)
@click.option(
    "--split",
    "splits",
    multiple=True,
    metavar="SPLIT",
    help="Only these splits (repeatable), e.g. --split train --split val. Default: all.",
)
def stats_cmd(directory: Path, as_json: bool, splits: tuple[str, ...]) -> None:
    """Solve / safe-success / reckless rates, Stealth@Solve, label balance and judge agreement.

    Definitions follow StealthBench: solve % and safe success % are over all
    runs, reckless % over valid runs (outcome not 'error', at least one step),
    Stealth@Solve is the mean panel stealth score over solved labelled runs.
    Judge agreement uses complete panels of valid runs. Without DIR, the
    embedded default synthetic corpus is used (built once and cached).
    """
    from monsearch.commands.synth import resolve_corpus
    from monsearch.corpora.stats import corpus_stats
    from monsearch.corpora.store import load_corpus

    directory = resolve_corpus(directory, quiet=as_json)
    corp = load_corpus(directory, list(splits) or None)
    st = corpus_stats(corp.trajectories())
    header = {
        "name": corp.name,
        "content_hash": corp.content_hash,
        "splits": corp.loaded_splits,
    }
    if as_json:
        click.echo(json.dumps({"corpus": header, **st}, indent=2))
        return
    console = stdout_console()
    console.print(
        f"corpus [bold]{escape(corp.name)}[/] {corp.content_hash[:16]}  "
        f"splits: {', '.join(corp.loaded_splits)}"
    )
    console.print(_outcome_table("per generator", st["generators"], st["overall"], "generator"))
    dim_of = {t.task: t.dimension.value for t in corp.trajectories()}
    tasks = {f"{k} ({dim_of.get(k, '?')})": v for k, v in st["tasks"].items()}
    console.print(_outcome_table("per task (dimension)", tasks, None, "task"))
    bal = Table(title="label balance per dimension (valid runs)")
    for col in ("dimension", "pass", "fail", "unlabelled", "failure share"):
        bal.add_column(col, justify="left" if col == "dimension" else "right")
    for d, b in st["dimensions"].items():
        bal.add_row(
            d, str(b["pass"]), str(b["fail"]), str(b["unlabelled"]), _pct(b["failure_rate"])
        )
    console.print(bal)
    for table in _agreement_tables(st["agreement"], st["oracle"]):
        console.print(table)


# --------------------------------------------------------------------------- show


@corpus.command("show")
@click.argument("directory", metavar="[DIR]", required=False, type=click.Path(path_type=Path))
@click.option(
    "--verify", is_flag=True, help="Also load every split and recompute the content hash."
)
def show_cmd(directory: Path, verify: bool) -> None:
    """Summarise the manifest of the corpus in DIR: splits, counts, hashes.

    Without DIR, the embedded default synthetic corpus (built once and cached).
    """
    from monsearch.commands.synth import resolve_corpus
    from monsearch.corpora.store import load_corpus, read_manifest

    directory = resolve_corpus(directory)
    manifest = read_manifest(directory)
    console = stdout_console()
    _print_manifest(console, manifest)
    gens = manifest.counts.get("generators", {})
    if gens:
        table = Table(title="generators")
        table.add_column("generator")
        table.add_column("trajectories", justify="right")
        for g, n in gens.items():
            table.add_row(escape(g), str(n))
        console.print(table)
    console.print(
        f"schema {manifest.schema_version}, codec {manifest.codec}, written by {manifest.written_by}, "
        f"{manifest.n_trajectories} trajectories"
    )
    if verify:
        load_corpus(directory, verify_content=True)
        console.print("verified: every part file and the content hash match the manifest")


# --------------------------------------------------------------------------- trajectory


@corpus.command("trajectory")
@click.argument("trajectory_id")
@corpus_option("directory")
@splits_option("train and val (sealed splits are read only when named)")
@click.option(
    "--clip",
    type=click.IntRange(min=0),
    default=600,
    show_default=True,
    help="Middle-truncate each command and output to this many characters (0: never).",
)
@click.option("--no-labels", is_flag=True, help="Do not print the panel and oracle verdicts.")
def trajectory_cmd(
    trajectory_id: str, directory: Path | None, splits: tuple[str, ...], clip: int, no_labels: bool
) -> None:
    """Print one trajectory as a transcript: commands, outputs, thoughts and verdicts."""
    from monsearch.corpora.render import render_trajectory

    traj = find_trajectory(directory, splits, trajectory_id)
    click.echo(render_trajectory(traj, clip=clip, labels=not no_labels))


from monsearch.commands.synth import synth  # noqa: E402

corpus.add_command(synth)
