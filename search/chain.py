"""The lineage's hash chain: every entry of a run linked to the one before it, as written.

Each candidate row, each freezing of the selected strategy, and the run's settings
when it starts (and when a resume changes them) append one entry to the ``chain`` table
of ``lineage.sqlite``, in the same transaction as the row::

    digest = sha256(previous digest | kind | sha256(canonical content))

starting from ``sha256(tag | run uid)`` (a random id made when the store is created).
A candidate's content is the whole row (timings included), the sha256 of its val
scores and its spend rows; a freezing's content is the frozen record
(``SelectedStrategy.to_dict()``) as canonical JSON, and a settings entry's the
settings (``config.json`` without its ``versions``) as canonical JSON. ``meta`` keeps
the head, the length and the head's seal (:mod:`.run_key`). :func:`verify` recomputes
the chain and names the first entry that differs.

What this protects: an edited, inserted or deleted row, or a forged freezing, is
found, as long as the digests were not recomputed. Whoever rewrites the whole file
with this public recipe makes a consistent chain; that is caught by the seal, which
needs a key kept outside the folder, and against the ledger's record of the folder
(:mod:`.frozen`). Runs made before the chain (lineage schema 1) cannot be verified.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from dataclasses import dataclass
from typing import Any

from monsearch.errors import MonsearchError

TAG = "monsearch-lineage-chain/1"
CANDIDATE = "candidate"
FROZEN = "frozen"
CONFIG = "config"


class RunIntegrityError(MonsearchError):
    """A run folder that differs from what the run recorded, or cannot be verified."""

    exit_code = 2


def canonical(value: Any) -> str:
    """The exact text hashed: sorted keys, no spaces; NaN spelled out, never refused."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=True)


def _sha(text: str | bytes) -> str:
    return hashlib.sha256(text.encode("utf-8") if isinstance(text, str) else text).hexdigest()


def genesis(run_uid: str) -> str:
    return _sha(f"{TAG}\n{run_uid}")


def link(previous: str, kind: str, content: str) -> str:
    return _sha(f"{previous}\n{kind}\n{content}")


def candidate_content(row: Any, val: bytes | None, spend: list[Any]) -> str:
    """Digest of one candidate: its row (every column), val scores (raw float64) and spend."""
    return _sha(
        canonical(
            {
                "row": list(row),
                "val": None if val is None else _sha(val),
                "spend": [list(s) for s in spend],
            }
        )
    )


def frozen_content(record_text: str) -> str:
    return _sha(record_text)


def val_bytes(blob: bytes | None) -> bytes | None:
    return None if blob is None else zlib.decompress(blob)


@dataclass(frozen=True)
class Chain:
    """A verified chain: the run's id, each entry's digest, and the freezings in order."""

    run_uid: str
    digests: tuple[str, ...]
    #: ``(position, record)`` of every freezing, oldest first.
    frozen: tuple[tuple[int, dict[str, Any]], ...]
    #: ``(position, settings)`` of every settings entry, oldest first.
    configs: tuple[tuple[int, dict[str, Any]], ...] = ()

    @property
    def head(self) -> str:
        return self.digests[-1] if self.digests else genesis(self.run_uid)

    @property
    def length(self) -> int:
        return len(self.digests)


def _who(material: dict[int, Any], seq: int) -> str:
    row = material.get(seq)
    return f"candidate {row[0]['id']} (seq {seq})" if row else f"candidate seq {seq}"


def verify(store: Any, where: str) -> tuple[Chain, dict[int, Any]]:
    """Recompute the chain of ``store``; :class:`RunIntegrityError` naming what differs.

    Returns the chain and every candidate's material (row, val bytes, spend), read
    once, so callers use exactly what was verified.
    """
    if not store.chained:
        raise RunIntegrityError(
            f"{where}: made before runs carried an integrity chain (lineage schema "
            f"{store.schema_version}); it cannot be verified, so test, export, score and "
            "--resume refuse it (runs, lineage, show and report still read it; an evolve "
            "with the same seed and corpus remakes it)"
        )
    uid = store.get_meta("run_uid")
    if not uid:
        raise RunIntegrityError(f"{where}: lineage.sqlite has no run id (meta run_uid removed)")
    material = store.candidate_material()
    entries = store.chain_entries()
    previous = genesis(uid)
    digests: list[str] = []
    frozen: list[tuple[int, dict[str, Any]]] = []
    configs: list[tuple[int, dict[str, Any]]] = []
    chained: set[int] = set()
    for i, (pos, kind, seq, record, digest) in enumerate(entries):
        if pos != i:
            raise RunIntegrityError(
                f"{where}: lineage.sqlite chain entry {i} is missing (entries removed)"
            )
        if kind == CANDIDATE:
            if seq not in material:
                raise RunIntegrityError(
                    f"{where}: lineage.sqlite: {_who(material, seq)} was recorded (chain entry "
                    f"{pos}) but its row is gone (deleted)"
                )
            if seq in chained:
                raise RunIntegrityError(
                    f"{where}: lineage.sqlite: chain entry {pos} repeats {_who(material, seq)}"
                )
            chained.add(seq)
            content = candidate_content(*material[seq])
            what = _who(material, seq)
        elif kind in (FROZEN, CONFIG) and isinstance(record, str):
            content = frozen_content(record)
            try:
                parsed = json.loads(record)
            except ValueError:
                parsed = None
            name = "freezing" if kind == FROZEN else "settings"
            if not isinstance(parsed, dict):
                raise RunIntegrityError(
                    f"{where}: lineage.sqlite: {name} record at chain entry {pos} is unreadable"
                )
            what = (
                f"the freezing of strategy {parsed.get('id')} (chain entry {pos})"
                if kind == FROZEN
                else f"the run's settings (chain entry {pos})"
            )
        else:
            raise RunIntegrityError(
                f"{where}: lineage.sqlite: chain entry {pos} has an unknown kind {kind!r}"
            )
        expected = link(previous, kind, content)
        if digest != expected:
            raise RunIntegrityError(
                f"{where}: lineage.sqlite: {what} differs from what the run recorded when it "
                "was written (its chain digest does not match): the file was edited"
            )
        if kind == FROZEN:
            frozen.append((pos, parsed))
        elif kind == CONFIG:
            configs.append((pos, parsed))
        digests.append(digest)
        previous = digest
    extra = sorted(set(material) - chained)
    if extra:
        raise RunIntegrityError(
            f"{where}: lineage.sqlite: {_who(material, extra[0])} has no chain entry "
            f"({len(extra)} row(s) added outside the run)"
        )
    for seq, (row, _val, _spend) in material.items():
        if row["source"] is not None and row["source_hash"] != _sha(row["source"]):
            raise RunIntegrityError(
                f"{where}: lineage.sqlite: {_who(material, seq)}: its source does not match "
                "its source_hash"
            )
    head, length = store.get_meta("chain_head"), store.get_meta("chain_length")
    chain = Chain(uid, tuple(digests), tuple(frozen), tuple(configs))
    if head != chain.head or length != str(chain.length):
        raise RunIntegrityError(
            f"{where}: lineage.sqlite's recorded head ({length} entries) does not match its "
            f"chain ({chain.length} entries): entries were removed or added after the run "
            "wrote them"
        )
    return chain, material
