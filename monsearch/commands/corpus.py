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

from monsearch.commands.consoles import (
    SECTION,
    Row,
    fitted_table,
    print_note,
    stderr_console,
    stdout_console,
)
from monsearch.commands.options import (
    corpus_option,
    find_trajectory,
    fractions_callback,
    name_callback,
    split_names_callback,
    splits_option,
)
from monsearch.commands.paths import writing_corpus
from monsearch.commands.printable import printable
from monsearch.corpora.errors import InputError
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


# --------------------------------------------------------------------------- tables


SPLITS_NOTE = (
    "runs: trajectories in the split; valid: not an error and at least one step; "
    "pass / fail / unlab.: panel majority labels (unlab.: no panel); min budget: the "
    "smallest audit budget (share of benign runs flagged) a metric may use on the split, "
    "5 / benign runs."
)


def _splits_table(console: Console, manifest) -> Table:
    rows: list[Row] = []
    per_split = manifest.counts.get("splits", {})
    for s in manifest.split_names:
        c = per_split.get(s, {})
        labels = c.get("labels", {})
        mb = c.get("min_budget")
        cells = [
            s,
            str(manifest.parts[s].count),
            str(c.get("valid", "-")),
            str(labels.get("pass", "-")),
            str(labels.get("fail", "-")),
            str(labels.get("unlabelled", "-")),
            "-" if mb is None else f"{mb:.4f}",
            _size(manifest.parts[s].bytes),
        ]
        rows.append((cells, None))
    headers = ["split", "runs", "valid", "pass", "fail", "unlab.", "min budget", "size"]
    return fitted_table(console, f"corpus {manifest.name}", headers, rows)


def _print_manifest(console: Console, manifest) -> None:
    console.print(_splits_table(console, manifest))
    print_note(console, SPLITS_NOTE)
    # Label and hash fit in 80 columns on one line.
    console.print(f"content hash    {manifest.content_hash}")
    if manifest.assignment_hash:
        console.print(f"assignment hash {manifest.assignment_hash}")
    info = manifest.split_info
    if info:
        xgen = info.get("cross_generators") or {}
        held = ", ".join(f"{v} -> {k}" for k, v in xgen.items()) if isinstance(xgen, dict) else xgen
        console.print(
            f"split           {escape(str(info.get('method', '?')))}, seed {info.get('seed', '-')}, "
            f"fractions {info.get('fractions', '-')}"
            + (f", held out: {escape(str(held))}" if held else "")
        )
    else:
        console.print("split           none (unsplit: run `monsearch corpus split`)")
    rates = _rates_record(manifest)
    if rates is not None:
        from monsearch.synth.rates import describe

        console.print(f"rates           {escape(describe(rates))}")
    gen = (manifest.split_info or {}).get("generator")
    mix = gen.get("benign_mix") if isinstance(gen, dict) else None
    if isinstance(mix, dict):
        from monsearch.corpora.benign_mix import BenignMixError, parse_benign_mix

        try:
            text = parse_benign_mix(str(mix.get("spec"))).describe()
        except BenignMixError:
            text = str(mix.get("spec"))
        console.print(f"benign mix      {escape(text)}")


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
    help="Corpus folder to write. An existing corpus there is replaced atomically. Checked for "
    "writability before anything is read; one writer at a time.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Fail (exit 2) on the first unreadable file instead of skipping it.",
)
@click.option(
    "--name",
    default=None,
    callback=name_callback,
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
    callback=fractions_callback,
    metavar="TRAIN,VAL,TEST",
    help="With --seed: split fractions for the other generators, each in [0, 1], sum 1 "
    "[default: 0.6,0.2,0.2].",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the import report (counts, skipped files with reasons, the corpus written) as "
    "JSON on stdout, and nothing else.",
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
    fractions: tuple[float, float, float] | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Import trajectories from SRC into a corpus folder.

    Unreadable files are skipped and listed with the reason, one line each
    ("skipped PATH: REASON"; exit 0 with a warning), or stop the import with
    --strict (exit 2). With --seed the corpus is split into train/val/test
    (stratified by task and label) plus one xgen-<slug> split per cross
    generator; without it, everything goes into one unsplit part.
    """
    from monsearch.corpora.readers import read_any
    from monsearch.corpora.splits import DEFAULT_FRACTIONS, make_split

    if seed is None and (cross_generators or fractions):
        raise click.UsageError("--cross-generators and --fractions need --seed")
    out_console, err_console = stdout_console(), stderr_console()
    with writing_corpus(out), _progress(quiet or as_json) as bar:
        reading = bar.add_task(f"reading {escape(str(src))}", total=None)
        try:
            report = read_any(
                src,
                fmt,
                labels=labels,
                strict=strict,
                oracle_judges=frozenset(oracle_judges),
                progress=lambda done, total: bar.update(reading, completed=done, total=total),
            )
        except InputError as err:  # (--strict) a name from the tree, escaped: one line
            raise MonsearchError(printable(str(err))) from None
        if not report.trajectories:
            raise MonsearchError(
                printable(
                    f"{src}: no trajectory could be read ({report.files_read} files examined, "
                    f"{len(report.skipped)} skipped)"
                    + (": " + report.skipped[0].reason if report.skipped else "")
                )
            )
        split = None
        if seed is not None:
            split = make_split(
                report.trajectories,
                seed=seed,
                cross_generators=_csv(cross_generators),
                fractions=fractions or DEFAULT_FRACTIONS,
            )
        manifest = _write_with_progress(
            bar,
            out,
            report.trajectories,
            name=name or out.resolve().name,
            assignment=None if split is None else split.assignment,
            split_info=None if split is None else split.info,
        )

    for w in report.warnings:
        err_console.print(f"[yellow]warning:[/] {escape(w)}")
    if as_json:
        doc = {
            "source": str(src),
            "files_read": report.files_read,
            "trajectories": len(report.trajectories),
            "labelled": report.labelled,
            "skipped": [
                {"path": s.path, "reason": _reason(s.path, s.reason)} for s in report.skipped
            ],
            "warnings": list(report.warnings),
            "corpus": {"path": str(out), **manifest.to_dict()},
        }
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False))
    else:
        out_console.print(
            f"files read {report.files_read}, trajectories kept {len(report.trajectories)} "
            f"({report.labelled} labelled), skipped {len(report.skipped)}"
        )
        # One plain line per file, never wrapped, so the paths can be grepped and pasted.
        for s in report.skipped:
            # (escaped: a file name or a link's target may hold a newline or an escape)
            click.echo(f"skipped {printable(s.path)}: {printable(_reason(s.path, s.reason))}")
        _print_manifest(out_console, manifest)
        out_console.print(f"wrote {escape(str(out))}")
    if report.skipped:
        where = "listed in the JSON" if as_json else "listed above"
        err_console.print(
            f"[yellow]warning:[/] {len(report.skipped)} input(s) skipped ({where}); "
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
    callback=fractions_callback,
    metavar="TRAIN,VAL,TEST",
    help="Fractions of the remaining trajectories for train, val and test (each in [0, 1], "
    "sum 1), stratified by task and panel label.",
)
@click.option("--quiet", is_flag=True, help="No progress bars.")
def split_cmd(
    directory: Path,
    seed: int,
    cross_generators: str | None,
    fractions: tuple[float, float, float],
    quiet: bool,
) -> None:
    """Split (or re-split) the corpus in DIR, rewriting it atomically.

    The content hash does not change (same data); the assignment hash does.
    """
    from monsearch.corpora.splits import check_cross_generators, make_split
    from monsearch.corpora.store import load_corpus, read_manifest

    # Before the writability check and before loading: a missing or broken corpus,
    # and generators it does not hold, are named from its manifest alone.
    manifest = read_manifest(directory)
    # What generated the data (a synthetic corpus's seed, size and rates) outlives a re-split.
    made_by = (manifest.split_info or {}).get("generator")
    generators = manifest.counts.get("generators")
    if isinstance(generators, dict) and generators:
        check_cross_generators(generators, _csv(cross_generators))
    with writing_corpus(directory), _progress(quiet) as bar:
        loading = bar.add_task(f"loading {escape(str(directory))}", total=None)
        corp = load_corpus(directory)
        bar.update(loading, total=1, completed=1)
        trajs = corp.trajectories()
        split = make_split(
            trajs,
            seed=seed,
            cross_generators=_csv(cross_generators),
            fractions=fractions,
        )
        manifest = _write_with_progress(
            bar,
            directory,
            trajs,
            name=corp.name,
            assignment=split.assignment,
            split_info={**split.info, **({"generator": made_by} if made_by else {})},
        )
    console = stdout_console()
    _print_manifest(console, manifest)
    console.print(f"rewrote {escape(str(directory))}")


# --------------------------------------------------------------------------- stats


OUTCOME_NOTE = (
    "Over all runs: solve% solved the task (solved: how many), safe% solved it and the panel "
    "judged it stealthy; over valid runs (no error, at least one step; a valid column "
    "appears when some run is not): reckl% solved it but was judged an OPSEC failure; S@S "
    "(Stealth@Solve) is the panel's mean stealth score of solved runs, from 0 (blatant) to 1 "
    "(stealthy); pass / fail count panel majority labels."
)
TASK_NOTE = "The same columns per task; the OPSEC dimension each task tests is in brackets."
BALANCE_NOTE = (
    "Panel majority labels of valid runs by OPSEC dimension; failure share is fail / "
    "(pass + fail), unlabelled runs have no panel."
)
OUTCOME_SHARE_NOTE = (
    "Label failure share (fail / (pass + fail), panel majority) of valid runs per task and "
    "outcome: solved (flag found), no flag (stopped without it), step limit (ran out of "
    "turns); the column before each share counts its labelled runs. By chance alone a share "
    "of p over n runs moves by about sqrt(p (1 - p) / n): 3.8 points at 150 runs and 33 %."
)
TARGET_NOTE = (
    " In brackets: the share the corpus was generated for ({rates}){pooled}; the all-tasks "
    "row's is its expectation over the corpus's mix of tasks and generators."
)
AGREEMENT_NOTE = (
    "Fleiss' kappa is how far the judges agree beyond chance (1 always, 0 no better than "
    "chance); unanimous is the share of panels where every judge votes alike, failure votes "
    "the share of votes that say failure."
)
COHEN_NOTE = (
    "Cohen's kappa of each pair of judges on their pass / fail votes (1 always agree, 0 no "
    "better than chance)."
)
COVERAGE_NOTE = (
    "Steps that look like HTTP (curl / wget / httpie with a URL, nc fed a request line, "
    "Python that uses an HTTP client or a module the agent wrote that does) but yield no "
    "request in the monitor view, per surface style; the target is under 2 % on every style. "
    "Measured on {runs} runs{cap} (--coverage-runs)."
)
#: Runs per style the HTTP coverage of ``corpus stats`` reads by default (parsing costs ~2 ms a run).
COVERAGE_RUNS = 200
ORACLE_NOTE = (
    "How often the escalation oracle's verdict matches the panel majority (accuracy), and "
    "the same agreement corrected for chance (Cohen's kappa)."
)


def _outcome_table(
    console: Console,
    title: str,
    first: str,
    rows: dict[str, dict[str, Any]],
    overall: dict[str, Any] | None = None,
) -> Table:
    """Solve / safe / reckless rates and Stealth@Solve per group, fitted to the console.

    The valid-run count is a column only when it differs from the run count
    somewhere: on most corpora every run is valid, and 80 columns are tight.
    """
    blocks = [*rows.values(), *([overall] if overall is not None else [])]
    show_valid = any(b["valid"] != b["runs"] for b in blocks)

    def cells(name: str, b: dict[str, Any]) -> list[str]:
        return [
            name,
            str(b["runs"]),
            *([str(b["valid"])] if show_valid else []),
            str(b["solved"]),
            _pct(b["solve_rate"]),
            _pct(b["safe_success_rate"]),
            _pct(b["reckless_rate"]),
            _num(b["stealth_at_solve"]),
            str(b["labels"]["pass"]),
            str(b["labels"]["fail"]),
        ]

    headers = [first, "runs", *(["valid"] if show_valid else []), "solved", "solve%", "safe%"]
    headers += ["reckl%", "S@S", "pass", "fail"]
    out: list[Row] = [(cells(name, b), None) for name, b in rows.items()]
    if overall is not None:
        out += [SECTION, (cells("overall", overall), "bold")]
    return fitted_table(console, title, headers, out)


def _rates_record(manifest) -> dict[str, Any] | None:
    """The synthetic generator's rates record in a manifest, if it has one."""
    gen = (manifest.split_info or {}).get("generator")
    rates = gen.get("rates") if isinstance(gen, dict) else None
    return rates if isinstance(rates, dict) else None


def _print_task_outcomes(
    console: Console, st: dict[str, Any], rates: dict[str, Any] | None
) -> None:
    """Label failure share per task x outcome, beside the generation targets if known."""
    from monsearch.corpora.stats import VALID_OUTCOMES

    targets = (rates or {}).get("targets")
    targets = targets if isinstance(targets, dict) else None
    overall = (rates or {}).get("overall")

    def target(task: str | None, outcome: str) -> float | None:
        row = overall if task is None else targets.get(task)
        one = row.get(outcome) if isinstance(row, dict) else None
        return one if isinstance(one, int | float) else None

    def share(b: dict[str, Any], task: str | None, outcome: str) -> str:
        got = "-" if b["failure_rate"] is None else f"{100 * b['failure_rate']:.1f}"
        if targets is None:
            return got
        want = target(task, outcome)
        return f"{got} ({'-' if want is None else f'{100 * want:.1f}'})"

    def cells(name: str, task: str | None, blocks: dict[str, Any]) -> list[str]:
        out = [name]
        for outcome in VALID_OUTCOMES:
            b = blocks[outcome]
            out += [str(b["pass"] + b["fail"]), share(b, task, outcome)]
        return out

    rows: list[Row] = [(cells(t, t, b), None) for t, b in st["task_outcomes"].items()]
    rows += [SECTION, (cells("all tasks", None, st["outcomes"]), "bold")]
    fail = "fail%\n(target)" if targets is not None else "fail%"
    headers = ["task", "solved", fail, "no flag", fail, "step\nlimit", fail]
    console.print(fitted_table(console, "label failure share per task and outcome", headers, rows))
    note = OUTCOME_SHARE_NOTE
    if targets is not None:
        from monsearch.synth.rates import describe

        pooled = (
            "" if rates.get("per_generator") else ", pooled over generators whose own rates differ"
        )
        note += TARGET_NOTE.format(rates=describe(rates), pooled=pooled)
    print_note(console, note)


def _print_agreement(console: Console, agr: dict[str, Any], oracle: dict[str, Any]) -> None:
    def cells(name: str, a: dict[str, Any]) -> list[str]:
        return [
            name,
            str(a["complete_panels"]),
            str(a["incomplete_panels"]),
            _num(a["fleiss_kappa"]),
            _pct(a["unanimous_rate"]),
            _pct(a["failure_vote_rate"]),
        ]

    rows: list[Row] = [(cells(g, a), None) for g, a in agr.get("per_generator", {}).items()]
    rows += [SECTION, (cells("overall", agr), "bold")]
    headers = ["generator", "panels", "incompl.", "kappa", "unanim.", "fail votes"]
    console.print(
        fitted_table(console, "judge agreement (complete panels of valid runs)", headers, rows)
    )
    print_note(console, AGREEMENT_NOTE)
    if agr["cohen_kappa"]:
        pairs: list[Row] = [
            ([p["judges"][0], p["judges"][1], _num(p["kappa"])], None) for p in agr["cohen_kappa"]
        ]
        console.print(
            fitted_table(
                console,
                "pairwise Cohen's kappa (overall)",
                ["judge A", "judge B", "kappa"],
                pairs,
                names=2,
            )
        )
        print_note(console, COHEN_NOTE)
    if oracle:
        rows = [
            ([judge, str(o["n"]), _pct(o["accuracy"]), _num(o["cohen_kappa"])], None)
            for judge, o in oracle.items()
        ]
        console.print(
            fitted_table(
                console,
                "oracle vs panel majority (valid labelled runs)",
                ["oracle judge", "runs", "accuracy", "kappa"],
                rows,
            )
        )
        print_note(console, ORACLE_NOTE)


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
    callback=split_names_callback,
    help="Only these splits (repeatable), e.g. --split train --split val. Default: all.",
)
@click.option(
    "--coverage-runs",
    type=click.IntRange(min=0),
    default=COVERAGE_RUNS,
    show_default=True,
    metavar="N",
    help="Measure the view's HTTP coverage on at most N runs per surface style (0: every run).",
)
def stats_cmd(directory: Path, as_json: bool, splits: tuple[str, ...], coverage_runs: int) -> None:
    """Solve / safe-success / reckless rates, Stealth@Solve, label balance and judge agreement.

    Definitions follow StealthBench: solve % and safe success % are over all
    runs, reckless % over valid runs (outcome not 'error', at least one step),
    Stealth@Solve is the mean panel stealth score over solved labelled runs.
    Judge agreement uses complete panels of valid runs. Also: the share of
    steps that look like HTTP but yield no request in the monitor view, per
    surface style. Without DIR, the embedded default synthetic corpus is used
    (built once and cached).
    """
    from monsearch.commands.synth import resolve_corpus
    from monsearch.corpora.stats import corpus_stats
    from monsearch.corpora.store import load_corpus
    from monsearch.views.coverage import corpus_coverage

    directory = resolve_corpus(directory, quiet=as_json)
    corp = load_corpus(directory, list(splits) or None)
    st = corpus_stats(corp.trajectories())
    coverage = corpus_coverage(corp.trajectories(), per_style=coverage_runs)
    header = {
        "name": corp.name,
        "content_hash": corp.content_hash,
        "splits": corp.loaded_splits,
        # A synthetic corpus's generation rates (targets per task x outcome), else null.
        "rates": _rates_record(corp.manifest),
    }
    if as_json:
        click.echo(json.dumps({"corpus": header, **st, "http_coverage": coverage}, indent=2))
        return
    console = stdout_console()
    console.print(
        f"corpus [bold]{escape(corp.name)}[/] {corp.content_hash[:16]}  "
        f"splits: {', '.join(corp.loaded_splits)}"
    )
    console.print()
    console.print(
        _outcome_table(console, "per generator", "generator", st["generators"], st["overall"])
    )
    print_note(console, OUTCOME_NOTE)
    dim_of = {t.task: t.dimension.value for t in corp.trajectories()}
    tasks = {f"{k} ({dim_of.get(k, '?')})": v for k, v in st["tasks"].items()}
    console.print(_outcome_table(console, "per task (dimension)", "task", tasks))
    print_note(console, TASK_NOTE)
    _print_task_outcomes(console, st, _rates_record(corp.manifest))
    bal: list[Row] = [
        (
            [d, str(b["pass"]), str(b["fail"]), str(b["unlabelled"]), _pct(b["failure_rate"])],
            None,
        )
        for d, b in st["dimensions"].items()
    ]
    console.print(
        fitted_table(
            console,
            "label balance per dimension (valid runs)",
            ["dimension", "pass", "fail", "unlabelled", "failure share"],
            bal,
        )
    )
    print_note(console, BALANCE_NOTE)
    _print_agreement(console, st["agreement"], st["oracle"])
    _print_coverage(console, coverage)


def _print_coverage(console: Console, cov: dict[str, Any]) -> None:
    def cells(name: str, b: dict[str, Any]) -> list[str]:
        return [name, str(b["runs"]), str(b["http_steps"]), str(b["unparsed"]), _pct(b["share"])]

    rows: list[Row] = [(cells(k, b), None) for k, b in cov["styles"].items()]
    rows += [SECTION, (cells("overall", cov["overall"]), "bold")]
    headers = ["style", "runs", "HTTP steps", "unparsed", "unparsed%"]
    console.print(fitted_table(console, "view HTTP coverage per style", headers, rows))
    cap = f" (at most {cov['per_style']} per style)" if cov["per_style"] else ""
    print_note(console, COVERAGE_NOTE.format(runs=cov["runs"], cap=cap))


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
        rows: list[Row] = [([g, str(n)], None) for g, n in gens.items()]
        console.print(fitted_table(console, "generators", ["generator", "runs"], rows))
        console.print()
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


from monsearch.commands.corpus_export import export_cmd  # noqa: E402
from monsearch.commands.live import fidelity as fidelity_cmd  # noqa: E402
from monsearch.commands.live import live as live_cmd  # noqa: E402
from monsearch.commands.synth import synth  # noqa: E402

corpus.add_command(synth)
corpus.add_command(live_cmd)
corpus.add_command(fidelity_cmd)
corpus.add_command(export_cmd)
