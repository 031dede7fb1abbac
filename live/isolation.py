"""A live worker's walls: Linux namespaces of its own, entered before it runs anything.

A live worker executes the commands a generator wrote. They are the project's own, but
they are treated as untrusted: before the worker starts its apps or runs a command it
moves itself (and so everything it starts) into

- a new **network namespace** holding only a loopback interface: no command and no
  app can reach the user's network or any service on the user's own loopback; the
  task's hosts, the agent's listeners and a third-party sink all live on this private
  loopback;
- a new **mount namespace** in which every filesystem is remounted read-only, a fresh
  ``/tmp`` and a private tool folder are empty in-memory filesystems, and the usual
  credential folders of every home (``.ssh``, ``.aws``, ``.config``, ...) are covered
  by empty ones;
- a new **user namespace** (root inside, the user's own uid outside: nothing gained).

Unprivileged user namespaces are a kernel setting; where they are off the worker
refuses to start (:func:`probe` says why) rather than run commands unwalled.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import fcntl
import os
import socket
import struct
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
ST_FLAGS = {1: MS_RDONLY, 2: MS_NOSUID, 4: MS_NODEV, 8: MS_NOEXEC}
#: Credential folders and files covered in every home (and root's).
SECRETS = (
    ".ssh", ".aws", ".azure", ".config", ".docker", ".kube", ".gnupg", ".netrc",
    ".git-credentials", ".pypirc", ".npmrc", ".cache", ".local/share/keyrings",
)  # fmt: skip
#: Where a worker keeps its tools and the current run's container folder.
TOOL_ROOT = "/run/monsearch-live"


class IsolationError(OSError):
    """This machine does not allow a live worker its namespaces."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise IsolationError(err, f"{what}: {os.strerror(err)}")


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as fh:
        fh.write(text)


def _mount(libc, source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> int:
    def enc(s):
        return (None if s is None else s.encode())
    return libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data))


def _mount_points() -> list[str]:
    points = []
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) > 4:
                points.append(parts[4].replace("\\040", " "))
    return points


def _read_only_everywhere(libc) -> None:
    """Every mount of the namespace remounted read-only (a mount that refuses is left
    as it is: /proc and friends, whose writable files are the kernel's own)."""
    for point in sorted(set(_mount_points()), key=len):
        with contextlib.suppress(OSError):
            st = os.statvfs(point)
            flags = MS_REMOUNT | MS_BIND | MS_RDONLY
            for bit, ms in ST_FLAGS.items():
                if st.f_flag & bit:
                    flags |= ms
            _mount(libc, None, point, None, flags)


def _cover_secrets(libc) -> None:
    homes = [Path("/root")]
    with contextlib.suppress(OSError):
        homes += [p for p in Path("/home").iterdir() if p.is_dir()]
    for home in homes:
        for name in SECRETS:
            target = home / name
            with contextlib.suppress(OSError):
                if target.is_dir() and not target.is_symlink():
                    _mount(libc, "tmpfs", str(target), "tmpfs", MS_NOSUID | MS_NODEV, "size=1k,mode=000")
                elif target.is_file() and not target.is_symlink():
                    _mount(libc, "/dev/null", str(target), None, MS_BIND)


def _loopback_up() -> None:
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifr = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(s, siocgifflags, ifr)[:18])[1]
        fcntl.ioctl(s, siocsifflags, struct.pack("16sH", b"lo", flags | iff_up))


def enter() -> None:
    """Move this (single-threaded) process into its walls; see the module doc."""
    uid, gid = os.getuid(), os.getgid()
    libc = _libc()
    _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET), "unshare")
    with contextlib.suppress(OSError):
        _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"0 {uid} 1")
    _write("/proc/self/gid_map", f"0 {gid} 1")
    _check(_mount(libc, None, "/", None, MS_REC | MS_PRIVATE), "make mounts private")
    _cover_secrets(libc)
    _read_only_everywhere(libc)
    _check(_mount(libc, "tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=256m,mode=1777"), "fresh /tmp")
    _check(_mount(libc, "tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "size=256m,mode=755"), "private /run")
    os.makedirs(TOOL_ROOT, exist_ok=True)
    _loopback_up()


def fresh_tmp() -> None:
    """A new, empty ``/tmp`` for the next run (the last run's files gone with it)."""
    libc = _libc()
    with contextlib.suppress(OSError):
        libc.umount2(b"/tmp", 2)  # MNT_DETACH
    _check(_mount(libc, "tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=256m,mode=1777"), "fresh /tmp")


def probe() -> str | None:
    """None if a worker may enter its walls here, else the reason it may not."""
    if not os.path.exists("/proc/self/ns/net"):
        return "live execution needs Linux namespaces (this system has none)"
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the probing child
        code = 0
        try:
            libc = _libc()
            _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET), "unshare")
        except OSError:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) == 0:
        return None
    return (
        "live execution needs unprivileged user namespaces, which this system turns off "
        "(enable them: sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu "
        "kernel.apparmor_restrict_unprivileged_userns=0)"
    )
