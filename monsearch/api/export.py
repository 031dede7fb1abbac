"""Exporting a run's frozen strategy as a monitor plugin (``monsearch export``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .corpus import run_corpus


def export(
    run: str | Path,
    out: str | Path,
    *,
    program: str | None = None,
    name: str | None = None,
    runs_dir: str | Path | None = None,
    verify: bool = True,
) -> dict[str, Any]:
    """Write the plugin of ``run``'s frozen strategy (or candidate ``program``) into
    ``out``; the plugin's ``MONITOR`` metadata. ``verify``: score every val trajectory
    with the written plugin in a fresh interpreter and refuse unless all equal the
    run's scores. The run is verified against its hash chain first."""
    from monsearch.export import check_name, check_out
    from monsearch.export import export as write
    from monsearch.search.runs import resolve_run

    # The folder first: a refusal after the corpus is loaded and val scored wastes seconds.
    if name is not None:
        check_name(name)
    check_out(Path(out))
    found = resolve_run(str(run), runs_dir)
    corpus = run_corpus(found.config())  # the metadata needs val, verified or not
    return write(
        str(found.dir), Path(out), program_id=program, name=name, verify_val=verify,
        corpus=corpus,
    )
