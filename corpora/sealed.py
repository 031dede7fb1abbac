"""The label guard: the search reads ``train`` and ``val`` only; sealed splits are read once.

``test`` and the cross-generator splits (``xgen-*``) are *sealed* (docs/DESIGN.md, "Sealed
test"): their labels are read by ``monsearch test`` and by nothing else. Two doors:

- :func:`open_for_search` gives the search a :class:`SearchCorpus`: it loads only the
  ``train`` / ``val`` part files (sealed part files are never opened) and refuses any
  sealed split with :class:`SealedSplitError`. Sealed splits are visible by name and
  size only (no label counts);
- :func:`open_sealed` loads every split for the sealed test. It checks its caller:
  only the modules in :data:`SEALED_READERS` may use it, so a new reader of test labels
  is a deliberate change to this file, not an accident.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monsearch.corpora.model import Trajectory
from monsearch.corpora.splits import MAIN_SPLITS, TEST, TRAIN, VAL, XGEN_PREFIX, split_order
from monsearch.corpora.store import Corpus, Manifest, StoreError, load_corpus, read_manifest
from monsearch.errors import MonsearchError

#: The splits a search may read (labels included).
SEARCH_SPLITS: tuple[str, ...] = (TRAIN, VAL)
#: Modules allowed to read sealed labels (the sealed test and nothing else).
SEALED_READERS: frozenset[str] = frozenset({"monsearch.api.sealed_test"})


class SealedSplitError(MonsearchError):
    """A sealed split (``test`` or ``xgen-*``) was asked for outside the sealed test."""


def is_sealed(split: str) -> bool:
    """Whether ``split`` is sealed: ``test`` or a cross-generator split."""
    return split == TEST or split.startswith(XGEN_PREFIX)


def _refuse(split: str) -> SealedSplitError:
    return SealedSplitError(
        f"split {split!r} is sealed: its labels are read once, by `monsearch test`; "
        f"a search reads {' and '.join(SEARCH_SPLITS)} only"
    )


@dataclass(frozen=True)
class CorpusIdentity:
    """What identifies a corpus in a run and in the sealed-test ledger."""

    name: str
    content_hash: str
    assignment_hash: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "content_hash": self.content_hash,
            "assignment_hash": self.assignment_hash,
        }


def identity_of(manifest: Manifest) -> CorpusIdentity:
    return CorpusIdentity(manifest.name, manifest.content_hash, manifest.assignment_hash)


class SearchCorpus:
    """A corpus as the search sees it: ``train`` and ``val`` (see the module doc).

    ``split(name)`` returns the trajectories (labels included) of a search split and
    raises :class:`SealedSplitError` for a sealed one. ``sealed_splits`` and
    ``split_sizes`` say which sealed splits exist and how big they are, never what
    their labels are.
    """

    def __init__(self, corpus: Corpus) -> None:
        self._corpus = corpus
        self.path: Path = corpus.path
        self.identity = identity_of(corpus.manifest)

    @property
    def name(self) -> str:
        return self.identity.name

    @property
    def content_hash(self) -> str:
        return self.identity.content_hash

    @property
    def assignment_hash(self) -> str | None:
        return self.identity.assignment_hash

    @property
    def splits(self) -> list[str]:
        """The search splits loaded (a subset of :data:`SEARCH_SPLITS`)."""
        return self._corpus.loaded_splits

    @property
    def sealed_splits(self) -> list[str]:
        return [s for s in self._corpus.split_names if is_sealed(s)]

    @property
    def cross_generator_splits(self) -> list[str]:
        return list(self._corpus.cross_generator_splits)

    @property
    def split_sizes(self) -> dict[str, int]:
        """Trajectories per split, every split (sizes only: no labels)."""
        parts = self._corpus.manifest.parts
        return {s: parts[s].count for s in self._corpus.split_names}

    def part_sha256(self, split: str) -> str:
        """The sha256 of a search split's part file (a cache identity for its views)."""
        if is_sealed(split):
            raise _refuse(split)
        return self._corpus.manifest.parts[split].sha256

    def split(self, name: str) -> list[Trajectory]:
        if is_sealed(name):
            raise _refuse(name)
        return self._corpus.split(name)

    def trajectories(self) -> list[Trajectory]:
        """Every loaded (search) trajectory, train first."""
        return self._corpus.trajectories()

    def __repr__(self) -> str:
        return f"SearchCorpus({self.name!r}, splits={self.splits})"


def open_for_search(path: str | Path, splits: Iterable[str] = SEARCH_SPLITS) -> SearchCorpus:
    """The corpus at ``path`` with ``splits`` (default train and val) loaded for a search.

    Refuses sealed split names (:class:`SealedSplitError`) before reading anything;
    an unsplit corpus is refused too (a search needs train and val).
    """
    wanted = split_order(splits)
    for s in wanted:
        if is_sealed(s):
            raise _refuse(s)
        if s not in SEARCH_SPLITS:
            raise StoreError(f"split {s!r}: a search reads {' and '.join(SEARCH_SPLITS)}")
    manifest = read_manifest(Path(path))
    if not manifest.is_split:
        raise StoreError(
            f"{path}: the corpus is unsplit; a search needs train and val "
            "(run `monsearch corpus split`)"
        )
    return SearchCorpus(load_corpus(Path(path), wanted))


def read_identity(path: str | Path) -> tuple[CorpusIdentity, list[str]]:
    """The corpus identity and its sealed split names, from the manifest alone."""
    manifest = read_manifest(Path(path))
    return identity_of(manifest), [s for s in manifest.split_names if is_sealed(s)]


def open_sealed(path: str | Path) -> Corpus:
    """Every split of the corpus at ``path``, sealed ones included: for the sealed test only.

    Raises :class:`SealedSplitError` when called from a module not in
    :data:`SEALED_READERS`.
    """
    caller = sys._getframe(1).f_globals.get("__name__", "?")
    if caller not in SEALED_READERS:
        raise SealedSplitError(
            f"{caller} may not read sealed splits: only the sealed test "
            f"({', '.join(sorted(SEALED_READERS))}) does"
        )
    manifest = read_manifest(Path(path))
    if not manifest.is_split:
        raise StoreError(f"{path}: the corpus is unsplit; it has no sealed splits")
    missing = [s for s in MAIN_SPLITS if s not in manifest.parts]
    if missing:
        raise StoreError(f"{path}: no split {', '.join(missing)}")
    return load_corpus(Path(path))
