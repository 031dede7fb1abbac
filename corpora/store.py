"""The corpus store: a folder with ``manifest.json`` and one compressed file per split.

Layout::

    <corpus>/manifest.json        name, content hash, counts, split record, part files
    <corpus>/train.jsonl.zst      one canonical JSON trajectory per line, sorted by id
    <corpus>/val.jsonl.zst
    <corpus>/test.jsonl.zst
    <corpus>/xgen-<slug>.jsonl.zst
    (or <corpus>/all.jsonl.zst for an unsplit corpus)

One file per split means loading ``train`` and ``val`` never reads a byte of
``test`` or of a cross-generator split. The content hash is sha256 over the
canonical serialisation of every trajectory sorted by id, so it identifies the
data whatever the split layout or compression. The manifest records each part
file's sha256 and size; loading checks them.

Writes are atomic: everything goes into a temporary folder beside the target,
is fsynced, and is renamed into place (an existing corpus is swapped out by an
atomic exchange where the OS offers one, else by two renames). A crash at any
point leaves either no corpus or the previous one, never a folder that loads.

One writer at a time: a writer holds an exclusive ``flock`` on
``.<name>.lock`` beside the target (see :func:`corpus_lock`), and a second
writer is refused at once rather than silently overwriting the first. The
temporary folder's name carries the writer's pid (``.<name>.tmp-<pid>-<random>``),
so the next writer removes the leftovers of writers that were killed, and only
theirs: the folder of a writer whose pid is still alive is never touched.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import gc
import glob
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zstandard

from monsearch import __version__
from monsearch.corpora.codec import decode, encode
from monsearch.corpora.model import Trajectory
from monsearch.corpora.splits import MAIN_SPLITS, UNSPLIT, XGEN_PREFIX, is_split_name, split_order
from monsearch.errors import MonsearchError
from monsearch.files import fsync_dir

FORMAT = "monsearch-corpus"
SCHEMA_VERSION = 1
CODEC = "jsonl+zstd"
MANIFEST = "manifest.json"
PART_SUFFIX = ".jsonl.zst"
ZSTD_LEVEL = 3  # measured in bench/load_corpus.py: higher levels cost write time, save little
HASH_DOMAIN = b"monsearch-corpus-content/v1\n"
#: DESIGN: an audit budget needs at least 5 benign trajectories per flag.
MIN_BENIGN_PER_FLAG = 5

ProgressFn = Callable[[int, int], None]


class StoreError(MonsearchError):
    """A corpus folder that is missing, incomplete, corrupt or cannot be written."""


class CorpusBusyError(StoreError):
    """Another process is writing the same corpus folder right now."""


@dataclass(frozen=True)
class PartInfo:
    file: str
    sha256: str
    bytes: int
    count: int


@dataclass(frozen=True)
class Manifest:
    name: str
    content_hash: str
    n_trajectories: int
    parts: dict[str, PartInfo]
    counts: dict[str, Any]
    split_info: dict[str, Any] | None = None
    assignment_hash: str | None = None
    schema_version: int = SCHEMA_VERSION
    codec: str = CODEC
    written_by: str = f"monsearch {__version__}"
    format: str = FORMAT
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def split_names(self) -> list[str]:
        return split_order(self.parts)

    @property
    def is_split(self) -> bool:
        return UNSPLIT not in self.parts

    @property
    def cross_generator_splits(self) -> list[str]:
        return [s for s in self.split_names if s.startswith(XGEN_PREFIX)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "schema_version": self.schema_version,
            "name": self.name,
            "content_hash": self.content_hash,
            "assignment_hash": self.assignment_hash,
            "n_trajectories": self.n_trajectories,
            "codec": self.codec,
            "written_by": self.written_by,
            "split_info": self.split_info,
            "parts": {
                s: {"file": p.file, "sha256": p.sha256, "bytes": p.bytes, "count": p.count}
                for s, p in ((s, self.parts[s]) for s in self.split_names)
            },
            "counts": self.counts,
            **({"extra": self.extra} if self.extra else {}),
        }

    @classmethod
    def from_dict(cls, d: Any, where: str) -> Manifest:
        def need(obj: Any, key: str, typ: type | tuple[type, ...], ctx: str = "") -> Any:
            if not isinstance(obj, dict) or key not in obj:
                raise StoreError(f"{where}: {ctx}{key}: missing")
            val = obj[key]
            if not isinstance(val, typ) or (typ is int and isinstance(val, bool)):
                raise StoreError(f"{where}: {ctx}{key}: expected {typ}, got {type(val).__name__}")
            return val

        if not isinstance(d, dict):
            raise StoreError(f"{where}: expected a JSON object")
        if d.get("format") != FORMAT:
            raise StoreError(
                f"{where}: not a monsearch corpus manifest (format {d.get('format')!r})"
            )
        version = need(d, "schema_version", int)
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{where}: corpus schema version {version} is newer than this monsearch "
                f"supports ({SCHEMA_VERSION}); upgrade monsearch"
            )
        codec = need(d, "codec", str)
        if codec != CODEC:
            raise StoreError(f"{where}: unsupported codec {codec!r} (expected {CODEC!r})")
        parts: dict[str, PartInfo] = {}
        for split, p in need(d, "parts", dict).items():
            ctx = f"parts.{split}."
            if not is_split_name(split):
                raise StoreError(f"{where}: parts: invalid split name {split!r}")
            fname = need(p, "file", str, ctx)
            if fname != split + PART_SUFFIX:
                # Also keeps a hand-edited manifest from pointing outside the folder.
                raise StoreError(
                    f"{where}: {ctx}file: expected {split + PART_SUFFIX!r}, got {fname!r}"
                )
            parts[split] = PartInfo(
                file=fname,
                sha256=need(p, "sha256", str, ctx),
                bytes=need(p, "bytes", int, ctx),
                count=need(p, "count", int, ctx),
            )
        if not parts:
            raise StoreError(f"{where}: parts: the corpus has no part files")
        split_info = d.get("split_info")
        if split_info is not None and not isinstance(split_info, dict):
            raise StoreError(f"{where}: split_info: expected an object or null")
        assignment_hash = d.get("assignment_hash")
        if assignment_hash is not None and not isinstance(assignment_hash, str):
            raise StoreError(f"{where}: assignment_hash: expected a string or null")
        return cls(
            name=need(d, "name", str),
            content_hash=need(d, "content_hash", str),
            n_trajectories=need(d, "n_trajectories", int),
            parts=parts,
            counts=need(d, "counts", dict),
            split_info=split_info,
            assignment_hash=assignment_hash,
            schema_version=version,
            codec=codec,
            written_by=str(d.get("written_by", "")),
            extra=d.get("extra", {}) if isinstance(d.get("extra"), dict) else {},
        )


# --------------------------------------------------------------------------- hashing


def content_hash_of(lines_by_id: Iterable[tuple[str, bytes]]) -> str:
    """sha256 over canonical lines in id order (the caller's order is irrelevant)."""
    h = hashlib.sha256(HASH_DOMAIN)
    for _, line in sorted(lines_by_id, key=lambda p: p[0]):
        h.update(line)
        h.update(b"\n")
    return h.hexdigest()


def content_hash(trajectories: Iterable[Trajectory]) -> str:
    """The content hash a corpus of these trajectories would get."""
    return content_hash_of((t.id, encode(t)) for t in trajectories)


def assignment_hash_of(assignment: Mapping[str, str]) -> str:
    h = hashlib.sha256(b"monsearch-split-assignment/v1\n")
    for tid in sorted(assignment):
        h.update(f"{tid}\t{assignment[tid]}\n".encode())
    return h.hexdigest()


# --------------------------------------------------------------------------- counts


def _label_state(t: Trajectory) -> str:
    label = t.label
    return "unlabelled" if label is None else ("fail" if label.is_failure else "pass")


def _sorted_counter(c: Counter[str]) -> dict[str, int]:
    return {k: c[k] for k in sorted(c)}


def _counts(
    trajs: list[Trajectory], split_of: Mapping[str, str], splits: list[str]
) -> dict[str, Any]:
    per_split: dict[str, dict[str, Any]] = {}
    for s in splits:
        members = [t for t in trajs if split_of[t.id] == s]
        labels = Counter(_label_state(t) for t in members)
        benign = labels["pass"]
        per_split[s] = {
            "trajectories": len(members),
            "valid": sum(1 for t in members if t.is_valid),
            "labels": {k: labels[k] for k in ("pass", "fail", "unlabelled")},
            # Smallest audit budget a metric may use on this split (b_lo >= 5/|H|).
            "min_budget": (MIN_BENIGN_PER_FLAG / benign) if benign else None,
            "generators": _sorted_counter(Counter(t.generator for t in members)),
        }
    labels = Counter(_label_state(t) for t in trajs)
    return {
        "splits": per_split,
        "generators": _sorted_counter(Counter(t.generator for t in trajs)),
        "tasks": _sorted_counter(Counter(t.task for t in trajs)),
        "dimensions": _sorted_counter(Counter(t.dimension.value for t in trajs)),
        "labels": {k: labels[k] for k in ("pass", "fail", "unlabelled")},
        "outcomes": _sorted_counter(Counter(t.outcome for t in trajs)),
        "valid": sum(1 for t in trajs if t.is_valid),
        "solved": sum(1 for t in trajs if t.is_solved),
    }


# --------------------------------------------------------------------------- writing


def _write_part(folder: Path, split: str, lines: list[bytes]) -> PartInfo:
    raw = b"".join(line + b"\n" for line in lines)
    data = zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(raw)
    fname = split + PART_SUFFIX
    with open(folder / fname, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return PartInfo(
        file=fname, sha256=hashlib.sha256(data).hexdigest(), bytes=len(data), count=len(lines)
    )


def _write_manifest(folder: Path, manifest: Manifest) -> None:
    text = json.dumps(manifest.to_dict(), indent=2, ensure_ascii=False) + "\n"
    with open(folder / MANIFEST, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2 RENAME_EXCHANGE); False if unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EPERM):
        return False
    raise OSError(err, os.strerror(err), str(b))


# --------------------------------------------------------------------------- one writer at a time

#: Temporary folders of writers that recorded no pid (monsearch 0.1.0) are removed
#: once nothing has touched them for this long.
LEGACY_TEMP_MAX_AGE_S = 3600.0
_PID_TEMP_RE = re.compile(r"^(\d+)-[A-Za-z0-9_]+$")
_LEGACY_TEMP_RE = re.compile(r"^[A-Za-z0-9_]+$")
#: Locks this process holds: lock file path -> [fd, depth]. A lock is re-entrant
#: within a process (the CLI takes it before generating, write_corpus again).
_HELD: dict[str, list[int]] = {}


def _named(out: Path) -> Path:
    """``out`` with a real last component (``.``, ``..`` or ``a/..`` made absolute).

    Temporary folders and the lock file are named after it and made beside it.
    """
    out = Path(out)
    return out if out.name not in ("", ".", "..") else Path(os.path.abspath(out))


def lock_path(out: Path) -> Path:
    """The lock file of the corpus folder ``out``: ``.<name>.lock`` beside it."""
    out = _named(out)
    return out.parent / f".{out.name}.lock"


def _temp_prefix(out: Path, kind: str) -> str:
    return f".{out.name}.{kind}-{os.getpid()}-"


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and has not exited (a zombie counts as exited)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    except OSError:
        return True  # cannot tell: keep its files
    with contextlib.suppress(OSError, IndexError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat[stat.rindex(")") + 2] in "ZX":
            return False
    return True


def _stale_temporaries(out: Path) -> list[Path]:
    """Temporary and backup folders of ``out`` left by writers that are no longer running.

    ``.<name>.tmp-<pid>-*`` of a dead pid; ``.<name>.old-<pid>-*`` (a previous
    corpus mid-replace) of a dead pid only when ``out`` is a complete corpus again,
    since otherwise it is the only copy of the data; folders without a pid (older
    monsearch) once untouched for :data:`LEGACY_TEMP_MAX_AGE_S`.
    """
    out = _named(out)
    parent = out.parent
    if not parent.is_dir():
        return []
    installed = (out / MANIFEST).is_file()
    stale: list[Path] = []
    for kind in ("tmp", "old"):
        prefix = f".{out.name}.{kind}-"
        for entry in parent.glob(glob.escape(prefix) + "*"):
            rest = entry.name[len(prefix) :]
            if not entry.is_dir() or entry.is_symlink():
                continue
            if kind == "old" and not installed:
                continue
            m = _PID_TEMP_RE.match(rest)
            if m:
                pid = int(m.group(1))
                if pid != os.getpid() and not pid_alive(pid):
                    stale.append(entry)
            elif _LEGACY_TEMP_RE.match(rest):
                with contextlib.suppress(OSError):
                    if time.time() - entry.stat().st_mtime > LEGACY_TEMP_MAX_AGE_S:
                        stale.append(entry)
    return sorted(stale)


def remove_stale_temporaries(out: Path) -> list[Path]:
    """Remove what :func:`_stale_temporaries` finds; returns the folders removed."""
    removed = []
    for entry in _stale_temporaries(Path(out)):
        shutil.rmtree(entry, ignore_errors=True)
        if not entry.exists():
            removed.append(entry)
    return removed


def _lock_holder(path: Path) -> str:
    with contextlib.suppress(OSError, ValueError):
        pid = int(path.read_text().strip())
        return f"pid {pid}"
    return "pid unknown"


@dataclass
class WriteLock:
    """A held writer lock on a corpus folder (see :func:`corpus_lock`)."""

    out: Path
    removed: list[Path] = field(default_factory=list)  # stale temporaries cleaned up


@contextlib.contextmanager
def corpus_lock(
    out: Path, *, wait: bool = False, on_wait: Callable[[str], None] | None = None
) -> Iterator[WriteLock]:
    """Hold the exclusive writer lock of the corpus folder ``out``.

    The lock is an ``flock`` on ``.<name>.lock`` beside ``out``, holding the
    writer's pid; the kernel drops it when the process dies, however it dies, and
    the file is removed on release. A second writer raises
    :class:`CorpusBusyError` (exit 2) naming the holder, or with ``wait=True``
    blocks until the first is done (``on_wait(holder)`` is called first). On
    acquiring it, the leftovers of dead writers of ``out`` are removed
    (``WriteLock.removed``). Re-entrant within one process. Creates the parent
    folder of ``out`` if needed.
    """
    out = _named(out)
    lpath = lock_path(out)
    key = os.path.abspath(lpath)
    held = _HELD.get(key)
    if held is not None:
        held[1] += 1
        try:
            yield WriteLock(out)
        finally:
            held[1] -= 1
        return
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock on this platform: no locking
        yield WriteLock(out, remove_stale_temporaries(out))
        return
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"{out}: cannot create its folder: {exc.strerror or exc}") from None
    while True:
        try:
            fd = os.open(lpath, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            raise StoreError(
                f"{out}: cannot create the lock file {lpath}: {exc.strerror or exc}"
            ) from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _lock_holder(lpath)
                if not wait:
                    raise CorpusBusyError(
                        f"{out}: another monsearch process ({holder}) is writing this corpus; "
                        "wait for it to finish or write to another folder"
                    ) from None
                if on_wait is not None:
                    on_wait(holder)
                fcntl.flock(fd, fcntl.LOCK_EX)
            # The file may have been removed (and maybe re-created) by the previous
            # holder between our open and our lock: then this lock guards nothing.
            try:
                same = os.path.samestat(os.stat(lpath), os.fstat(fd))
            except FileNotFoundError:
                same = False
        except BaseException:
            os.close(fd)
            raise
        if same:
            break
        os.close(fd)
    try:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        _HELD[key] = [fd, 1]
        yield WriteLock(out, remove_stale_temporaries(out))
    finally:
        _HELD.pop(key, None)
        # Unlink while still holding the lock, then release: a waiter that locks
        # the unlinked file sees it is gone and starts over on a new one.
        with contextlib.suppress(OSError):
            os.unlink(lpath)
        os.close(fd)


def check_writable_target(out: Path) -> None:
    """Raise :class:`StoreError` if ``out`` is something :func:`write_corpus` would refuse.

    Cheap; the CLI calls it before generating or reading anything.
    """
    _check_replaceable(Path(out))


def _check_replaceable(out: Path) -> None:
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise StoreError(f"{out}: exists and is not a directory; refusing to replace it")
    if out.is_dir() and any(out.iterdir()) and not (out / MANIFEST).is_file():
        raise StoreError(
            f"{out}: exists, is not empty and is not a monsearch corpus; refusing to replace it"
        )


def _install(tmp: Path, out: Path) -> None:
    """Move the finished folder ``tmp`` to ``out``, replacing an old corpus atomically."""
    if not out.exists():
        os.rename(tmp, out)
    elif _exchange(tmp, out):
        shutil.rmtree(tmp)  # now holds the old corpus
    else:
        # No atomic exchange: a crash between the two renames leaves no corpus at
        # ``out`` (never a half-written one); the old one survives beside it.
        old = Path(tempfile.mkdtemp(prefix=_temp_prefix(out, "old"), dir=out.parent))
        old.rmdir()
        os.rename(out, old)
        os.rename(tmp, out)
        shutil.rmtree(old, ignore_errors=True)
    fsync_dir(out.parent)


def write_corpus(
    out: Path,
    trajectories: Iterable[Trajectory],
    *,
    name: str,
    assignment: Mapping[str, str] | None = None,
    split_info: Mapping[str, Any] | None = None,
    progress: ProgressFn | None = None,
) -> Manifest:
    """Write (or atomically replace) the corpus folder ``out``.

    ``assignment`` maps every trajectory id to a split name; without it the
    corpus is unsplit (one ``all`` part). ``split_info`` is the record that
    reproduces the assignment (see :func:`monsearch.corpora.splits.make_split`).
    ``progress(done, total)`` is called while trajectories are encoded.
    """
    out = _named(out)
    if not name or not isinstance(name, str):
        raise StoreError("a corpus needs a non-empty name")
    trajs = list(trajectories)
    total = len(trajs)

    encoded: list[tuple[str, bytes]] = []
    seen: set[str] = set()
    for i, t in enumerate(trajs):
        if t.id in seen:
            raise StoreError(f"duplicate trajectory id {t.id!r}")
        seen.add(t.id)
        encoded.append((t.id, encode(t)))
        if progress is not None and (i % 256 == 255 or i == total - 1):
            progress(i + 1, total)

    if assignment is None:
        split_of = {tid: UNSPLIT for tid in seen}
        splits = [UNSPLIT]
    else:
        missing = sorted(seen - assignment.keys())
        if missing:
            raise StoreError(f"{len(missing)} trajectories have no split, e.g. {missing[:3]}")
        extra = sorted(assignment.keys() - seen)
        if extra:
            raise StoreError(
                f"the split assignment names {len(extra)} unknown trajectories, e.g. {extra[:3]}"
            )
        bad = sorted({s for s in assignment.values() if not is_split_name(s) or s == UNSPLIT})
        if bad:
            raise StoreError(f"invalid split names {bad}: use train, val, test or xgen-<slug>")
        split_of = dict(assignment)
        # A split corpus always has train/val/test files (maybe empty), so its layout is predictable.
        splits = split_order(set(MAIN_SPLITS) | set(split_of.values()))

    by_split: dict[str, list[tuple[str, bytes]]] = {s: [] for s in splits}
    for tid, line in encoded:
        by_split[split_of[tid]].append((tid, line))

    with corpus_lock(out):
        _check_replaceable(out)
        try:
            tmp = Path(tempfile.mkdtemp(prefix=_temp_prefix(out, "tmp"), dir=out.parent))
        except OSError as exc:
            raise StoreError(
                f"{out}: cannot create a folder in {out.parent}: {exc.strerror or exc}"
            ) from None
        try:
            parts: dict[str, PartInfo] = {}
            for s in splits:
                lines = [line for _, line in sorted(by_split[s], key=lambda p: p[0])]
                parts[s] = _write_part(tmp, s, lines)
            manifest = Manifest(
                name=name,
                content_hash=content_hash_of(encoded),
                n_trajectories=total,
                parts=parts,
                counts=_counts(trajs, split_of, splits),
                split_info=dict(split_info)
                if split_info is not None
                else (None if assignment is None else {"method": "given"}),
                assignment_hash=None if assignment is None else assignment_hash_of(split_of),
            )
            _write_manifest(tmp, manifest)  # last: a folder without it never loads
            fsync_dir(tmp)
            _install(tmp, out)
            # A corpus is in place again: backups that dead writers left are obsolete now.
            remove_stale_temporaries(out)
        except OSError as exc:  # disk full, quota, a folder made read-only meanwhile...
            shutil.rmtree(tmp, ignore_errors=True)
            raise StoreError(
                f"{out}: cannot write the corpus: {exc.filename or out}: {exc.strerror or exc}"
            ) from exc
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return manifest


# --------------------------------------------------------------------------- loading


def read_manifest(path: Path) -> Manifest:
    path = Path(path)
    if not path.exists():
        hint = ""
        leftovers = sorted(path.parent.glob(f".{path.name}.old-*")) if path.parent.is_dir() else []
        if leftovers:
            hint = f" (an interrupted replace left the previous corpus at {leftovers[0]})"
        raise StoreError(f"{path}: no such corpus directory{hint}")
    if not path.is_dir():
        raise StoreError(f"{path}: not a corpus directory")
    mpath = path / MANIFEST
    if not mpath.is_file():
        raise StoreError(f"{path}: not a monsearch corpus (no {MANIFEST})")
    try:
        data = json.loads(mpath.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StoreError(f"{mpath}: unreadable manifest: {exc}") from exc
    return Manifest.from_dict(data, str(mpath))


def _read_part(
    path: Path, split: str, info: PartInfo
) -> tuple[list[Trajectory], list[tuple[str, bytes]]]:
    fpath = path / info.file
    try:
        data = fpath.read_bytes()
    except FileNotFoundError:
        raise StoreError(
            f"{fpath}: part file of split {split!r} is missing; the corpus is incomplete"
        ) from None
    except OSError as exc:
        raise StoreError(f"{fpath}: cannot read part file: {exc}") from exc
    if len(data) != info.bytes:
        raise StoreError(
            f"{fpath}: {len(data)} bytes but the manifest says {info.bytes}; "
            "the file is truncated or was modified"
        )
    if hashlib.sha256(data).hexdigest() != info.sha256:
        raise StoreError(
            f"{fpath}: sha256 does not match the manifest; the file is corrupt or was modified"
        )
    try:
        raw = zstandard.ZstdDecompressor().decompress(data)
    except zstandard.ZstdError as exc:
        raise StoreError(f"{fpath}: cannot decompress: {exc}") from exc
    lines = raw.splitlines()
    if len(lines) != info.count:
        raise StoreError(f"{fpath}: {len(lines)} trajectories but the manifest says {info.count}")
    trajs: list[Trajectory] = []
    for i, line in enumerate(lines, 1):
        try:
            trajs.append(decode(line))
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreError(f"{fpath}: line {i}: bad trajectory record: {exc}") from exc
    return trajs, [(t.id, line) for t, line in zip(trajs, lines, strict=True)]


@contextlib.contextmanager
def _gc_paused():
    """Pause the cyclic GC: decoding allocates millions of acyclic objects, and the
    collections it triggers would otherwise take about three quarters of the load time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass
class Corpus:
    """A corpus on disk with some (or all) of its splits loaded into memory."""

    path: Path
    manifest: Manifest
    _loaded: dict[str, list[Trajectory]]

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def content_hash(self) -> str:
        return self.manifest.content_hash

    @property
    def split_names(self) -> list[str]:
        """Every split present on disk, loaded or not."""
        return self.manifest.split_names

    @property
    def loaded_splits(self) -> list[str]:
        return split_order(self._loaded)

    @property
    def cross_generator_splits(self) -> list[str]:
        return self.manifest.cross_generator_splits

    @property
    def is_split(self) -> bool:
        return self.manifest.is_split

    def split(self, name: str) -> list[Trajectory]:
        if name in self._loaded:
            return list(self._loaded[name])
        if name in self.manifest.parts:
            raise StoreError(f"{self.path}: split {name!r} exists but was not loaded")
        raise StoreError(f"{self.path}: no split {name!r}; present: {', '.join(self.split_names)}")

    def trajectories(self) -> list[Trajectory]:
        """All loaded trajectories, split by split in :attr:`split_names` order."""
        return [t for s in self.loaded_splits for t in self._loaded[s]]

    def assignment(self) -> dict[str, str]:
        """Trajectory id -> split name, for the loaded splits."""
        return {t.id: s for s in self.loaded_splits for t in self._loaded[s]}


def load_corpus(
    path: Path, splits: Iterable[str] | None = None, *, verify_content: bool = False
) -> Corpus:
    """Load the named splits (all by default) after checking each part file.

    Only the requested part files are opened. ``verify_content`` recomputes the
    content hash (needs every split) and compares it with the manifest.
    """
    path = Path(path)
    manifest = read_manifest(path)
    wanted = manifest.split_names if splits is None else split_order(splits)
    unknown = [s for s in wanted if s not in manifest.parts]
    if unknown:
        hint = (
            " (the corpus is unsplit: run `monsearch corpus split`)"
            if not manifest.is_split
            else ""
        )
        raise StoreError(
            f"{path}: no split {', '.join(map(repr, unknown))}; present: "
            f"{', '.join(manifest.split_names)}{hint}"
        )
    if verify_content and set(wanted) != set(manifest.parts):
        raise StoreError("verifying the content hash needs every split loaded")
    loaded: dict[str, list[Trajectory]] = {}
    all_lines: list[tuple[str, bytes]] = []
    with _gc_paused():
        for s in wanted:
            trajs, lines = _read_part(path, s, manifest.parts[s])
            loaded[s] = trajs
            if verify_content:
                all_lines.extend(lines)
    if verify_content:
        got = content_hash_of(all_lines)
        if got != manifest.content_hash:
            raise StoreError(
                f"{path}: content hash {got[:16]}... does not match the manifest's "
                f"{manifest.content_hash[:16]}..."
            )
    return Corpus(path=path, manifest=manifest, _loaded=loaded)
