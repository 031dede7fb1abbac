"""Adopting a run folder no key of this user sealed (``monsearch trust RUN``).

``test``, ``export``, ``score --monitor RUN`` and ``evolve --resume`` refuse a run whose
chain is not sealed with the user's run key: one made before runs were sealed, or made
by another user or on another machine. Adopting it is the user's explicit word that
they trust where the folder came from. What is still checked first, exactly as for any
reader: the chain itself (no entry edited, added or removed), the copies of the
freezing and the settings, the heads and the folder the ledger recorded. What is never
adopted: a run this user's key sealed whose seal no longer matches (a rewrite), and a
run the ledger recorded sealed with this user's key whose seal is now missing or
foreign (a seal stripped to make a rewrite look old).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any


def trust_run(run: str | Path, *, runs_dir: str | Path | None = None, ledger: Any = None) -> dict[str, Any]:
    """Seal ``run``'s chain as found with the user's run key and record it in the ledger;
    what was adopted (``state`` before: ``unsealed`` or ``foreign``; ``sealed`` when there
    was nothing to do). :class:`monsearch.search.chain.RunIntegrityError` when refused."""
    from monsearch.eval.sealed_ledger import Ledger
    from monsearch.search.chain import RunIntegrityError
    from monsearch.search.frozen import head_of, remember, verify_run
    from monsearch.search.lineage import LineageStore
    from monsearch.search.run_identity import BROKEN, SEALED, UNSEALED, settings_record
    from monsearch.search.run_key import load_or_create
    from monsearch.search.runs import hold_run, resolve_run

    found = resolve_run(str(run), runs_dir)
    ledger = ledger or Ledger()
    where = f"run {found.id}" + ("" if str(found.dir) == found.id else f" ({found.dir})")
    with contextlib.ExitStack() as held:
        hold_run(found, held)  # never while an evolve writes it
        verified = verify_run(found, ledger=ledger, adopting=True)
        seal = verified.seal
        assert seal is not None
        out = {
            "run_id": found.id,
            "path": str(found.dir),
            "state": seal.state,
            "key_id": seal.key_id,
            "chain_length": verified.chain.length,
            "chain_head": verified.chain.head,
        }
        if seal.state == SEALED:
            return {**out, "adopted": False}
        key = load_or_create()
        if seal.state == BROKEN:
            raise RunIntegrityError(seal.refusal(where, str(found.dir), verified.chain, key))
        for seen in ledger.run_observations(verified.uid):
            if seen.get("seal_key") == key.id:
                now = "missing" if seal.state == UNSEALED else f"another key's ({seal.key_id})"
                raise RunIntegrityError(
                    f"{where}: the ledger recorded this run sealed with your run key on "
                    f"{seen.get('recorded_at')} ({seen['what']}), and its seal is now {now}: "
                    "the run folder was rewritten after the fact; trust does not adopt it"
                )
        with LineageStore(found.lineage_path, key=key) as store:
            if verified.settings is None:
                # The settings as found become the run's record from now on.
                store.add_config(settings_record(verified.config))
            store.reseal()
            info = head_of(store)
        remember(found, {**info, "event": "adopted", "was": seal.state}, ledger=ledger)
    return {**out, "adopted": True, "chain_length": info["chain_length"],
            "chain_head": info["chain_head"]}  # fmt: skip
