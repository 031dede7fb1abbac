"""The one place that says which corpus a command, a run or a library call means.

A corpus folder given by the user is used as it is. Without one, the embedded default
synthetic corpus is meant: built once into the cache (``$MONSEARCH_CACHE``) and reused,
under the corpus writer lock so two processes that need it at once build it once. A run
records which corpus it searched on (``config.json``: the path, or the default's seed and
size, and the folder it resolved to); later commands on the run find the same one here.
The generator (``monsearch.synth``) is called from this floor only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from monsearch.search.config import DEFAULT_CORPUS

#: What the default corpus is made of when nothing else says (the generator's defaults).
DEFAULT_SEED = DEFAULT_CORPUS["seed"]
DEFAULT_SIZE = DEFAULT_CORPUS["size"]


def default_corpus(
    seed: int = DEFAULT_SEED,
    size: int = DEFAULT_SIZE,
    *,
    on_wait: Callable[[str], None] | None = None,
    on_build: Callable[[Path], None] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> Path:
    """The default synthetic corpus for ``seed`` and ``size``, built once and cached.

    The cache folder is checked for writability before anything is generated (a named
    error, not a traceback after the work); ``on_wait(holder)`` is called when another
    process is building it, ``on_build(path)`` when this one starts to.
    """
    from monsearch.corpora.store import MANIFEST, corpus_lock
    from monsearch.files import UnwritablePathError, ensure_writable_dir
    from monsearch.synth.generate import default_corpus_path, ensure_default_corpus

    target = default_corpus_path(seed, size)
    if (target / MANIFEST).is_file():
        return target
    try:
        ensure_writable_dir(target, "the default corpus into the cache folder")
    except UnwritablePathError as exc:
        raise UnwritablePathError(
            exc.what,
            exc.path,
            f"{exc.reason}; set MONSEARCH_CACHE to a writable folder, or pass a corpus folder",
        ) from None
    with corpus_lock(target, wait=True, on_wait=on_wait):
        if not (target / MANIFEST).is_file() and on_build is not None:
            on_build(target)
        return ensure_default_corpus(seed, size, progress=progress)


def resolve_corpus(
    path: str | Path | None,
    *,
    seed: int = DEFAULT_SEED,
    size: int = DEFAULT_SIZE,
    **default_options: Any,
) -> Path:
    """``path`` itself, or the default corpus (see :func:`default_corpus`) when None."""
    if path is not None:
        return Path(path)
    return default_corpus(seed, size, **default_options)


def run_corpus(config: dict[str, Any], **default_options: Any) -> Path:
    """The corpus a run searched on, from its ``config.json``.

    Its recorded path (else the folder the run resolved it to, when the path was
    relative to another directory), or the default corpus of the recorded seed and
    size (rebuilt if the cache lost it: the generator is deterministic). The caller
    checks the corpus's content hash against the run's.
    """
    from monsearch.search.runs import CorpusRef

    corpus = CorpusRef.from_config(config)
    if corpus.path:
        path = Path(corpus.path)
        resolved = corpus.resolved_path
        if not path.exists() and resolved and Path(resolved).exists():
            return Path(resolved)
        return path
    default = corpus.default or {}
    return default_corpus(
        int(default.get("seed") or DEFAULT_SEED),
        int(default.get("size") or DEFAULT_SIZE),
        **default_options,
    )


def load_corpus(
    path: str | Path | None = None,
    splits: Iterable[str] | None = ("train", "val"),
    *,
    seed: int = DEFAULT_SEED,
    size: int = DEFAULT_SIZE,
) -> Any:
    """A corpus from disk (:class:`monsearch.corpora.store.Corpus`), the default one when
    ``path`` is None. ``splits``: which parts to load (None: every part, the sealed
    ``test`` and ``xgen-*`` included — reading those is what a sealed test does once)."""
    from monsearch.corpora.store import load_corpus as load

    folder = resolve_corpus(path, seed=seed, size=size)
    return load(folder, None if splits is None else list(splits))
