"""The opaque ids programs see: HMAC of the real trajectory id under a secret.

Its own small module so that a host process can salt ids (a sandbox pool does, for
every worker) without importing the view parsers.
"""

from __future__ import annotations

import functools
import hmac
import secrets

#: Key of the ids of views built outside a sandbox pool (a pool brings its own).
_PROCESS_KEY = secrets.token_bytes(32)


def new_view_id_key() -> bytes:
    """A fresh random secret for :func:`view_id` (one per sandbox pool)."""
    return secrets.token_bytes(32)


def view_id(trajectory_id: str, key: bytes | None = None) -> str:
    """The opaque id a program sees: HMAC-SHA256 of the real id under a secret ``key``.

    Unsalted hashes of guessable ids (a synthetic corpus's, a results folder's run
    names) can be inverted by a program that enumerates candidates; without the key
    this carries nothing about the real id. Equal within one pool, so a program may
    still key per-trajectory state on it.
    """
    mac = _keyed(key or _PROCESS_KEY).copy()
    mac.update(trajectory_id.encode("utf-8", "replace"))
    return mac.hexdigest()[:16]


@functools.lru_cache(maxsize=8)
def _keyed(key: bytes) -> hmac.HMAC:
    """An HMAC-SHA256 with ``key`` already absorbed: a copy skips the key setup per id."""
    return hmac.new(key, digestmod="sha256")
