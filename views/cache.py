"""Views built once per set of trajectories and cached on disk, for fast worker start.

Parsing trajectories into views costs about a millisecond each (a few seconds for a
``val`` split), and every worker of every pool needs them. The host builds them
once, with labels stripped (:func:`.workers.strip_for_sandbox`), and pickles the
list to ``<cache>/views/<key>.pkl``; a worker loads the file in a fraction of a
second and only then gives each view its pool-salted id.

The key covers what the views depend on: the caller's identity of the trajectories
(for a corpus: content hash, split and the split assignment) or, without one, a
hash of the stripped trajectories themselves; the trajectory ids in order; and a
fingerprint of the view-building code (:data:`VIEW_CODE_FINGERPRINT`), so an edited
parser never reuses stale views. Files are written atomically; a corrupt or
truncated file is rebuilt; the oldest entries are pruned beyond
:data:`MAX_ENTRIES`. When the cache folder cannot be written, the views go to the
pool's own temporary folder instead (the run works, only slower next time).

The cache holds only what programs may see (no labels, no verdicts, no meta); the
view ``id`` field is blank there and set by each worker from the pool's secret.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import pickle
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from monsearch.files import atomic_write
from monsearch.views.frozen import FrozenDict

#: Bump when the stored layout changes in a way the code fingerprint would not show.
VIEW_CACHE_FORMAT = 1
MAX_ENTRIES = 8
_MODEL_MODULE = Path(__file__).resolve().parent.parent / "corpora" / "model.py"

Progress = Callable[[str, int, int], None]


def _code_fingerprint(folder: Path | None = None) -> str:
    """sha256 over the modules of ``folder`` (this one by default) and the data model."""
    h = hashlib.sha256(f"format {VIEW_CACHE_FORMAT}\0".encode())
    # Every module of the folder: the view is built across many of them, and a list of
    # names would fall behind when one is added or split.
    here = folder or Path(__file__).resolve().parent
    for path in [*sorted(here.glob("*.py")), _MODEL_MODULE]:
        with contextlib.suppress(OSError):
            h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


#: sha256 over the view-building modules' source: part of every cache key.
VIEW_CODE_FINGERPRINT = _code_fingerprint()


def views_key(ids: Sequence[str], identity: str | None, trajectories_blob: bytes | None) -> str:
    """The cache key of the views of trajectories ``ids``.

    ``identity`` names the trajectories' content (e.g. a corpus content hash plus the
    split and its assignment hash); without it, ``trajectories_blob`` (the pickled,
    stripped trajectories) is hashed instead.
    """
    h = hashlib.sha256(VIEW_CODE_FINGERPRINT.encode() + b"\0")
    if identity:
        h.update(b"identity\0" + identity.encode("utf-8") + b"\0")
    else:
        if trajectories_blob is None:
            raise ValueError("views_key needs an identity or the trajectories")
        h.update(b"content\0" + hashlib.sha256(trajectories_blob).digest())
    h.update("\n".join(ids).encode("utf-8", "replace"))
    return h.hexdigest()[:32]


def build_views_file(
    trajectories: Sequence[Any], path: Path, progress: Progress | None = None
) -> Path:
    """Build the views of (stripped) ``trajectories`` and pickle them to ``path`` atomically."""
    from monsearch.views.build import build_view

    n = len(trajectories)
    views = []
    step = max(1, n // 100)
    was_enabled = gc.isenabled()
    gc.disable()  # views hold no cycles; collecting over them costs a quarter of the time
    try:
        for i, traj in enumerate(trajectories):
            view = build_view(traj)
            dict.__setitem__(view, "id", "")  # each pool salts its own ids
            views.append(view)
            if progress is not None and (i % step == 0 or i == n - 1):
                progress("building views", i + 1, n)
        blob = pickle.dumps(views, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        if was_enabled:
            gc.enable()
    path.parent.mkdir(parents=True, exist_ok=True)
    seal = f"{n} {len(blob)} {hashlib.sha256(blob).hexdigest()}\n".encode()
    # The data first, its seal last: a seal always describes a complete file.
    for target, data in ((path, blob), (_seal_path(path), seal)):
        atomic_write(target, data)
    return path


def _seal_path(path: Path) -> Path:
    return path.with_suffix(".sha256")


def ensure_views_file(
    trajectories: Sequence[Any],
    key: str,
    cache_dir: Path | None,
    fallback_dir: Path,
    progress: Progress | None = None,
) -> tuple[Path, bool]:
    """The path of the views file for ``key`` and whether it was already cached.

    Builds it in ``cache_dir/views`` (or ``fallback_dir`` when that cannot be written).
    """
    if cache_dir is not None:
        folder = cache_dir / "views"
        path = folder / f"{key}.pkl"
        if _valid(path, len(trajectories)):
            with contextlib.suppress(OSError):
                os.utime(path)  # recently used: pruned last
            return path, True
        try:
            build_views_file(trajectories, path, progress)
        except OSError:
            pass
        else:
            _prune(folder, keep=path)
            return path, False
    return build_views_file(trajectories, fallback_dir / f"{key}.pkl", progress), False


def _valid(path: Path, n: int) -> bool:
    """A cached file whose seal matches: ``n`` views, its size and sha256."""
    try:
        count, size, digest = _seal_path(path).read_text().split()
        if int(count) != n or path.stat().st_size != int(size):
            return False
        return hashlib.sha256(path.read_bytes()).hexdigest() == digest
    except (OSError, ValueError):
        return False


def _prune(folder: Path, keep: Path) -> None:
    try:
        entries = sorted(
            (p for p in folder.glob("*.pkl") if p != keep),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
    except OSError:
        return
    for old in entries[MAX_ENTRIES - 1 :]:
        for stale in (old, _seal_path(old)):
            with contextlib.suppress(OSError):
                stale.unlink()


def load_views(path: Path, ids: Sequence[str], id_key: bytes) -> tuple[FrozenDict, ...]:
    """Load a views file (in a worker) and give each view its salted id."""
    from monsearch.views.ids import view_id

    # Unpickling allocates millions of containers: without the cyclic GC's repeated
    # passes over them (views hold no cycles) loading is about five times faster.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        with open(path, "rb") as fh:
            views = pickle.load(fh)  # noqa: S301 - written by the host of this pool
    finally:
        if was_enabled:
            gc.enable()
    if len(views) != len(ids):
        raise ValueError(f"{path}: {len(views)} views for {len(ids)} trajectories")
    set_item = dict.__setitem__  # the views are read-only to programs, not to us
    for view, traj_id in zip(views, ids, strict=True):
        set_item(view, "id", view_id(traj_id, id_key))
    return tuple(views)
