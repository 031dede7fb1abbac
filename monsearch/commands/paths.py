"""Check that an output path can be written before any work is done.

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
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import click

from monsearch.errors import MonsearchError


class UnwritablePathError(MonsearchError):
    """An output path that cannot be written; names the path and the reason."""

    exit_code = 2

    def __init__(self, what: str, path: Path, reason: str) -> None:
        self.what = what
        self.path = path
        self.reason = reason
        super().__init__(f"cannot write {what} {path}: {reason}")


def _reason(exc: OSError) -> str:
    """A short lower-case reason for an OS error (``permission denied``)."""
    if exc.errno is not None:
        return os.strerror(exc.errno).lower()
    return str(exc).lower() or type(exc).__name__


def _nearest_existing(start: Path, what: str, shown: Path) -> Path:
    """The nearest existing ancestor of the absolute path ``start`` (itself included).

    It must be a folder: a component that exists but is not one (a regular file
    in the middle of the path) is reported by name. ``shown`` is the output as
    the user named it, for the message.
    """
    current = start
    while True:
        try:
            exists = current.exists()
        except OSError as exc:  # e.g. a name too long, a loop of links
            raise UnwritablePathError(what, shown, _reason(exc)) from None
        if exists or current.is_symlink() or current.parent == current:
            break
        current = current.parent
    if current.is_symlink() and not current.exists():
        raise UnwritablePathError(what, shown, f"{current} is a broken symbolic link")
    if not current.is_dir():
        if current == shown.absolute():
            raise UnwritablePathError(what, shown, "it exists and is not a folder")
        raise UnwritablePathError(what, shown, f"{current} is a file, not a folder")
    return current


def _probe_dir(folder: Path, what: str, target: Path) -> None:
    """Create and remove a probe folder in ``folder``; raise if that fails."""
    try:
        probe = tempfile.mkdtemp(prefix=".monsearch-probe-", dir=folder)
    except OSError as exc:
        reason = f"cannot create a folder in {folder} ({_reason(exc)})"
        raise UnwritablePathError(what, target, reason) from None
    with contextlib.suppress(OSError):  # a folder we just made can be removed
        os.rmdir(probe)


def ensure_writable_dir(path: Path, what: str) -> None:
    """Raise :class:`UnwritablePathError` (exit 2) unless ``path`` can be a written folder.

    ``path`` may exist (it must then be a folder we can create entries in) or
    not (its nearest existing ancestor must be such a folder; the writer
    creates the missing parents). ``what`` names the output in the message,
    e.g. ``"corpus folder"`` or ``"cache folder"``.
    """
    path = Path(path).expanduser()
    _probe_dir(_nearest_existing(path.absolute(), what, path), what, path)


def ensure_writable_file(path: Path, what: str, *, parents: bool = True) -> None:
    """Raise :class:`UnwritablePathError` (exit 2) unless the file ``path`` can be written.

    An existing ``path`` must be a regular file we can open for writing (it is
    opened for appending and closed at once: its content is untouched). A new
    one needs a folder it can be created in: with ``parents=True`` (the
    default) missing parent folders are fine if they can be created, and the
    writer must create them (``path.parent.mkdir(parents=True,
    exist_ok=True)``); with ``parents=False`` the parent folder must exist.
    """
    path = Path(path).expanduser()
    absolute = path.absolute()
    if absolute.is_dir():
        raise UnwritablePathError(what, path, "it is a folder")
    if absolute.exists():
        if not stat.S_ISREG(absolute.stat().st_mode):
            # /dev/stdout, a FIFO...: opening one may block or consume it; ask instead.
            if not os.access(absolute, os.W_OK):
                raise UnwritablePathError(what, path, "permission denied")
            return
        try:
            with open(absolute, "ab"):
                pass
        except OSError as exc:
            raise UnwritablePathError(what, path, _reason(exc)) from None
        return
    parent = absolute.parent
    if not parents and not parent.exists():
        raise UnwritablePathError(what, path, f"folder {parent} does not exist")
    folder = _nearest_existing(parent, what, path)
    try:
        fd, probe = tempfile.mkstemp(prefix=".monsearch-probe-", dir=folder)
    except OSError as exc:
        reason = f"cannot create a file in {folder} ({_reason(exc)})"
        raise UnwritablePathError(what, path, reason) from None
    os.close(fd)
    with contextlib.suppress(OSError):  # a file we just made can be removed
        os.unlink(probe)


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
    _probe_dir(_nearest_existing(absolute.parent, what, out), what, out)
    check_writable_target(out)
    with corpus_lock(out) as lock:
        for path in lock.removed:
            click.echo(f"removed {path}, left by a writer that no longer runs", err=True)
        yield


__all__ = ["UnwritablePathError", "ensure_writable_dir", "ensure_writable_file", "writing_corpus"]
