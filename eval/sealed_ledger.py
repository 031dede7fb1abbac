"""The sealed-test ledger: each (program, corpus, split assignment) is tested once.

A key is ``(normalised program hash, corpus content hash, split assignment hash)``:
the program hash is :func:`monsearch.search.program_key.program_hash`, so a copy of
a tested program with a comment or a blank line added is the same key; a re-split
corpus keeps its content hash but gets a new assignment, so it is a new key. Entries
written before the normalised hash (version 1) match on the exact strategy hash.

Every opening also counts against its run (by the run's uid, so a copied or renamed
run folder is the same run): an opening after the first of a run, whatever program
it tests, is marked re-opened, and so is one whose run folder holds more earlier
reports than the ledger records openings (the ledger was replaced or emptied).
Another program of a run whose sealed test was opened on the same corpus and split
is refused without ``force`` (trying the run's programs in turn and keeping the best
is selecting on test), and every entry names the run's other programs opened there.

The ledger also keeps, for every run created, frozen or adopted on this machine, its
folder, its uid and the head of its lineage chain then (``runs``): a folder that now
holds another run, or a chain that no longer extends a recorded head, is refused
(:mod:`monsearch.search.frozen`).

What it cannot promise: it is a file of this user. Deleting it, or pointing
``MONSEARCH_LEDGER`` at an empty one, forgets every opening; the reports left in run
folders then still mark the next opening, but a user who deletes those too can open
a test again unmarked. It keeps an honest researcher from a second look by accident
or by a casual edit, not an adversary who owns the files.

The ledger is a user-level data file, not part of a run folder, so deleting a run does
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
from monsearch.files import atomic_write, exclusive_lock

LEDGER_ENV = "MONSEARCH_LEDGER"
LEDGER_FILE = "sealed-ledger.json"
FORMAT = "monsearch-sealed-ledger"
#: 2: normalised program hashes, run uids and openings per run, the ``runs`` registry.
VERSION = 2


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
    """``program_hash`` is the normalised hash; ``strategy_hash`` the exact text's (shown,
    and matched against entries that have no normalised hash)."""

    strategy_hash: str
    content_hash: str
    assignment_hash: str | None
    program_hash: str | None = None

    def matches(self, entry: dict[str, Any]) -> bool:
        if (
            entry.get("content_hash") != self.content_hash
            or entry.get("assignment_hash") != self.assignment_hash
        ):
            return False
        if self.program_hash and entry.get("program_hash"):
            return entry["program_hash"] == self.program_hash
        return entry.get("strategy_hash") == self.strategy_hash

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy_hash": self.strategy_hash,
            "program_hash": self.program_hash,
            "content_hash": self.content_hash,
            "assignment_hash": self.assignment_hash,
        }


@dataclass(frozen=True)
class RunRef:
    """The run an opening belongs to: its uid (from its lineage) and its folder name."""

    run_id: str
    run_uid: str | None = None

    def owns(self, entry: dict[str, Any]) -> bool:
        if self.run_uid and entry.get("run_uid"):
            return entry["run_uid"] == self.run_uid
        # Entries from before run uids name the run by its folder only.
        return entry.get("run_id") == self.run_id


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
        return self._read_doc()["entries"]

    def _read_doc(self) -> dict[str, Any]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {"entries": [], "runs": []}
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
        runs = data.get("runs") if isinstance(data.get("runs"), list) else []
        return {
            "entries": [e for e in data["entries"] if isinstance(e, dict)],
            "runs": [r for r in runs if isinstance(r, dict)],
        }

    def entries(self, key: LedgerKey | None = None) -> list[dict[str, Any]]:
        """Every entry, or those of ``key``, oldest first."""
        rows = self._read()
        return rows if key is None else [e for e in rows if key.matches(e)]

    def check(
        self, key: LedgerKey, *, force: bool = False, run: RunRef | None = None
    ) -> list[dict[str, Any]]:
        """The earlier entries of ``key``; :class:`SealedTestRefused` if any, or if ``run``
        was opened on this corpus with another program, and not ``force``."""
        rows = self._read()
        previous = [e for e in rows if key.matches(e)]
        if previous and not force:
            raise self._refusal(key, previous)
        others = _other_programs(rows, key, run)
        if others and not force and run is not None:
            raise self._selection_refusal(key, run, others)
        return previous

    def run_observations(self, run_uid: str) -> list[dict[str, Any]]:
        """What this ledger saw of run ``run_uid``'s chain: ``{chain_length, chain_head,
        path, recorded_at, what}`` at each freezing and each sealed-test opening."""
        doc = self._read_doc()
        seen = []
        for r in doc["runs"]:
            if r.get("run_uid") == run_uid:
                event = str(r.get("event") or "frozen")
                what = f"frozen (strategy {r.get('strategy_id')})" if event == "frozen" else event
                seen.append({**r, "what": what})
        for e in doc["entries"]:
            if e.get("run_uid") == run_uid and e.get("chain_length") is not None:
                seen.append({**e, "recorded_at": e.get("opened_at"), "what": "sealed-tested"})
        return [
            o
            for o in seen
            if isinstance(o.get("chain_length"), int) and isinstance(o.get("chain_head"), str)
        ]

    def folder_record(self, path: str) -> dict[str, Any] | None:
        """The last record of a run monsearch wrote in the folder ``path`` (created, frozen
        or adopted there): the run that folder must hold. None: never seen."""
        found = [r for r in self._read_doc()["runs"] if r.get("path") == path]
        return found[-1] if found else None

    def _selection_refusal(
        self, key: LedgerKey, run: RunRef, others: list[dict[str, Any]]
    ) -> SealedTestRefused:
        names = ", ".join(dict.fromkeys(str(e.get("program_id")) for e in others))
        return SealedTestRefused(
            f"run {run.run_id}'s sealed test on corpus {key.content_hash[:12]} (split "
            f"assignment {str(key.assignment_hash)[:12]}) was already opened with "
            f"program {names} (first on {others[0].get('opened_at')}); opening another "
            "program of the run there is selecting on test (keeping the best by its test "
            "figures). --force opens it, marked re-opened, and every report names the "
            f"programs opened before (ledger: {self.path})"
        )

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
        with contextlib.ExitStack() as held:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                held.enter_context(exclusive_lock(self.path.with_name(self.path.name + ".lock")))
            except OSError as exc:
                raise LedgerError(
                    f"{self.path}: cannot open the sealed-test ledger: {exc}"
                ) from None
            yield

    def _write(self, entries: list[dict[str, Any]], runs: list[dict[str, Any]]) -> None:
        doc = {"format": FORMAT, "version": VERSION, "entries": entries, "runs": runs}
        try:
            atomic_write(self.path, json.dumps(doc, indent=2) + "\n", durable=True)
        except OSError as exc:
            raise LedgerError(f"{self.path}: cannot write the sealed-test ledger: {exc}") from None

    def record(
        self,
        key: LedgerKey,
        info: dict[str, Any],
        *,
        force: bool = False,
        run: RunRef | None = None,
        earlier_reports: int = 0,
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Record an opening of ``key``: ``(the new entry, the earlier ones of key)``.

        Checks again under the lock, so of two concurrent tests of one key only the
        first is recorded without ``force``. The entry counts the openings of its run
        (``run_opening``: the ledger's count, or the ``earlier_reports`` found in the
        run folder plus one when that is more) and is marked ``reopened``, with its
        ``reasons``, when this key or this run was opened before.
        """
        if run is None and info.get("run_id"):
            run = RunRef(str(info["run_id"]))
        with self._locked():
            doc = self._read_doc()
            rows = doc["entries"]
            previous = [e for e in rows if key.matches(e)]
            if previous and not force:
                raise self._refusal(key, previous)
            others_here = _other_programs(rows, key, run)
            if others_here and not force and run is not None:
                raise self._selection_refusal(key, run, others_here)
            of_run = [e for e in rows if run.owns(e)] if run is not None else []
            reasons = []
            if previous:
                reasons.append(
                    f"this program was already tested on this corpus and split "
                    f"({_count(len(previous), 'earlier opening')})"
                )
            others = [e for e in of_run if not key.matches(e)]
            if others and run is not None:
                names = ", ".join(dict.fromkeys(str(e.get("program_id")) for e in others))
                reasons.append(
                    f"run {run.run_id}'s sealed test was already opened with other programs "
                    f"({_count(len(others), 'opening')}: {names})"
                )
            if earlier_reports > len(of_run):
                reasons.append(
                    f"the run folder holds {_count(earlier_reports, 'earlier report')} but "
                    f"this ledger records {_count(len(of_run), 'opening')} of the run "
                    "(the ledger was replaced or emptied)"
                )
            entry = {
                **key.to_dict(),
                **info,
                "run_uid": None if run is None else run.run_uid,
                "opened_at": _now(),
                "reopened": bool(reasons),
                "reasons": reasons,
                "opening": len(previous) + 1,
                "run_opening": max(len(of_run), earlier_reports) + 1,
                # The run's other programs already opened on this corpus and split.
                "other_programs": [
                    {k: e.get(k) for k in ("program_id", "strategy_hash", "opened_at")}
                    for e in others_here
                ],
            }
            self._write([*rows, entry], doc["runs"])
        return entry, previous

    def record_run(self, info: dict[str, Any]) -> None:
        """Remember that monsearch wrote a run in a folder: ``event`` (created, frozen,
        adopted), ``run_uid``, ``path``, ``chain_length``, ``chain_head``, ``seal_key``,
        ``run_id``, ``strategy_id``...; a repeat is not written again."""
        with self._locked():
            doc = self._read_doc()
            same = ("run_uid", "chain_length", "chain_head", "path", "event")
            if any(all(r.get(k) == info.get(k) for k in same) for r in doc["runs"]):
                return
            self._write(doc["entries"], [*doc["runs"], {**info, "recorded_at": _now()}])


def _other_programs(
    rows: list[dict[str, Any]], key: LedgerKey, run: RunRef | None
) -> list[dict[str, Any]]:
    """Openings of ``run`` on ``key``'s corpus and split with another program."""
    if run is None:
        return []
    return [
        e
        for e in rows
        if run.owns(e)
        and e.get("content_hash") == key.content_hash
        and e.get("assignment_hash") == key.assignment_hash
        and not key.matches(e)
    ]


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")
