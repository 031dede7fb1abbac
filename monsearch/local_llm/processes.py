"""What ``/proc`` tells about a process group and a TCP port (Linux).

:class:`~monsearch.local_llm.server.LocalServer` uses these to know that the server
answering on its port is the one it started (the listening socket is open in a
process of its group), and that stopping it left no process of the group behind.
Each function returns None where ``/proc`` does not tell (another system), so the
caller can fall back to weaker checks.
"""

from __future__ import annotations

import ipaddress
import os
import sys
from pathlib import Path

__all__ = ["group_members", "group_sockets", "listening_sockets"]

_PROC = Path("/proc")
_LISTEN = "0A"


def group_members(pgid: int) -> set[int] | None:
    """The live (not zombie) processes whose process group is ``pgid``."""
    if not _PROC.is_dir():
        return None
    found = set()
    for entry in os.scandir(_PROC):
        if not entry.name.isdigit():
            continue
        try:
            stat = (_PROC / entry.name / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[0] != "Z" and fields[2] == str(pgid):
            found.add(int(entry.name))
    return found


def group_sockets(pgid: int) -> set[int] | None:
    """The socket inodes open in any process of group ``pgid``."""
    members = group_members(pgid)
    if members is None:
        return None
    inodes = set()
    for pid in members:
        try:
            fds = os.listdir(_PROC / str(pid) / "fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(_PROC / str(pid) / "fd" / fd)
            except OSError:
                continue
            if target.startswith("socket:[") and target.endswith("]"):
                inodes.add(int(target[8:-1]))
    return inodes


def _address(hex_addr: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    raw = bytes.fromhex(hex_addr)
    if sys.byteorder == "little":  # the kernel prints each 32-bit word in host order
        raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return ipaddress.ip_address(raw)


def _reaches(listener, host) -> bool:
    """Whether a connection to ``host`` can land on a socket listening on ``listener``."""
    if listener.is_unspecified:
        return True
    if isinstance(listener, ipaddress.IPv6Address) and listener.ipv4_mapped is not None:
        listener = listener.ipv4_mapped
    return listener == host


def listening_sockets(port: int, host: str = "127.0.0.1") -> set[int] | None:
    """The inodes of TCP sockets listening on ``port`` that a connection to ``host``
    could reach (the host's own address or a wildcard)."""
    try:
        target = ipaddress.ip_address(host)
    except ValueError:
        target = None
    found, readable = set(), False
    for name in ("tcp", "tcp6"):
        try:
            lines = (_PROC / "net" / name).read_text().splitlines()[1:]
        except OSError:
            continue
        readable = True
        for line in lines:
            f = line.split()
            if len(f) < 10 or f[3] != _LISTEN:
                continue
            addr, _, hex_port = f[1].partition(":")
            if int(hex_port, 16) != port:
                continue
            if target is not None and not _reaches(_address(addr), target):
                continue
            found.add(int(f[9]))
    return found if readable else None
