"""Options and look-ups that several commands share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from monsearch.errors import MonsearchError


def corpus_option(dest: str = "corpus_dir") -> Any:
    """``--corpus DIR``; absent means the embedded default synthetic corpus."""
    return click.option(
        "--corpus",
        dest,
        type=click.Path(path_type=Path, file_okay=False),
        help="Corpus folder (default: the embedded synthetic corpus, built once and cached).",
    )


def splits_option(default_help: str) -> Any:
    return click.option(
        "--split",
        "splits",
        multiple=True,
        metavar="SPLIT",
        help=f"Look only in these splits (repeatable). Default: {default_help}.",
    )


def find_trajectory(corpus_dir: Path | None, splits: tuple[str, ...], trajectory_id: str) -> Any:
    """The trajectory ``trajectory_id`` from the named splits (default: train and val).

    Sealed splits (test, cross-generator) are read only when named explicitly.
    """
    from monsearch.commands.synth import resolve_corpus
    from monsearch.corpora.store import load_corpus

    corp = load_corpus(resolve_corpus(corpus_dir, quiet=True), list(splits) or ["train", "val"])
    for traj in corp.trajectories():
        if traj.id == trajectory_id:
            return traj
    raise MonsearchError(
        f"no trajectory {trajectory_id!r} in split(s) {', '.join(corp.loaded_splits)} of {corp.path}"
    )
