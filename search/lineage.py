"""The run's lineage store: every candidate ever evaluated, never evicted (SQLite).

One row per candidate, written in one transaction when its evaluation finishes,
so a run killed at any moment (``kill -9`` included) keeps every finished
candidate, and resuming replays them (:mod:`.engine`). Rows are immutable once
written, and each is linked into a hash chain as it is written (:mod:`.chain`):
editing, adding or deleting a row afterwards is found by :func:`.chain.verify`.
Every append also renews the chain's *seal* (an HMAC of the head with the user's run
key, :mod:`.run_key`), so a chain rewritten or extended without the key is found too.
Schema 1 stores (made before the chain) are still read, never written.

Two kinds of columns: the *content* of the lineage (what was proposed and what it
scored: identical between two runs with the same seed, corpus and offline
proposer) and *circumstances* (wall-clock timings, when it was written). The
content hash (:meth:`LineageStore.content_hash`) covers the first kind only, so
"the same run, bit for bit" is checkable.

Val scores of each candidate are kept (float64, zlib) in their own table: the
selection's bootstrap, the sealed test's transferred thresholds and the reports
read them.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from monsearch.errors import MonsearchError

from . import chain as _chain
from . import run_key as _run_key

#: 2: the ``chain`` table and ``run_uid`` (1: before them, read only).
SCHEMA_VERSION = 2
READABLE_VERSIONS = ("1", "2")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS candidates (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    parent_ids TEXT NOT NULL,
    generation INTEGER NOT NULL,
    island INTEGER,
    proposer TEXT NOT NULL,
    operator TEXT NOT NULL,
    description TEXT NOT NULL,
    source TEXT,
    source_hash TEXT,
    diff TEXT NOT NULL,
    status TEXT NOT NULL,
    sandbox_status TEXT,
    fitness REAL NOT NULL,
    fitness_json TEXT,
    artifacts_json TEXT NOT NULL,
    spend_json TEXT NOT NULL,
    timings_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS scores (
    seq INTEGER PRIMARY KEY REFERENCES candidates(seq),
    val BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger (
    entry INTEGER PRIMARY KEY AUTOINCREMENT,
    seq INTEGER,
    kind TEXT NOT NULL,
    model TEXT,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    calls INTEGER NOT NULL DEFAULT 0,
    usd REAL NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS chain (
    pos INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    seq INTEGER,
    record TEXT,
    digest TEXT NOT NULL
);
"""

#: Columns that make up the lineage's content (see the module doc).
CONTENT_COLUMNS = (
    "seq",
    "id",
    "parent_ids",
    "generation",
    "island",
    "proposer",
    "operator",
    "description",
    "source",
    "source_hash",
    "diff",
    "status",
    "sandbox_status",
    "fitness",
    "fitness_json",
    "artifacts_json",
    "spend_json",
)

#: Candidate statuses beyond the fitness statuses of :mod:`monsearch.eval.fitness`
#: (ok / infeasible / not_estimable / failed): the proposer produced nothing usable.
PROPOSAL_ERROR = "proposal_error"


class LineageError(MonsearchError):
    """The lineage store is missing, unreadable or from another version."""


def source_hash(source: str) -> str:
    """The strategy hash: sha256 of the program text (PARAMS are part of the text)."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CandidateRecord:
    """One evaluated candidate (one row). ``fitness_json`` is ``Fitness.to_dict()``."""

    seq: int
    id: str
    parent_ids: tuple[str, ...]
    generation: int
    island: int | None
    proposer: str
    operator: str
    description: str
    source: str | None
    source_hash: str | None
    diff: str
    status: str
    sandbox_status: str | None
    fitness: float
    fitness_json: dict[str, Any] | None
    artifacts: dict[str, Any] = field(default_factory=dict)
    spend: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def fitness_low(self) -> float | None:
        return None if self.fitness_json is None else self.fitness_json.get("fitness_low")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["parent_ids"] = list(self.parent_ids)
        return d


def _dumps(value: Any) -> str:
    # Sorted keys and no spaces: the content hash depends on these exact bytes.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _row_to_record(row: sqlite3.Row) -> CandidateRecord:
    """One row as a record, every column of the kind it must be: SQLite stores any value
    in any column, and a damaged or edited file must be refused here (``ValueError``), not
    break whatever reads the record later or reach a report as something else."""

    def bad(column: str, kind: str) -> ValueError:
        return ValueError(f"candidate row {row['seq']!r}: {column} is not {kind}")

    def of(column: str, kind: type | tuple[type, ...], optional: bool = False) -> Any:
        value = row[column]
        if (value is None and optional) or (
            isinstance(value, kind) and not isinstance(value, bool)
        ):
            return value
        raise bad(column, getattr(kind, "__name__", "a number"))

    def json_of(column: str, optional: bool = False) -> Any:
        value = None if row[column] is None else json.loads(of(column, str))
        if (value is None and optional) or isinstance(value, dict):
            return value
        raise bad(column, "a JSON object")

    parent_ids = json.loads(of("parent_ids", str))
    if not isinstance(parent_ids, list) or not all(isinstance(p, str) for p in parent_ids):
        raise bad("parent_ids", "a list of ids")
    return CandidateRecord(
        seq=of("seq", int),
        id=of("id", str),
        parent_ids=tuple(parent_ids),
        generation=of("generation", int),
        island=of("island", int, optional=True),
        proposer=of("proposer", str),
        operator=of("operator", str),
        description=of("description", str),
        source=of("source", str, optional=True),
        source_hash=of("source_hash", str, optional=True),
        diff=of("diff", str),
        status=of("status", str),
        sandbox_status=of("sandbox_status", str, optional=True),
        fitness=float(of("fitness", (int, float))),
        fitness_json=json_of("fitness_json", optional=True),
        artifacts=json_of("artifacts_json"),
        spend=json_of("spend_json"),
        timings=json_of("timings_json"),
    )


class LineageStore:
    """The SQLite file of one run. ``readonly`` opens it without any write; a writer seals
    the chain with ``key`` (default: the user's run key, made on first need)."""

    def __init__(
        self, path: str | Path, *, readonly: bool = False, key: _run_key.RunKey | None = None
    ) -> None:
        self.path = Path(path)
        self._key = None if readonly else key or _run_key.load_or_create()
        if readonly:
            if not self.path.is_file():
                raise LineageError(f"{self.path}: no lineage store here")
            uri = f"file:{self.path}?mode=ro"
            self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False)
            self._refuse_old_schema()
            # WAL + synchronous FULL: a committed candidate survives kill -9 and power loss.
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            uid = secrets.token_hex(16)
            with self._db:
                for key, value in (
                    ("schema_version", str(SCHEMA_VERSION)),
                    ("run_uid", uid),
                    ("chain_head", _chain.genesis(uid)),
                    ("chain_length", "0"),
                ):
                    self._db.execute("INSERT OR IGNORE INTO meta VALUES (?, ?)", (key, value))
                if self._db.execute("SELECT 1 FROM chain LIMIT 1").fetchone() is None:
                    self._seal()  # a new store: sealed before its first entry
        self._db.row_factory = sqlite3.Row
        try:
            version = self.get_meta("schema_version")
        except sqlite3.DatabaseError as exc:
            raise LineageError(f"{self.path}: not a lineage store ({exc})") from None
        if version not in READABLE_VERSIONS:
            raise LineageError(
                f"{self.path}: lineage schema {version!r}, this monsearch reads {SCHEMA_VERSION}"
            )
        self.schema_version = int(version)

    def _refuse_old_schema(self) -> None:
        """An existing store of another schema is never written (it has no chain)."""
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.DatabaseError:
            return  # a new file (no meta yet); a foreign one fails below
        if row is not None and row[0] != str(SCHEMA_VERSION):
            self._db.close()
            raise LineageError(
                f"{self.path}: lineage schema {row[0]!r}, made before runs carried an integrity "
                f"chain; this monsearch writes schema {SCHEMA_VERSION} only, so it cannot resume "
                "this run (an evolve with the same seed and corpus remakes it)"
            )

    @property
    def chained(self) -> bool:
        return self.schema_version >= 2

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> LineageStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- meta

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return default if row is None else row[0]

    def set_meta(self, key: str, value: str) -> None:
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # -- candidates

    def add(
        self,
        record: CandidateRecord,
        val_scores: np.ndarray | None = None,
        ledger: Sequence[dict[str, Any]] = (),
    ) -> None:
        """Write one finished candidate with its val scores and spend, atomically."""
        row = (
            record.seq,
            record.id,
            _dumps(list(record.parent_ids)),
            record.generation,
            record.island,
            record.proposer,
            record.operator,
            record.description,
            record.source,
            record.source_hash,
            record.diff,
            record.status,
            record.sandbox_status,
            float(record.fitness),
            None if record.fitness_json is None else _dumps(record.fitness_json),
            _dumps(record.artifacts),
            _dumps(record.spend),
            _dumps(record.timings),
        )
        with self._db:
            self._db.execute(f"INSERT INTO candidates VALUES ({','.join('?' * len(row))})", row)
            if val_scores is not None:
                blob = zlib.compress(np.ascontiguousarray(val_scores, dtype="<f8").tobytes(), 6)
                self._db.execute("INSERT INTO scores VALUES (?, ?)", (record.seq, blob))
            for entry in ledger:
                self._db.execute(
                    "INSERT INTO ledger (seq, kind, model, prompt_tokens, completion_tokens, "
                    "calls, usd) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        record.seq,
                        entry["kind"],
                        entry.get("model"),
                        int(entry.get("prompt_tokens", 0)),
                        int(entry.get("completion_tokens", 0)),
                        int(entry.get("calls", 0)),
                        float(entry.get("usd", 0.0)),
                    ),
                )
            # Hashed from what was just stored, read back: what verify() will read.
            content = _chain.candidate_content(*self._material(record.seq))
            self._append(_chain.CANDIDATE, record.seq, None, content)

    # -- the chain (see .chain)

    def _material(self, seq: int) -> tuple[sqlite3.Row, bytes | None, list[tuple[Any, ...]]]:
        row = self._db.execute("SELECT * FROM candidates WHERE seq = ?", (seq,)).fetchone()
        blob = self._db.execute("SELECT val FROM scores WHERE seq = ?", (seq,)).fetchone()
        spend = self._db.execute(
            "SELECT kind, model, prompt_tokens, completion_tokens, calls, usd FROM ledger "
            "WHERE seq = ? ORDER BY entry",
            (seq,),
        ).fetchall()
        return row, _chain.val_bytes(None if blob is None else blob[0]), [tuple(s) for s in spend]

    def candidate_material(self) -> dict[int, tuple[sqlite3.Row, bytes | None, list[Any]]]:
        """Every candidate's row, raw val scores and spend rows, by seq (what is chained)."""
        seqs = [r[0] for r in self._db.execute("SELECT seq FROM candidates ORDER BY seq")]
        return {seq: self._material(seq) for seq in seqs}

    def chain_entries(self) -> list[tuple[int, str, int | None, str | None, str]]:
        """``(pos, kind, seq, record, digest)`` of every chain entry, in order."""
        rows = self._db.execute("SELECT pos, kind, seq, record, digest FROM chain ORDER BY pos")
        return [tuple(r) for r in rows]  # type: ignore[misc]

    def _append(self, kind: str, seq: int | None, record: str | None, content: str) -> None:
        """Link one entry onto the chain (inside the caller's transaction)."""
        last = self._db.execute("SELECT pos, digest FROM chain ORDER BY pos DESC LIMIT 1").fetchone()
        uid = self._db.execute("SELECT value FROM meta WHERE key = 'run_uid'").fetchone()[0]
        pos, previous = (0, _chain.genesis(uid)) if last is None else (last[0] + 1, last[1])
        digest = _chain.link(previous, kind, content)
        self._db.execute(
            "INSERT INTO chain VALUES (?, ?, ?, ?, ?)", (pos, kind, seq, record, digest)
        )
        self._db.execute("INSERT OR REPLACE INTO meta VALUES ('chain_head', ?)", (digest,))
        self._db.execute("INSERT OR REPLACE INTO meta VALUES ('chain_length', ?)", (str(pos + 1),))
        self._seal()

    def _seal(self) -> None:
        """Seal the head as it now is (inside the caller's transaction)."""
        assert self._key is not None, "a read-only store is never sealed"
        meta = dict(self._db.execute(
            "SELECT key, value FROM meta WHERE key IN ('run_uid', 'chain_head', 'chain_length')"
        ).fetchall())  # fmt: skip
        seal = self._key.seal(meta["run_uid"], int(meta["chain_length"]), meta["chain_head"])
        self._db.execute("INSERT OR REPLACE INTO meta VALUES ('chain_seal', ?)", (seal,))
        self._db.execute("INSERT OR REPLACE INTO meta VALUES ('seal_key', ?)", (self._key.id,))

    def reseal(self) -> None:
        """Seal the chain as found with this store's key (``monsearch trust`` only: it
        vouches for a history no key of this user sealed)."""
        with self._db:
            self._seal()

    def add_frozen(self, record: dict[str, Any]) -> bool:
        """Chain a freezing of the selected strategy; False when it repeats the last entry."""
        return self._add_record(_chain.FROZEN, record, last_of_kind=False)

    def add_config(self, record: dict[str, Any]) -> bool:
        """Chain the run's settings (what ``config.json`` must agree with); False when
        they equal the last settings chained."""
        return self._add_record(_chain.CONFIG, record, last_of_kind=True)

    def _add_record(self, kind: str, record: dict[str, Any], *, last_of_kind: bool) -> bool:
        text = _chain.canonical(record)
        with self._db:
            if last_of_kind:
                query = "SELECT kind, record FROM chain WHERE kind = ? ORDER BY pos DESC LIMIT 1"
                last = self._db.execute(query, (kind,)).fetchone()
            else:
                query = "SELECT kind, record FROM chain ORDER BY pos DESC LIMIT 1"
                last = self._db.execute(query).fetchone()
            if last is not None and last[0] == kind and last[1] == text:
                return False
            self._append(kind, None, text, _chain.frozen_content(text))
        return True

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM candidates").fetchone()[0]

    def records(self) -> list[CandidateRecord]:
        """Every candidate, in evaluation order."""
        rows = self._db.execute("SELECT * FROM candidates ORDER BY seq").fetchall()
        return [_row_to_record(r) for r in rows]

    def __iter__(self) -> Iterator[CandidateRecord]:
        return iter(self.records())

    def get(self, candidate_id: str) -> CandidateRecord:
        row = self._db.execute("SELECT * FROM candidates WHERE id = ?", (candidate_id,)).fetchone()
        if row is None:
            raise LineageError(f"no candidate {candidate_id!r} in {self.path}")
        return _row_to_record(row)

    def val_scores(self, seq: int) -> np.ndarray | None:
        row = self._db.execute("SELECT val FROM scores WHERE seq = ?", (seq,)).fetchone()
        if row is None:
            return None
        return np.frombuffer(zlib.decompress(row[0]), dtype="<f8").copy()

    def ancestry(self, candidate_id: str) -> list[CandidateRecord]:
        """The candidate and its ancestors, nearest first (first parent of each)."""
        chain: list[CandidateRecord] = []
        seen: set[str] = set()
        current: str | None = candidate_id
        while current is not None and current not in seen:
            seen.add(current)
            record = self.get(current)
            chain.append(record)
            current = record.parent_ids[0] if record.parent_ids else None
        return chain

    # -- spend

    def ledger_totals(self) -> dict[str, Any]:
        """Spend of the run: LLM tokens and dollars, oracle calls and dollars."""
        totals: dict[str, Any] = {}
        for kind, pt, ct, calls, usd in self._db.execute(
            "SELECT kind, SUM(prompt_tokens), SUM(completion_tokens), SUM(calls), SUM(usd) "
            "FROM ledger GROUP BY kind ORDER BY kind"
        ):
            totals[kind] = {
                "prompt_tokens": int(pt or 0),
                "completion_tokens": int(ct or 0),
                "calls": int(calls or 0),
                "usd": float(usd or 0.0),
            }
        totals["usd"] = sum(v["usd"] for v in totals.values())
        return totals

    # -- reproducibility

    def content_hash(self) -> str:
        """sha256 over the content columns of every candidate and the val scores."""
        h = hashlib.sha256()
        cols = ", ".join(CONTENT_COLUMNS)
        for row in self._db.execute(f"SELECT {cols} FROM candidates ORDER BY seq"):
            h.update(_dumps([*row]).encode("utf-8"))
        for seq, blob in self._db.execute("SELECT seq, val FROM scores ORDER BY seq"):
            h.update(str(seq).encode())
            h.update(zlib.decompress(blob))
        return h.hexdigest()
