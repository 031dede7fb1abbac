"""A run as found on disk, verified: the one source of truth for its frozen strategy.

``monsearch test``, ``export``, ``score --monitor RUN`` and ``evolve --resume`` read a
run through :func:`verify_run` and use only what it returns, read once:

- the lineage's hash chain (:mod:`.chain`) is recomputed: an edited, inserted or
  deleted candidate row, or a forged freezing, is refused;
- the frozen strategy is the last *freezing* entry of that chain (appended by
  :func:`freeze` when a run selects its strategy); ``selected.json`` and
  ``selected.py`` are derived copies and must equal it;
- ``config.json``'s corpus hashes and evaluation options must equal the ones frozen,
  and all its settings the ones the run chained (:mod:`.run_identity`);
- the chain must extend every head the user-level ledger recorded for this run (at
  each freezing on this machine and each sealed test), and the folder must hold the
  run the ledger last saw in it (created, frozen or adopted there);
- the chain's head must carry a seal made with the user's run key (:mod:`.run_key`),
  which no run folder holds: a history recomputed, renamed or extended outside
  monsearch is refused, whatever any ledger saw.

Each refusal is a :class:`.chain.RunIntegrityError` (exit 2) naming the file and what
differs. What it cannot do: whoever holds the run key (the user, or anyone who can
read the user's data folder) can seal anything; a run adopted with ``monsearch trust``
is vouched for by the user, not by the seal.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from monsearch.eval.options import EvaluationOptions, EvaluationOptionsError

from .chain import Chain, RunIntegrityError, canonical, verify
from .lineage import CandidateRecord, LineageError, LineageStore, _row_to_record, source_hash
from .program_key import program_hash
from .run_identity import SEALED, SealState, check_settings, seal_state, settings_record
from .run_key import RunKey
from .run_key import load as load_run_key
from .runs import SELECTED_FILE, SELECTED_SOURCE, CorpusRef, Run, RunError, SelectedStrategy


@dataclass(frozen=True)
class FrozenProgram:
    """One verified program of a run: the frozen strategy, or a candidate by id."""

    run_id: str
    run_uid: str
    id: str
    seq: int
    source: str
    strategy_hash: str
    #: The normalised hash (:mod:`.program_key`): what the sealed-test ledger keys on.
    program_hash: str
    selected: bool
    fitness: float
    fitness_low: float | None
    fitness_json: dict[str, Any]
    val_scores: np.ndarray | None


@dataclass(frozen=True)
class VerifiedRun:
    """What :func:`verify_run` read and checked."""

    run: Run
    chain: Chain
    config: dict[str, Any]
    records: dict[str, CandidateRecord]
    val_scores: dict[int, np.ndarray]
    frozen: SelectedStrategy | None
    #: The last settings the run chained (None: a run that chained none).
    settings: dict[str, Any] | None = None
    seal: SealState | None = None

    @property
    def id(self) -> str:
        return self.run.id

    @property
    def uid(self) -> str:
        return self.chain.run_uid

    def program(self, program_id: str | None = None) -> FrozenProgram:
        """The frozen strategy, or candidate ``program_id``: :class:`RunError` when there is
        no frozen strategy or no source, :class:`.lineage.LineageError` for an unknown id."""
        if program_id is None:
            if self.frozen is None:
                raise RunError(
                    f"run {self.id} has no selected strategy yet (it never froze one); let "
                    "the run finish, or name a candidate with --program ID"
                )
            program_id = self.frozen.id
        record = self.records.get(program_id)
        if record is None:
            raise LineageError(f"no candidate {program_id!r} in run {self.id}")
        if record.source is None:
            raise RunError(f"candidate {program_id} of run {self.id} has no source")
        digest = source_hash(record.source)
        selected = self.frozen is not None and self.frozen.strategy_hash == digest
        if selected and self.frozen is not None and self.frozen.id == record.id:
            fitness, low, fitness_json = (
                self.frozen.fitness,
                self.frozen.fitness_low,
                self.frozen.fitness_json,
            )
        else:
            fitness, low, fitness_json = record.fitness, record.fitness_low, record.fitness_json
        return FrozenProgram(
            run_id=self.id,
            run_uid=self.uid,
            id=record.id,
            seq=record.seq,
            source=record.source,
            strategy_hash=digest,
            program_hash=program_hash(record.source),
            selected=selected,
            fitness=fitness,
            fitness_low=low,
            fitness_json=dict(fitness_json or {}),
            val_scores=self.val_scores.get(record.seq),
        )


def verify_run(
    run: Run,
    *,
    copies: bool = True,
    ledger: Any = None,
    key: RunKey | None = None,
    adopting: bool = False,
) -> VerifiedRun:
    """Read ``run`` once and check it (see the module doc); :class:`RunIntegrityError`.

    ``copies=False`` skips what is copied from the freezing (``selected.json``,
    ``selected.py``, config.json's corpus hashes and evaluation): a resume writes them
    again. ``ledger`` is the sealed-test ledger (default: the user's) whose recorded
    chain heads the run must extend; ``key`` the run key (default: the user's).
    ``adopting`` (``monsearch trust`` only) leaves the seal to the caller, which finds
    its state in ``VerifiedRun.seal``.
    """
    where = f"run {run.id}" + ("" if str(run.dir) == run.id else f" ({run.dir})")
    config = run.config()
    with LineageStore(run.lineage_path, readonly=True) as store:
        chain, material = verify(store, where)
        meta = {k: store.get_meta(k) for k in ("chain_seal", "seal_key")}
    records = {}
    val_scores = {}
    for seq, (row, val, _spend) in material.items():
        record = _row_to_record(row)
        records[record.id] = record
        if val is not None:
            val_scores[seq] = np.frombuffer(val, dtype="<f8").copy()
    frozen = None
    if chain.frozen:
        pos, record = chain.frozen[-1]
        frozen = _frozen_strategy(where, pos, record, records)
    if ledger is None:
        from monsearch.eval.sealed_ledger import Ledger

        ledger = Ledger()
    _check_ledger(where, chain, ledger, str(run.dir.resolve()))
    key = key or load_run_key()
    seal = seal_state(meta, chain, key)
    if not adopting and seal.state != SEALED:
        raise RunIntegrityError(seal.refusal(where, str(run.dir), chain, key))
    if copies:
        if frozen is not None:
            _check_config(where, config, frozen)
        _check_selected_files(run, where, frozen)
    settings = check_settings(where, config, chain)
    return VerifiedRun(run, chain, config, records, val_scores, frozen, settings, seal)


def _frozen_strategy(
    where: str, pos: int, record: dict[str, Any], records: dict[str, CandidateRecord]
) -> SelectedStrategy:
    try:
        frozen = SelectedStrategy(**record)
    except TypeError as exc:
        raise RunIntegrityError(
            f"{where}: lineage.sqlite: the freezing at chain entry {pos} is not a frozen "
            f"strategy ({exc})"
        ) from None
    candidate = records.get(frozen.id)
    if candidate is None or candidate.source != frozen.source:
        raise RunIntegrityError(
            f"{where}: lineage.sqlite: the frozen strategy {frozen.id} is not that candidate's "
            "program in the lineage"
        )
    if source_hash(frozen.source) != frozen.strategy_hash:
        raise RunIntegrityError(
            f"{where}: lineage.sqlite: the frozen strategy {frozen.id}'s source does not match "
            "its strategy_hash"
        )
    return frozen


def _check_ledger(where: str, chain: Chain, ledger: Any, here: str) -> None:
    """The folder must hold the run the ledger last saw in it, and the chain extend every
    head the ledger saw for this run.

    Heads seen in this folder (``here``) bind strictly. A copy of the run elsewhere
    shares its uid and may have been resumed apart from this one (a fork): a head seen
    there binds only where this folder's own record reaches as far.
    """
    owner = ledger.folder_record(here)
    if owner is not None and owner.get("run_uid") != chain.run_uid:
        raise RunIntegrityError(
            f"{where}: lineage.sqlite holds run uid {chain.run_uid[:12]}, but the ledger "
            f"recorded run uid {str(owner.get('run_uid'))[:12]} in this folder on "
            f"{owner.get('recorded_at')} ({owner.get('event', 'frozen')}; ledger "
            f"{ledger.path}): the folder now holds another run (its id was changed, or "
            "another run was put in its place); a run of yours moved here belongs in a "
            "folder of its own"
        )
    seen = ledger.run_observations(chain.run_uid)
    reach = max((o["chain_length"] for o in seen if o.get("path") == here), default=0)
    for o in seen:
        n, head = o["chain_length"], o["chain_head"]
        local = o.get("path") == here
        when = f"{o.get('recorded_at')} ({o['what']}; ledger {ledger.path})"
        if not local:
            when = f"{when} for its copy at {o.get('path')}"
        if n > chain.length:
            if local:
                raise RunIntegrityError(
                    f"{where}: lineage.sqlite holds {chain.length} chain entries, fewer than "
                    f"the {n} the ledger recorded on {when}: entries were removed"
                )
            continue  # a copy that grew further
        if n > 0 and chain.digests[n - 1] != head and (local or reach < n):
            raise RunIntegrityError(
                f"{where}: the run's history differs from the one the ledger recorded on "
                f"{when}: the run folder was rewritten after the fact (chain recomputed)"
            )


def _check_config(where: str, config: dict[str, Any], frozen: SelectedStrategy) -> None:
    """What the frozen record copied of config.json must still agree (for a run that
    chained no settings, the only check of config.json)."""
    recorded, kept = CorpusRef.from_config(config), CorpusRef.from_dict(frozen.corpus)
    for key in recorded.differs(kept.content_hash, kept.assignment_hash, strict=True):
        raise RunIntegrityError(
            f"{where}: config.json's corpus.{key} ({str(getattr(recorded, key))[:12]}) differs "
            f"from the one frozen with strategy {frozen.id} ({str(getattr(kept, key))[:12]})"
        )
    try:
        recorded = EvaluationOptions.from_config(config)
        kept = EvaluationOptions.from_dict(frozen.evaluation, f"the freezing of strategy {frozen.id}")
    except EvaluationOptionsError as exc:
        raise RunIntegrityError(f"{where}: {exc}") from None
    differ = recorded.differs(kept)
    if differ:
        raise RunIntegrityError(
            f"{where}: config.json's evaluation options differ from the ones frozen with "
            f"strategy {frozen.id}: {', '.join(differ)}"
        )


def _check_selected_files(run: Run, where: str, frozen: SelectedStrategy | None) -> None:
    path, source_path = run.dir / SELECTED_FILE, run.dir / SELECTED_SOURCE
    if frozen is None:
        if path.exists():
            raise RunIntegrityError(
                f"{where}: {SELECTED_FILE} names a strategy the run never froze (lineage.sqlite "
                "records no freezing)"
            )
        return
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunIntegrityError(
            f"{where}: {SELECTED_FILE} is missing, but lineage.sqlite records strategy "
            f"{frozen.id} frozen (evolve --resume writes it again)"
        ) from None
    except (OSError, ValueError) as exc:
        raise RunIntegrityError(f"{where}: {SELECTED_FILE} is unreadable ({exc})") from None
    want = frozen.to_dict()
    if not isinstance(found, dict):
        found = {}
    differ = sorted(
        k for k in set(want) | set(found) if canonical(want.get(k)) != canonical(found.get(k))
    )
    if differ:
        detail = ", ".join(differ)
        if "source" in differ:
            got = found.get("source")
            got_hash = source_hash(got)[:12] if isinstance(got, str) else "none"
            detail += f" (source sha256 {got_hash} in the file, {frozen.strategy_hash[:12]} frozen)"
        raise RunIntegrityError(
            f"{where}: {SELECTED_FILE} differs from the strategy {frozen.id} frozen in "
            f"lineage.sqlite: {detail}"
        )
    try:
        text = source_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = None
    if text != frozen.source:
        got = "missing" if text is None else f"sha256 {source_hash(text)[:12]}"
        raise RunIntegrityError(
            f"{where}: {SELECTED_SOURCE} differs from the strategy {frozen.id} frozen in "
            f"lineage.sqlite ({got}, frozen {frozen.strategy_hash[:12]})"
        )


def freeze(
    run: Run,
    selected: SelectedStrategy,
    *,
    store: LineageStore | None = None,
    ledger: Any = None,
    on_warning: Callable[[str], None] | None = None,
) -> None:
    """Freeze ``selected`` as the run's strategy.

    First a freezing entry on the lineage chain (the truth), then ``selected.json``
    and ``selected.py`` (copies of it), then the chain head in the user-level ledger
    (a ledger that cannot be written is a warning: the run is complete without it).
    """
    own = store is None
    store = store or LineageStore(run.lineage_path)
    try:
        try:
            candidate = store.get(selected.id)
        except LineageError as exc:
            raise RunError(f"cannot freeze {selected.id} in run {run.id}: {exc}") from None
        digest = source_hash(selected.source)
        if candidate.source != selected.source or digest != selected.strategy_hash:
            raise RunError(
                f"cannot freeze {selected.id} in run {run.id}: its source is not that "
                "candidate's program"
            )
        store.add_frozen(selected.to_dict())
        info = head_of(store)
    finally:
        if own:
            store.close()
    run.write_selected_files(selected)
    remember(
        run,
        {**info, "event": "frozen", "strategy_id": selected.id,
         "strategy_hash": selected.strategy_hash},
        ledger=ledger,
        on_warning=on_warning,
    )  # fmt: skip


def head_of(store: LineageStore) -> dict[str, Any]:
    return {
        "run_uid": store.get_meta("run_uid"),
        "chain_length": int(store.get_meta("chain_length") or 0),
        "chain_head": store.get_meta("chain_head"),
        "seal_key": store.get_meta("seal_key"),
    }


def remember(
    run: Run,
    info: dict[str, Any],
    *,
    ledger: Any = None,
    on_warning: Callable[[str], None] | None = None,
) -> None:
    """Record in the user-level ledger that monsearch wrote (``event``: created, frozen,
    adopted) this run in this folder, with its head then. A ledger that cannot be
    written is a warning: the seal still guards the run."""
    from monsearch.eval.sealed_ledger import Ledger, LedgerError

    try:
        (ledger or Ledger()).record_run(
            {**info, "run_id": run.id, "path": str(run.dir.resolve())}
        )
    except LedgerError as exc:
        message = f"the run's state was not recorded in the ledger: {exc}"
        if on_warning is not None:
            on_warning(f"warning: {message}")
        else:
            import warnings

            warnings.warn(message, stacklevel=2)


def record_settings(
    run: Run,
    settings: dict[str, Any],
    *,
    created: bool,
    ledger: Any = None,
    on_warning: Callable[[str], None] | None = None,
) -> None:
    """Chain the run's settings (a new run's, or a resume's when they changed) before
    ``config.json`` is written; a new run is also recorded in the ledger."""
    with LineageStore(run.lineage_path) as store:
        store.add_config(settings_record(settings))
        info = head_of(store)
    if created:
        remember(run, {**info, "event": "created"}, ledger=ledger, on_warning=on_warning)
