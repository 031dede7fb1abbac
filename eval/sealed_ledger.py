"""The sealed-test ledger: each (strategy, corpus, split assignment) is tested once.

A key is ``(strategy hash, corpus content hash, split assignment hash)``: a re-split
corpus keeps its content hash but gets a new assignment, so it is a new key. The
ledger is a user-level data file, not part of a run folder, so deleting a run does
not reopen its test: ``$MONSEARCH_LEDGER`` if set, else ``sealed-ledger.json`` in
the platform's user data folder for monsearch.

Writes are atomic (temporary file, fsync, rename) under an exclusive ``flock`` on
``<ledger>.lock``, so a crash mid-write leaves the previous ledger, and two
concurrent sealed tests of one key cannot both pass the check. A ledger that cannot
be read is an error, never silently replaced: that would reopen every test in it.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monsearch.errors import MonsearchError

LEDGER_ENV = "MONSEARCH_LEDGER"
LEDGER_FILE = "sealed-ledger.json"
FORMAT = "monsearch-sealed-ledger"
VERSION = 1


class LedgerError(MonsearchError):
    """The ledger file cannot be read or written."""


class SealedTestRefused(MonsearchError):
    """This strategy was already tested on this corpus and split; ``--force`` reopens it."""

    exit_code = 3  # a refused operation (monsearch.errors), not bad input


def ledger_path() -> Path:
    """``$MONSEARCH_LEDGER``, else ``sealed-ledger.json`` in the user data folder."""
    env = os.environ.get(LEDGER_ENV)
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_path

    return user_data_path("monsearch", appauthor=False) / LEDGER_FILE


@dataclass(frozen=True)
class LedgerKey:
    strategy_hash: str
    content_hash: str
    assignment_hash: str | None

    def matches(self, entry: dict[str, Any]) -> bool:
        return (
            entry.get("strategy_hash") == self.strategy_hash
            and entry.get("content_hash") == self.content_hash
            and entry.get("assignment_hash") == self.assignment_hash
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy_hash": self.strategy_hash,
            "content_hash": self.content_hash,
            "assignment_hash": self.assignment_hash,
        }


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _describe(entry: dict[str, Any]) -> str:
    who = f"run {entry.get('run_id')}" + (
        f", candidate {entry['program_id']}" if entry.get("program_id") else ""
    )
    return f"{entry.get('opened_at')} ({who})"


class Ledger:
    """The ledger file at ``path`` (default :func:`ledger_path`)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else ledger_path()

    # -- reading

    def _read(self) -> list[dict[str, Any]]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise LedgerError(f"{self.path}: cannot read the sealed-test ledger: {exc}") from None
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise LedgerError(
                f"{self.path}: the sealed-test ledger is not valid JSON ({exc}); it is not "
                "replaced automatically, since that would reopen every sealed test in it"
            ) from None
        if (
            not isinstance(data, dict)
            or data.get("format") != FORMAT
            or not isinstance(data.get("entries"), list)
        ):
            raise LedgerError(f"{self.path}: not a monsearch sealed-test ledger")
        return [e for e in data["entries"] if isinstance(e, dict)]

    def entries(self, key: LedgerKey | None = None) -> list[dict[str, Any]]:
        """Every entry, or those of ``key``, oldest first."""
        rows = self._read()
        return rows if key is None else [e for e in rows if key.matches(e)]

    def check(self, key: LedgerKey, *, force: bool = False) -> list[dict[str, Any]]:
        """The earlier entries of ``key``; :class:`SealedTestRefused` if any and not ``force``."""
        previous = self.entries(key)
        if previous and not force:
            raise self._refusal(key, previous)
        return previous

    def _refusal(self, key: LedgerKey, previous: list[dict[str, Any]]) -> SealedTestRefused:
        return SealedTestRefused(
            f"the sealed test of strategy {key.strategy_hash[:12]} on corpus "
            f"{key.content_hash[:12]} (split assignment {str(key.assignment_hash)[:12]}) was "
            f"already opened on {_describe(previous[0])}"
            + (f" and {len(previous) - 1} more time(s)" if len(previous) > 1 else "")
            + "; a second look at test labels is not a test. "
            f"--force evaluates again and marks the report re-opened (ledger: {self.path})"
        )

    # -- writing

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        import fcntl

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(
                self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644
            )
        except OSError as exc:
            raise LedgerError(f"{self.path}: cannot open the sealed-test ledger: {exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _write(self, entries: list[dict[str, Any]]) -> None:
        text = json.dumps({"format": FORMAT, "version": VERSION, "entries": entries}, indent=2)
        tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise LedgerError(f"{self.path}: cannot write the sealed-test ledger: {exc}") from None
        with contextlib.suppress(OSError):
            dfd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)

    def record(
        self, key: LedgerKey, info: dict[str, Any], *, force: bool = False
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Record an opening of ``key``: ``(the new entry, the earlier ones)``.

        Checks again under the lock, so of two concurrent tests of one key only the
        first is recorded without ``force``. The entry is marked ``reopened`` when
        earlier ones exist.
        """
        with self._locked():
            rows = self._read()
            previous = [e for e in rows if key.matches(e)]
            if previous and not force:
                raise self._refusal(key, previous)
            entry = {
                **key.to_dict(),
                **info,
                "opened_at": _now(),
                "reopened": bool(previous),
                "opening": len(previous) + 1,
            }
            self._write([*rows, entry])
        return entry, previous
