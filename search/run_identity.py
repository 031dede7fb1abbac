"""What a run folder cannot choose for itself: its sealed history and its settings.

Two checks :func:`.frozen.verify_run` makes on top of the chain (:mod:`.chain`):

- **The seal.** The chain's head must carry a seal made with the user's run key
  (:mod:`.run_key`), which no run folder holds. A history recomputed, renamed (a new
  run uid) or extended outside monsearch has no valid seal. A run with no seal (made
  before runs were sealed) or one sealed under another key (another user or machine)
  is refused too, until the user adopts it with ``monsearch trust`` (:func:`adopt`).
- **The settings.** A run chains its settings when it starts and whenever a resume
  changes them; ``config.json`` is a copy that must agree with the last settings
  chained, except the budget and the spending caps, which a resume takes from the
  command line (``RESUMABLE``): an edited copy of those is ignored, never adopted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .chain import Chain, RunIntegrityError, canonical
from .run_key import RunKey

#: Settings a resume may change (from the command line, never from config.json).
RESUMABLE = ("budget", "max_usd", "max_tokens")
#: Keys of config.json that are not settings of the run and are not chained.
UNCHAINED = ("versions",)

SEALED, UNSEALED, FOREIGN, BROKEN = "sealed", "unsealed", "foreign", "broken"


@dataclass(frozen=True)
class SealState:
    """What the run's seal says: ``state`` is one of SEALED, UNSEALED, FOREIGN, BROKEN."""

    state: str
    #: The key id the run names (None: no seal).
    key_id: str | None

    def refusal(self, where: str, ref: str, chain: Chain, key: RunKey | None) -> str:
        trust = f"`monsearch trust {ref}` adopts it if you trust where it came from"
        if self.state == UNSEALED:
            return (
                f"{where}: lineage.sqlite carries no seal (made before monsearch sealed its "
                "runs, or the seal was removed), so its history cannot be told from a "
                f"rewrite; {trust}"
            )
        if self.state == FOREIGN:
            yours = f"yours is {key.id}" if key is not None else "you have no run key yet"
            return (
                f"{where}: lineage.sqlite was sealed under another monsearch key "
                f"({self.key_id}; {yours}): made by another user or on another machine, or "
                f"forged; {trust}"
            )
        return (
            f"{where}: lineage.sqlite's seal does not match its chain ({chain.length} "
            "entries): the run folder was rewritten after the fact (history recomputed, "
            "renamed or extended outside monsearch)"
        )


def seal_state(meta: dict[str, str | None], chain: Chain, key: RunKey | None) -> SealState:
    """How the seal in ``meta`` (``chain_seal``, ``seal_key``) stands against ``key``."""
    seal, key_id = meta.get("chain_seal"), meta.get("seal_key")
    if not seal:
        return SealState(UNSEALED, None)
    if key is not None and key.opens(seal, chain.run_uid, chain.length, chain.head):
        return SealState(SEALED, key_id)
    if key is None or key_id != key.id:
        return SealState(FOREIGN, key_id)
    return SealState(BROKEN, key_id)


# --------------------------------------------------------------------------- settings


def settings_record(config: dict[str, Any]) -> dict[str, Any]:
    """The settings a run chains: its ``config.json`` without what is not a setting."""
    return {k: v for k, v in config.items() if k not in UNCHAINED}


def settings_differences(
    found: dict[str, Any], recorded: dict[str, Any], *, resumable: bool = False
) -> list[str]:
    """Dotted names of the settings on which ``found`` differs from ``recorded``; with
    ``resumable`` only the RESUMABLE ones, without them every other one."""
    keys = sorted((set(found) | set(recorded)) - set(UNCHAINED))
    keys = [k for k in keys if (k in RESUMABLE) == resumable]
    out: list[str] = []
    for key in keys:
        mine, theirs = found.get(key), recorded.get(key)
        if isinstance(mine, dict) and isinstance(theirs, dict):
            out += [
                f"{key}.{name}"
                for name in sorted(set(mine) | set(theirs), key=str)
                if canonical(mine.get(name)) != canonical(theirs.get(name))
            ]
        elif canonical(mine) != canonical(theirs):
            out.append(key)
    return out


def check_settings(where: str, config: dict[str, Any], chain: Chain) -> dict[str, Any] | None:
    """The last settings the run chained (None for a run that chained none), after
    checking ``config.json`` agrees with them."""
    if not chain.configs:
        return None
    pos, recorded = chain.configs[-1]
    differ = settings_differences(config, recorded)
    if differ:
        shown = ", ".join(differ[:8]) + (f" and {len(differ) - 8} more" if len(differ) > 8 else "")
        raise RunIntegrityError(
            f"{where}: config.json differs from the configuration the run recorded (chain "
            f"entry {pos}): {shown}; a run keeps its settings (put config.json back, or start "
            "a new run with these)"
        )
    return recorded
