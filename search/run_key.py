"""The user's run key: a secret kept outside every run folder that seals each run's chain.

The hash chain (:mod:`.chain`) shows an entry was edited, but its recipe is public:
whoever can write a run folder can recompute every digest, give the run a new id, or
append a forged candidate and freezing. So every writer of a lineage also stores a
*seal*, ``HMAC-SHA256(key, uid | length | head)``, beside the head, and every reader
checks it. Without the key no one can make a seal for another head: a folder whose
history was rewritten or extended outside monsearch is refused.

The key is 32 random bytes (hex, one line), made on first need with mode 0600:
``$MONSEARCH_RUN_KEY`` if set, else ``run-key`` in the platform's user data folder
for monsearch (beside the sealed-test ledger). It never enters a run folder, a report,
a prompt or an export; its id (a hash of it) is stored in a run so a run sealed under
another key (another user or machine) is named as such. Whoever can read the key can
seal anything: it guards run folders from their writers, not from its own owner.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from monsearch.errors import MonsearchError

KEY_ENV = "MONSEARCH_RUN_KEY"
KEY_FILE = "run-key"
SEAL_TAG = "monsearch-run-seal/1"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class RunKeyError(MonsearchError):
    """The run key cannot be read or made."""


def key_path() -> Path:
    """``$MONSEARCH_RUN_KEY``, else ``run-key`` in the user data folder."""
    env = os.environ.get(KEY_ENV)
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_path

    return user_data_path("monsearch", appauthor=False) / KEY_FILE


@dataclass(frozen=True)
class RunKey:
    secret: bytes
    path: Path

    @property
    def id(self) -> str:
        """A name for the key that reveals nothing of it (stored in each sealed run)."""
        return hashlib.sha256(b"monsearch-run-key-id\n" + self.secret).hexdigest()[:16]

    def seal(self, run_uid: str, length: int, head: str) -> str:
        text = f"{SEAL_TAG}\n{run_uid}\n{length}\n{head}".encode()
        return hmac.new(self.secret, text, hashlib.sha256).hexdigest()

    def opens(self, seal: str, run_uid: str, length: int, head: str) -> bool:
        return hmac.compare_digest(seal, self.seal(run_uid, length, head))


def _read(path: Path) -> RunKey | None:
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RunKeyError(f"{path}: cannot read the run key: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "rb") as fh:
            text = fh.read(200).strip()
    except OSError as exc:  # a folder, a device...
        raise RunKeyError(f"{path}: cannot read the run key: {exc.strerror or exc}") from None
    try:
        secret = bytes.fromhex(text.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        secret = b""
    if len(secret) != 32:
        raise RunKeyError(
            f"{path}: not a monsearch run key (64 hex digits); it is not replaced, since every "
            "run sealed with it would then be refused"
        )
    return RunKey(secret, path)


def load(path: Path | None = None) -> RunKey | None:
    """The user's key, or None when there is none yet."""
    return _read(path or key_path())


def load_or_create(path: Path | None = None) -> RunKey:
    """The user's key, made (atomically, mode 0600) if there is none yet."""
    path = path or key_path()
    found = _read(path)
    if found is not None:
        return found
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(secrets.token_hex(32) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        # link() never replaces: of two first runs at once, one key wins and both use it.
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    except OSError as exc:
        raise RunKeyError(f"{path}: cannot make the run key: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    key = _read(path)
    if key is None:  # pragma: no cover - removed between link and read
        raise RunKeyError(f"{path}: the run key vanished as it was made")
    return key
