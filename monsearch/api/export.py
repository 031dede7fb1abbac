"""Exporting a run's frozen strategy as a monitor plugin (``monsearch export``)."""

from __future__ import annotations

from pathlib import Path

from .corpus import run_corpus
from .python_names import speaks_python
from .results import ExportedMonitor


def export_plugin(
    run: str | Path,
    out: str | Path,
    *,
    program: str | None = None,
    name: str | None = None,
    runs_dir: str | Path | None = None,
    verify: bool = True,
) -> ExportedMonitor:
    """:func:`export` in the command line's words (its errors name ``--out``, ``--name``):
    what ``monsearch export`` calls."""
    from monsearch.export import check_name, check_out
    from monsearch.export import export as write
    from monsearch.search.runs import resolve_run

    # The folder first: a refusal after the corpus is loaded and val scored wastes seconds.
    if name is not None:
        check_name(name)
    check_out(Path(out))
    found = resolve_run(str(run), runs_dir)
    corpus = run_corpus(found.config())  # the metadata needs val, verified or not
    monitor = write(
        str(found.dir), Path(out), program_id=program, name=name, verify_val=verify,
        corpus=corpus,
    )
    return ExportedMonitor.from_metadata(out, monitor)


@speaks_python(
    {"--program": "program", "--name": "name", "--runs-dir": "runs_dir", "--out": "out"}
)
def export(
    run: str | Path,
    out: str | Path,
    *,
    program: str | None = None,
    name: str | None = None,
    runs_dir: str | Path | None = None,
    verify: bool = True,
) -> ExportedMonitor:
    """Write the plugin of ``run``'s frozen strategy (or candidate ``program``) into the
    new or empty folder ``out``; an :class:`~monsearch.api.results.ExportedMonitor`
    (``to_dict()``: the plugin's ``MONITOR`` metadata).

    ``run``: a run id (under ``runs_dir``, default ``$MONSEARCH_RUNS`` or ``./runs``) or
    a run folder; it is verified against its hash chain first. ``name``: the monitor's
    name (lower-case letters, digits and ``_``; the package is ``monsearch_<name>``;
    default ``opsec_`` and the strategy hash's first 10 hex digits). ``verify``: score
    every val trajectory with the written plugin in a fresh interpreter and refuse,
    removing the folder, unless every score equals the run's. ``out`` is checked before
    any work: a folder that cannot be created or holds files is refused."""
    return export_plugin(
        run, out, program=program, name=name, runs_dir=runs_dir, verify=verify
    )
