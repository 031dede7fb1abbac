"""Checking outputs before any work (the checks live in :mod:`monsearch.files`), and
holding a corpus folder for the length of a command.

A command that generates for half a minute and then fails to write its result
wastes the user's time and, worse, used to end in a traceback. Every command
that writes calls :func:`ensure_writable_dir` or :func:`ensure_writable_file`
on its outputs first. The check does not trust permission bits (a root user
passes every ``access`` test, yet cannot create anything under ``/proc`` or
under a regular file): it creates and removes a real probe in the nearest
existing folder, so what passes here can be written later.

Nothing is left behind: missing parent folders are not created (the writer
creates them when it writes), and the probe is removed at once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import click

from monsearch.files import (
    UnwritablePathError,
    ensure_writable_dir,
    ensure_writable_file,
    nearest_existing,
    probe_dir,
)


@contextlib.contextmanager
def writing_corpus(out: Path) -> Iterator[None]:
    """Everything a command that writes the corpus folder ``out`` does before its work.

    Checks that ``out`` can be written and is not something the store refuses to
    replace, then holds the writer lock on it for the whole command (a second
    writer is refused with exit 2), and reports the leftovers of killed writers
    that taking the lock removed.
    """
    from monsearch.corpora.store import check_writable_target, corpus_lock

    what = "corpus folder"
    out = Path(out).expanduser()
    absolute = out.absolute()
    # The store writes a temporary folder and a lock file beside ``out`` and renames
    # the folder into place: what must be writable is the folder that holds ``out``.
    probe_dir(nearest_existing(absolute.parent, what, out), what, out)
    check_writable_target(out)
    with corpus_lock(out) as lock:
        for path in lock.removed:
            click.echo(f"removed {path}, left by a writer that no longer runs", err=True)
        yield


__all__ = ["UnwritablePathError", "ensure_writable_dir", "ensure_writable_file", "writing_corpus"]
