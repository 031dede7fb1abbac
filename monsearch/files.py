"""Writing files safely: whole or not at all, one writer at a time, checked before work.

The one place for what every writer of monsearch needs (corpora, run folders, reports,
the view cache, the sealed-test ledger):

- :func:`atomic_write` writes a temporary file beside the target (its name carries the
  writer's pid), optionally fsyncs it, and renames it into place: a reader sees the old
  file or the new one, never half of one, and a crash leaves at most a temporary file;
- :func:`exclusive_lock` holds an ``flock`` on a lock file for a block: the kernel drops
  it when the process dies, however it dies;
- :func:`ensure_writable_dir` / :func:`ensure_writable_file` check an output before any
  work starts, by creating and removing a real probe (permission bits lie to root).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from monsearch.errors import MonsearchError


def fsync_dir(path: Path) -> None:
    """Make a rename in ``path`` durable (not every platform allows it: then a no-op)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path: str | Path, data: bytes | str, *, durable: bool = False) -> Path:
    """Write ``data`` to ``path`` whole or not at all (text is written as UTF-8).

    ``durable``: fsync the file and its folder, so the new content survives a power cut
    (for the few files whose loss would cost a user something: run records, ledgers).
    Creates missing parent folders.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            fh.write(raw)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    if durable:
        fsync_dir(path.parent)
    return path


@contextlib.contextmanager
def exclusive_lock(lock_file: str | Path, *, wait: bool = True) -> Iterator[int]:
    """Hold an exclusive ``flock`` on ``lock_file`` (created if needed) for the block;
    waits for another holder, or with ``wait=False`` raises :class:`BlockingIOError`
    at once. Yields the lock's file descriptor. Where the platform has no ``flock``,
    the block runs unlocked."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock on this platform
        yield -1
        return
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        yield fd
    finally:
        os.close(fd)  # closing drops the lock


# --------------------------------------------------------------------------- checks


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


def nearest_existing(start: Path, what: str, shown: Path) -> Path:
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


def probe_dir(folder: Path, what: str, target: Path) -> None:
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
    e.g. ``"corpus folder"`` or ``"cache folder"``. Nothing is left behind.
    """
    path = Path(path).expanduser()
    probe_dir(nearest_existing(path.absolute(), what, path), what, path)


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
    folder = nearest_existing(parent, what, path)
    try:
        fd, probe = tempfile.mkstemp(prefix=".monsearch-probe-", dir=folder)
    except OSError as exc:
        reason = f"cannot create a file in {folder} ({_reason(exc)})"
        raise UnwritablePathError(what, path, reason) from None
    os.close(fd)
    with contextlib.suppress(OSError):  # a file we just made can be removed
        os.unlink(probe)
