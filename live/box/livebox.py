"""The agent container's side of a live run, shared by its tools and its Python.

This folder (``live/box``) is copied into each live worker's private tool folder and
runs there under a bare interpreter (``python -S``): the standard library only, no
monsearch. The worker writes the run's facts to ``<root>/c/net.json`` before each
run: the container's host name and address, the task's hosts and where they really
listen, the third-party sink, whether the internet answers.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = os.path.join(ROOT, "c")
_FORMAT = "<dd"
real_time = time.time
real_sleep = time.sleep


def net() -> dict:
    with open(os.path.join(RUN, "net.json"), encoding="utf-8") as fh:
        return json.load(fh)


def _clock_map() -> mmap.mmap:
    fd = os.open(os.path.join(RUN, "clock"), os.O_RDWR)
    try:
        return mmap.mmap(fd, struct.calcsize(_FORMAT))
    finally:
        os.close(fd)


def now() -> float:
    """The run's virtual time (see monsearch.live.clock, which writes the same file)."""
    m = _clock_map()
    try:
        virtual, anchor = struct.unpack_from(_FORMAT, m, 0)
    finally:
        m.close()
    return virtual + (real_time() - anchor)


def _update_clock(change) -> float:
    """Read-modify-write the run's clock under its lock: ``change(now)`` gives the new
    virtual time, which is returned."""
    import fcntl

    with open(os.path.join(RUN, "clock"), "rb+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        m = _clock_map()
        try:
            virtual, anchor = struct.unpack_from(_FORMAT, m, 0)
            new = change(virtual + (real_time() - anchor))
            m[: struct.calcsize(_FORMAT)] = struct.pack(_FORMAT, new, real_time())
            return new
        finally:
            m.close()
            fcntl.flock(lock, fcntl.LOCK_UN)


def virtual_sleep(seconds: float) -> None:
    """Sleep on the run's clock: no real wait, unless the command's 30 s are up (then
    the clock stops at the limit, the driver is told, and this waits to be stopped)."""
    seconds = max(0.0, float(seconds))
    limit = _command_limit()
    reached = _update_clock(lambda now: now + seconds if limit is None else min(now + seconds, limit))
    if limit is not None and reached >= limit:
        with open(os.path.join(RUN, "timed_out"), "w", encoding="utf-8") as fh:
            fh.write("sleep\n")
        while True:  # the driver stops the command
            real_sleep(3600)


def _command_limit() -> float | None:
    try:
        with open(os.path.join(RUN, "command.json"), encoding="utf-8") as fh:
            c = json.load(fh)
    except (OSError, ValueError):
        return None
    return c["virtual_start"] + c["limit"]


#: Real seconds a socket read may wait before its timeout is taken as run: a reply that
#: has not come by then (a listener that never answers) is not coming, and the rest of
#: the timeout passes on the run's clock instead.
WAIT_CAP = 0.5


def advance(seconds: float) -> None:
    """Move the run's clock ``seconds`` forward (a wait that was cut short)."""
    _update_clock(lambda now: now + max(0.0, seconds))


def compress_socket_waits(socket_class, on_wait=None) -> None:
    """Socket reads with a timeout wait at most :data:`WAIT_CAP` real seconds; a read
    that times out moves the clock by the rest of its timeout and raises as before."""
    on_wait = on_wait or advance
    for name in ("recv", "recv_into", "recvfrom", "recvfrom_into"):
        real = getattr(socket_class, name)

        def wrapped(self, *args, __real=real, **kwargs):
            timeout = self.gettimeout()
            if not timeout or timeout <= WAIT_CAP:
                return __real(self, *args, **kwargs)
            self.settimeout(WAIT_CAP)
            try:
                return __real(self, *args, **kwargs)
            except TimeoutError:
                on_wait(timeout - WAIT_CAP)
                raise
            finally:
                self.settimeout(timeout)

        setattr(socket_class, name, wrapped)


def dotted(host: str) -> str:
    try:
        n = int(host, 16) if host.lower().startswith("0x") else int(host)
    except ValueError:
        return host
    if not 0 <= n < 2**32:
        return host
    return ".".join(str((n >> s) & 255) for s in (24, 16, 8, 0))


LOOPBACK = ("localhost", "127.0.0.1", "0.0.0.0", "::1", "ip6-localhost", "ip6-loopback")


def resolve(name: str, facts: dict | None = None) -> str | None:
    """The address the container's resolver gives ``name`` (None: no such host)."""
    facts = facts or net()
    name = dotted(name.strip("[]").lower().rstrip("."))
    if name in LOOPBACK:
        return "127.0.0.1"
    if name in (facts["hostname"], facts["ip"]):
        return facts["ip"]
    hosts = facts["hosts"]
    if name in hosts:
        return hosts[name]
    if name in hosts.values():
        return name
    if all(p.isdigit() for p in name.split(".")) and name.count(".") == 3:
        return name
    if facts.get("online"):
        return facts["outside_ip"]
    return None


def route(ip: str, port: int, facts: dict | None = None) -> tuple[str, int]:
    """Where a connection from the container to ``ip:port`` really goes (loopback of the
    worker's own network namespace)."""
    facts = facts or net()
    ip = dotted(ip)
    for _name, inst in facts["apps"].items():
        if ip == inst["ip"]:
            # an app host listens on its container port only; any other port refuses
            return ("127.0.0.1", inst["port"] if port == 5000 else 9)
    if ip in ("127.0.0.1", facts["ip"], "0.0.0.0"):
        return ("127.0.0.1", port)
    if facts.get("online") and facts.get("sink"):
        return ("127.0.0.1", facts["sink_tls"] if port == 443 and facts.get("sink_tls") else facts["sink"])
    return (ip, port)
