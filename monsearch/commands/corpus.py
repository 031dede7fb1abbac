"""``monsearch corpus ...``: import, split, synthesise and inspect corpora."""

from __future__ import annotations

import click


@click.group()
def corpus() -> None:
    """Build, split and inspect labelled trajectory corpora."""
