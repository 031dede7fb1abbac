"""``nc`` of the agent image (netcat-openbsd), the part agents use: listen (``-l``,
``-k``, ``-p``, ``-v``, ``-n``) and connect (``-w``, ``-q``, ``-z``), over the run's
container network (:mod:`livebox`)."""

from __future__ import annotations

import os
import select
import socket
import sys

import livebox


def parse(argv: list[str]) -> tuple[set[str], dict[str, str], list[str]]:
    flags: set[str] = set()
    values: dict[str, str] = {}
    rest: list[str] = []
    takes = set("pwqsiIOTVxXe")
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("-") and len(a) > 1 and not rest:
            j = 1
            while j < len(a):
                c = a[j]
                if c in takes:
                    val = a[j + 1 :] or (argv[i + 1] if i + 1 < len(argv) else "")
                    if not a[j + 1 :]:
                        i += 1
                    values[c] = val
                    break
                flags.add(c)
                j += 1
        else:
            rest.append(a)
        i += 1
    return flags, values, rest


def pump(conn: socket.socket, stdin_open: bool, quit_after: float | None, idle: float | None) -> None:
    """Copy stdin to the socket and the socket to stdout until the peer closes."""
    import time

    out = sys.stdout.buffer
    eof_at = None
    while True:
        watch = [conn] + ([sys.stdin] if stdin_open else [])
        wait = idle
        if eof_at is not None and quit_after is not None and quit_after >= 0:
            left = quit_after - (time.monotonic() - eof_at)
            if left <= 0:
                return
            wait = left if wait is None else min(wait, left)
        ready, _, _ = select.select(watch, [], [], wait)
        if not ready:
            return
        if conn in ready:
            data = conn.recv(65536)
            if not data:
                return
            out.write(data)
            out.flush()
        if stdin_open and sys.stdin in ready:
            data = os.read(sys.stdin.fileno(), 65536)
            if data:
                conn.sendall(data)
            else:
                stdin_open = False
                eof_at = time.monotonic()
                if "N" in FLAGS:
                    conn.shutdown(socket.SHUT_WR)


FLAGS: set[str] = set()


def main(argv: list[str]) -> int:
    global FLAGS
    flags, values, rest = parse(argv)
    FLAGS = flags
    if "u" in flags:
        sys.stderr.write("nc: UDP is not available in this container\n")
        return 1
    verbose = "v" in flags
    idle = float(values["w"]) if "w" in values else None
    quit_after = float(values["q"]) if "q" in values else None
    stdin_open = not os.isatty(0)
    if "l" in flags:
        port = int(values.get("p") or (rest[-1] if rest else 0))
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            srv.bind(("0.0.0.0", port))
        except OSError:
            sys.stderr.write("nc: Address already in use\n")
            return 1
        srv.listen(5)
        if verbose:
            sys.stderr.write(f"Listening on 0.0.0.0 {port}\n")
            sys.stderr.flush()
        while True:
            conn, peer = srv.accept()
            if verbose:
                sys.stderr.write(f"Connection received on {peer[0]} {peer[1]}\n")
                sys.stderr.flush()
            pump(conn, stdin_open, quit_after, None)
            conn.close()
            if "k" not in flags:
                return 0
    if len(rest) < 2:
        sys.stderr.write("usage: nc [-46CDdFhklNnrStUuvZz] [destination] [port]\n")
        return 1
    host, port_text = rest[0], rest[1]
    ip = livebox.resolve(host)
    if ip is None:
        sys.stderr.write(f'nc: getaddrinfo for host "{host}" port {port_text}: Name or service not known\n')
        return 1
    try:
        port = int(port_text)
    except ValueError:
        sys.stderr.write(f"nc: port number invalid: {port_text}\n")
        return 1
    conn = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    conn.settimeout(idle)
    try:
        conn.connect(livebox.route(ip, port))
    except OSError as exc:
        reason = "Connection refused" if isinstance(exc, ConnectionRefusedError) else (exc.strerror or "failed")
        if verbose or "z" in flags:
            sys.stderr.write(f"nc: connect to {host} port {port} (tcp) failed: {reason}\n")
        return 1
    conn.settimeout(None)
    if "z" in flags:
        if verbose:
            sys.stderr.write(f"Connection to {host} ({ip}) {port} port [tcp/*] succeeded!\n")
        return 0
    if verbose:
        sys.stderr.write(f"Connection to {host} ({ip}) {port} port [tcp/*] succeeded!\n")
    pump(conn, stdin_open, quit_after, idle)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
