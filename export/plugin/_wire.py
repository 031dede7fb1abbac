"""Length-prefixed frames over the pipes between the host and the monitor's worker process.

A frame is an 8-byte big-endian length and that many bytes. The host sends pickles
(host to worker is the trusted direction: the worker runs the program, the host does
not); the worker answers in JSON only, which the host parses and checks, so nothing
the program could have touched is ever unpickled by the host. Reads and writes on the
host's side take a deadline (``poll``, no ``FD_SETSIZE`` limit: a host with thousands
of sockets open still works).
"""

from __future__ import annotations

import os
import select
import struct
import time

HEADER = struct.Struct(">Q")
#: Largest answer the host accepts from the worker (a findings report is a few KB).
MAX_REPLY_BYTES = 16 * 1024 * 1024
#: Bytes asked of one ``read``: os.read allocates what it is asked for, and a buffer past
#: malloc's mmap threshold costs a map, page faults and an unmap per call (tens of
#: microseconds, more than a whole small message).
_CHUNK = 64 * 1024


class Reader:
    """Frames read from one pipe, buffered (a small answer is one ``read``)."""

    __slots__ = ("fd", "buffer", "poller")

    def __init__(self, fd: int, *, deadlines: bool = True) -> None:
        self.fd = fd
        self.buffer = bytearray()
        self.poller = None
        if deadlines:
            self.poller = select.poll()
            self.poller.register(fd, select.POLLIN)

    def frame(self, deadline: float | None = None, max_bytes: int | None = None) -> bytes:
        """The next frame; ``EOFError`` at end of stream, ``TimeoutError`` past ``deadline``
        (``time.monotonic``), ``ValueError`` for a frame over ``max_bytes``."""
        self._fill(HEADER.size, deadline)
        (size,) = HEADER.unpack_from(self.buffer)
        if max_bytes is not None and size > max_bytes:
            raise ValueError(f"a frame of {size} bytes (the limit is {max_bytes})")
        end = HEADER.size + size
        self._fill(end, deadline)
        data = bytes(self.buffer[HEADER.size : end])
        del self.buffer[:end]
        return data

    def _fill(self, n: int, deadline: float | None) -> None:
        buffer = self.buffer
        while len(buffer) < n:
            if deadline is not None and self.poller is not None:
                wait = deadline - time.monotonic()
                if wait <= 0 or not self.poller.poll(wait * 1000.0):
                    raise TimeoutError
            chunk = os.read(self.fd, _CHUNK)
            if not chunk:
                raise EOFError
            buffer += chunk


def write_frame(fd: int, payload: bytes, deadline: float | None = None) -> None:
    """Write one frame. With a ``deadline`` the descriptor must be non-blocking: a peer
    that stops reading cannot hold the writer past it (``TimeoutError``)."""
    view = memoryview(HEADER.pack(len(payload)) + payload)
    poller = None
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            if deadline is None:  # pragma: no cover - blocking descriptors never get here
                raise
            if poller is None:
                poller = select.poll()
                poller.register(fd, select.POLLOUT)
            wait = deadline - time.monotonic()
            if wait <= 0 or not poller.poll(wait * 1000.0):
                raise TimeoutError from None
            continue
        view = view[written:]
