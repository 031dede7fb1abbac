"""``monsearch corpus export``: chosen trajectories of a corpus written as files.

The files are what ``monsearch score``, ``corpus import`` and other ATIF tools
read: canonical ATIF (one ``<id>.json`` each) or a StealthBench results tree
(see :mod:`monsearch.corpora.writers`). Trajectories are chosen by id, or from
a split (``--split val --label fail --limit 5``); as everywhere, the sealed
splits (test, cross-generator) are read only when named.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from monsearch.commands.options import corpus_option, split_names_callback
from monsearch.errors import MonsearchError

LABELS = ("fail", "pass")


def _chosen(corp: Any, ids: tuple[str, ...], label: str | None, limit: int | None) -> list[Any]:
    """``(split, trajectory)`` pairs: the named ids in the order given, else the splits'
    trajectories in stored order, filtered by panel label, at most ``limit``."""
    pairs = [(s, t) for s in corp.loaded_splits for t in corp.split(s)]
    if ids:
        by_id = {t.id: (s, t) for s, t in pairs}
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise MonsearchError(
                f"no trajectory {', '.join(map(repr, missing))} in split(s) "
                f"{', '.join(corp.loaded_splits)} of {corp.path} (sealed splits are searched "
                "only when named with --split)"
            )
        pairs = [by_id[i] for i in dict.fromkeys(ids)]
    if label is not None:
        want = label == "fail"
        pairs = [(s, t) for s, t in pairs if t.label is not None and t.label.is_failure == want]
    return pairs if limit is None else pairs[:limit]


@click.command("export")
@click.argument("ids", nargs=-1, metavar="[ID]...")
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder to write into (created if missing); a file already there is never replaced.",
)
@corpus_option("directory")
@click.option(
    "--split",
    "splits",
    multiple=True,
    metavar="SPLIT",
    callback=split_names_callback,
    help="Take trajectories from these splits (repeatable). With IDs, where to look "
    "[default: train and val; sealed splits are read only when named].",
)
@click.option(
    "--label",
    type=click.Choice(LABELS),
    default=None,
    help="Only runs the label panel judged an OPSEC failure (fail) or stealthy (pass).",
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most this many.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["atif", "stealthbench"]),
    default="atif",
    show_default=True,
    help="Canonical ATIF files (<id>.json), or a StealthBench results tree "
    "(trajectories/<model>/<task>/<id>/trajectory.atif.json and the verdict files).",
)
@click.option(
    "--no-labels",
    is_flag=True,
    help="Leave the verdicts out (files to hand to someone who should not see them).",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON on stdout.")
def export_cmd(
    ids: tuple[str, ...],
    out: Path,
    directory: Path | None,
    splits: tuple[str, ...],
    label: str | None,
    limit: int | None,
    fmt: str,
    no_labels: bool,
    as_json: bool,
) -> None:
    """Write trajectories of a corpus as files: by ID, or from a --split.

    \b
    monsearch corpus export --split val --label fail --limit 3 --out my-runs
    monsearch corpus export syn-adtech-admin-0-000044 --format stealthbench --out results

    With ATIF, the task, outcome and verdicts go under extra.monsearch (what
    `corpus import` reads back); with the StealthBench tree, the label panel goes
    to panel-verdicts/ and the oracle's verdicts to verdicts/ (import them back
    with --oracle-judge). Exit 2, before anything is written, for an unknown id
    or split, or a file that is already there.
    """
    from monsearch.commands.paths import ensure_writable_dir
    from monsearch.commands.synth import resolve_corpus
    from monsearch.corpora.store import load_corpus
    from monsearch.corpora.writers import planned_files, write_files

    if not ids and not splits:
        raise click.UsageError(
            "name the trajectories (IDs), or a split to take them from (--split val "
            "[--label fail] [--limit N])"
        )
    ensure_writable_dir(out, "export folder")
    corp = load_corpus(resolve_corpus(directory, quiet=True), list(splits) or ["train", "val"])
    chosen = _chosen(corp, ids, label, limit)
    if not chosen:
        raise MonsearchError(
            f"no trajectory in split(s) {', '.join(corp.loaded_splits)} of {corp.path} "
            f"is labelled {label!r}"
        )
    records = []
    files: dict[str, bytes] = {}
    try:
        for split, traj in chosen:
            own = planned_files([traj], fmt, labels=not no_labels)
            clash = next((p for p in own if p in files or (out / p).exists()), None)
            if clash is not None:
                raise MonsearchError(
                    f"{out / clash} is already there (export into another folder, or remove it)"
                )
            files.update(own)
            first = next(iter(own))  # the trajectory file comes first, its verdicts after
            records.append(
                {"id": traj.id, "split": split, "trajectory": str(out / first), "files": list(own)}
            )
    except ValueError as exc:  # an id or task the StealthBench layout cannot hold
        raise MonsearchError(str(exc)) from None
    write_files(out, files)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "out": str(out),
                    "format": fmt,
                    "labels": not no_labels,
                    "corpus": {"name": corp.name, "content_hash": corp.content_hash},
                    "trajectories": records,
                },
                indent=2,
            )
        )
        return
    for r in records:
        click.echo(f"{r['id']} ({r['split']}): {r['trajectory']}")
    what = "ATIF files" if fmt == "atif" else "a StealthBench results tree"
    n = len(records)
    click.echo(f"wrote {n} {'trajectory' if n == 1 else 'trajectories'} as {what} to {out}")
