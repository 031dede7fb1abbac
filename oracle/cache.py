"""On-disk cache of judge answers, keyed by (trajectory id, judge model, prompt hash).

One sqlite file in WAL mode: many worker processes may read and append at once.
The first answer stored for a key wins (``INSERT OR IGNORE`` then re-read), so two
workers racing on the same key still hand every later reader the same answer and
a re-evaluation is reproducible and free. Open one :class:`OracleCache` per
process (after any fork): sqlite connections must not cross a fork.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from monsearch.oracle.judge import JudgeAnswer, validate_verdict

CACHE_FILE = "oracle-cache.sqlite3"
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    traj_id TEXT NOT NULL,
    judge TEXT NOT NULL,
    prompt_hash TEXT NOT NULL,
    verdict TEXT NOT NULL,
    raw TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    created TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    PRIMARY KEY (traj_id, judge, prompt_hash)
)
"""


@dataclass(frozen=True, slots=True)
class CachedAnswer:
    answer: JudgeAnswer
    raw: str
    prompt_tokens: int
    completion_tokens: int


class OracleCache:
    """Read-through store of judge answers in ``<directory>/oracle-cache.sqlite3``."""

    def __init__(self, directory: Path | str, *, timeout_s: float = 60.0) -> None:
        self.path = Path(directory) / CACHE_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Autocommit: every statement is its own short transaction, so writers
        # hold the lock only for one insert.
        self._db = sqlite3.connect(self.path, timeout=timeout_s, isolation_level=None)
        self._db.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
        self._setup(timeout_s)

    def _setup(self, timeout_s: float) -> None:
        # Switching a fresh file to WAL does not wait on the busy handler: when
        # several workers create the cache at once, the losers see "database is
        # locked" at once. Retry the one-time setup until the deadline.
        deadline = time.monotonic() + timeout_s
        pause = 0.005
        while True:
            try:
                mode = self._db.execute("PRAGMA journal_mode").fetchone()[0]
                if str(mode).lower() != "wal":
                    self._db.execute("PRAGMA journal_mode = WAL")
                self._db.execute("PRAGMA synchronous = NORMAL")
                self._db.execute(_SCHEMA)
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(pause)
                pause = min(pause * 2, 0.1)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> OracleCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, traj_id: str, judge: str, prompt_hash: str) -> CachedAnswer | None:
        row = self._db.execute(
            "SELECT verdict, raw, prompt_tokens, completion_tokens FROM answers"
            " WHERE traj_id = ? AND judge = ? AND prompt_hash = ?",
            (traj_id, judge, prompt_hash),
        ).fetchone()
        if row is None:
            return None
        verdict, raw, p_tok, c_tok = row
        return CachedAnswer(validate_verdict(json.loads(verdict)), raw, p_tok, c_tok)

    def put(
        self,
        traj_id: str,
        judge: str,
        prompt_hash: str,
        answer: JudgeAnswer,
        *,
        raw: str = "",
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
    ) -> CachedAnswer:
        """Store an answer unless the key already has one; return the stored answer."""
        self._db.execute(
            "INSERT OR IGNORE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                traj_id,
                judge,
                prompt_hash,
                json.dumps(answer.to_json(), sort_keys=True),
                raw,
                prompt_tokens,
                completion_tokens,
                datetime.now(UTC).isoformat(),
                SCHEMA_VERSION,
            ),
        )
        stored = self.get(traj_id, judge, prompt_hash)
        assert stored is not None
        return stored

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0])
