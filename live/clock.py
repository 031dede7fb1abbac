"""The virtual clock one live run shares between its driver, its commands and its apps.

A run of 50 steps would take minutes of real time if every ``sleep 30`` and every
back-off slept. Instead the run keeps a virtual time in a small shared file: the
driver sets it before each command (the agent's own timeline, thinking gaps
included), a ``sleep`` inside a command moves it forward without waiting, and the
apps' ``time.time`` reads it, so a rate limiter's windows open and close on the run's
timeline exactly as they would have in real time.

The file holds two doubles: the virtual time at an anchor and the real time of that
anchor; between updates the virtual clock runs at real speed. Readers map the file
(no system call per read); writers take an ``flock`` for read-modify-write.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import struct
import time
from pathlib import Path

_FORMAT = "<dd"  # virtual seconds at the anchor, real seconds of the anchor
SIZE = struct.calcsize(_FORMAT)
#: The real ``time.time``, kept before any process of a run replaces it.
real_time = time.time


class VirtualClock:
    """One run's clock file (created by :meth:`create`, opened by every other process)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        fd = os.open(self.path, os.O_RDWR)
        try:
            self._map = mmap.mmap(fd, SIZE)
        finally:
            os.close(fd)
        self._fd_lock = None

    @classmethod
    def create(cls, path: str | Path, virtual_now: float) -> VirtualClock:
        path = Path(path)
        with open(path, "wb") as fh:
            fh.write(struct.pack(_FORMAT, virtual_now, real_time()))
        return cls(path)

    def now(self) -> float:
        """The run's current virtual time (seconds since the epoch)."""
        virtual, anchor = struct.unpack_from(_FORMAT, self._map, 0)
        return virtual + (real_time() - anchor)

    def _update(self, fn) -> float:
        with open(self.path, "rb+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                new = fn(self.now())
                self._map[:SIZE] = struct.pack(_FORMAT, new, real_time())
                return new
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def set(self, virtual_now: float) -> None:
        """Put the clock at ``virtual_now`` (the driver, before a command)."""
        self._update(lambda _now: virtual_now)

    def advance(self, seconds: float) -> float:
        """Move the clock ``seconds`` forward at once (a ``sleep``); returns the new time."""
        return self._update(lambda now: now + max(0.0, seconds))

    def close(self) -> None:
        self._map.close()
