"""Options and look-ups that several commands share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from monsearch.errors import MonsearchError


def fractions_callback(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> tuple[float, float, float] | None:
    """``--fractions TRAIN,VAL,TEST``, parsed and checked while the options are parsed.

    So a bad value fails at once, before any corpus is read or generated, with
    what is wrong with the numbers the user gave.
    """
    if value is None:
        return None
    parts = [p.strip() for p in value.split(",")]
    try:
        numbers = [float(p) for p in parts]
    except ValueError:
        raise click.BadParameter(
            f"expected three numbers like 0.6,0.2,0.2 (train, val, test), got {value!r}"
        ) from None
    if len(numbers) != 3:
        raise click.BadParameter(
            f"{value!r} has {len(numbers)} number(s); give three (train, val, test), "
            "like 0.6,0.2,0.2"
        )
    for text, x in zip(parts, numbers, strict=True):
        if not 0.0 <= x <= 1.0:
            raise click.BadParameter(
                f"{text} is not between 0 and 1; each fraction is a share of the trajectories"
            )
    total = sum(numbers)
    if abs(total - 1.0) > 1e-6:
        raise click.BadParameter(
            f"{value} sums to {total:g}; the train, val and test fractions must sum to 1"
        )
    return (numbers[0], numbers[1], numbers[2])


def name_callback(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--name``: absent is fine (a default is derived); empty or blank is not."""
    if value is not None and not value.strip():
        raise click.BadParameter("a corpus name cannot be empty")
    return value


def split_names_callback(
    ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> tuple[str, ...]:
    """``--split``: names of the form a corpus can hold, checked before any corpus is loaded."""
    from monsearch.corpora.splits import is_split_name

    for name in value:
        if not is_split_name(name):
            raise click.BadParameter(
                f"{name!r} is not a split name; splits are train, val, test, all (an unsplit "
                "corpus) and xgen-<generator>"
            )
    return value


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
        callback=split_names_callback,
        help=f"Look only in these splits (repeatable). Default: {default_help}.",
    )


def find_trajectory(corpus_dir: Path | None, splits: tuple[str, ...], trajectory_id: str) -> Any:
    """The trajectory ``trajectory_id`` from the named splits (default: train and val).

    Sealed splits (test, cross-generator) are read only when named explicitly.
    """
    from monsearch.api.corpus import load_corpus

    corp = load_corpus(corpus_dir, list(splits) or ["train", "val"])
    for traj in corp.trajectories():
        if traj.id == trajectory_id:
            return traj
    raise MonsearchError(
        f"no trajectory {trajectory_id!r} in split(s) {', '.join(corp.loaded_splits)} of {corp.path}"
    )
