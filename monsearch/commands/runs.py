"""Inspecting runs: ``monsearch runs``, ``lineage``, ``show``, ``report``."""

from __future__ import annotations

import click


@click.command("runs")
def runs_cmd() -> None:
    """List runs (placeholder while the inspection commands are written)."""
    raise click.ClickException("not yet available")


@click.command("lineage")
def lineage_cmd() -> None:
    """Show a run's ancestry tree (placeholder)."""
    raise click.ClickException("not yet available")


@click.command("show")
def show_cmd() -> None:
    """Show one candidate (placeholder)."""
    raise click.ClickException("not yet available")


@click.command("report")
def report_cmd() -> None:
    """Write a run's HTML report (placeholder)."""
    raise click.ClickException("not yet available")
