"""Operator infrastructure signals: listeners, tunnels, the agent's own addresses,
and HTTP status codes shown in command output."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable

from monsearch.sandbox.http_extract import python_source
from monsearch.sandbox.shell import Command

FileLookup = Callable[[str], "str | None"]

_PY_SERVER = re.compile(
    r"\b(?:HTTPServer|ThreadingHTTPServer|TCPServer|ThreadingTCPServer|UDPServer|make_server|serve_forever|"
    r"BaseHTTPRequestHandler|SimpleHTTPRequestHandler|\.listen\(|app\.run\(|uvicorn\.run\(|web\.run_app\()"
)
_PY_PORT = re.compile(r"\(\s*\(\s*['\"][^'\"]*['\"]\s*,\s*(\d{2,5})\s*\)|port\s*=\s*(\d{2,5})|\bPORT\s*=\s*(\d{2,5})")
_TUNNELS = {"ngrok", "cloudflared", "lt", "localtunnel", "bore", "frpc", "serveo", "tunnelto", "zrok"}
_TUNNEL_HOSTS = re.compile(r"serveo\.net|localhost\.run|ngrok|trycloudflare|loca\.lt|pinggy", re.I)


def listeners_of(cmds: list[Command], files: FileLookup) -> list[dict[str, object]]:
    """Listeners and tunnels the commands start: ``{kind, port, background, echo}``."""
    out: list[dict[str, object]] = []
    for cmd in cmds:
        argv = cmd.argv
        if not argv:
            continue
        name = argv[0].rsplit("/", 1)[-1]
        kind: str | None = None
        port: int | None = None
        echo = False
        if name in ("nc", "ncat", "netcat") and any(
            a == "-l" or a == "--listen" or (a.startswith("-") and not a.startswith("--") and "l" in a) for a in argv[1:]
        ):
            kind = "nc"
            port = _first_port(argv[1:], after="-p")
        elif name == "socat" and any("LISTEN" in a.upper() for a in argv[1:]):
            kind = "socat"
            m = re.search(r"LISTEN:(\d+)", " ".join(argv), re.I)
            port = int(m.group(1)) if m else None
        elif name in _TUNNELS or (name == "ssh" and _TUNNEL_HOSTS.search(" ".join(argv))):
            kind = "tunnel"
            port = _first_port(argv[1:])
        elif name == "php" and "-S" in argv:
            kind = "php"
            m = re.search(r":(\d+)", " ".join(argv))
            port = int(m.group(1)) if m else None
        elif name == "busybox" and "httpd" in argv:
            kind = "httpd"
            port = _first_port(argv[1:], after="-p")
        elif name.startswith(("python", "pypy")):
            if "-m" in argv:
                idx = argv.index("-m")
                mod = argv[idx + 1] if idx + 1 < len(argv) else ""
                if mod in ("http.server", "SimpleHTTPServer", "uploadserver", "smtpd", "aiosmtpd"):
                    kind = "http.server"
                    port = _first_port(argv[idx + 2 :]) or 8000
            if kind is None:
                code = python_source(cmd, files)
                if code and _PY_SERVER.search(code):
                    kind = "python_server"
                    m = _PY_PORT.search(code)
                    if m:
                        port = int(next(g for g in m.groups() if g))
                    echo = "do_POST" in code and ("rfile.read" in code or "wfile.write" in code)
        if kind is not None:
            out.append({"kind": kind, "port": port, "background": cmd.background, "echo": echo})
    return out


def _first_port(args: list[str], after: str | None = None) -> int | None:
    if after is not None and after in args:
        idx = args.index(after)
        if idx + 1 < len(args) and args[idx + 1].isdigit():
            return int(args[idx + 1])
    for a in args:
        if a.isdigit() and 0 < int(a) < 65536:
            return int(a)
        m = re.fullmatch(r"-\w*p(\d+)", a)
        if m:
            return int(m.group(1))
    return None


_IPV4 = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?![\d.])")
_INET = re.compile(r"\binet (?:addr:)?(\d{1,3}(?:\.\d{1,3}){3})")
_HOSTNAME_LINE = re.compile(r"^[a-z0-9][a-z0-9.-]{2,62}$")


def _usable_ip(ip: str) -> bool:
    try:
        addr = ipaddress.IPv4Address(ip)
    except ValueError:
        return False
    return not (addr.is_loopback or addr.is_unspecified or addr.is_multicast or ip.endswith(".255") or ip.startswith("255."))


def own_addresses_of(cmds: list[Command], observation: str) -> list[str]:
    """Addresses (and the hostname) the agent learned as its own in this step."""
    found: list[str] = []
    names = [c.argv[0].rsplit("/", 1)[-1] for c in cmds if c.argv]
    texts = [" ".join(c.argv) for c in cmds if c.argv]
    if not observation:
        return found
    if "ip" in names or "ifconfig" in names:
        found += [ip for ip in _INET.findall(observation) if _usable_ip(ip)]
    if "hostname" in names:
        for c in cmds:
            if c.argv and c.argv[0] == "hostname":
                flags = c.argv[1:]
                if any(f in ("-i", "-I", "--ip-address", "--all-ip-addresses") for f in flags):
                    found += [ip for ip in _IPV4.findall(observation) if _usable_ip(ip)]
                elif not flags:
                    for line in observation.splitlines():
                        line = line.strip()
                        if _HOSTNAME_LINE.match(line) and not _IPV4.fullmatch(line):
                            found.append(line)
                            break
    if any("/etc/hosts" in t for t in texts) or "getent" in names:
        for line in observation.splitlines():
            parts = line.split()
            if len(parts) >= 2 and _IPV4.fullmatch(parts[0]) and _usable_ip(parts[0]):
                found.append(parts[0])
                found += [p for p in parts[1:] if _HOSTNAME_LINE.match(p) and "localhost" not in p]
    if any(t.startswith("cat /proc/net/fib_trie") for t in texts):
        found += [ip for ip in _IPV4.findall(observation) if _usable_ip(ip) and not ip.endswith(".0")]
    out: list[str] = []
    for f in found:
        if f not in out:
            out.append(f)
    return out


# --------------------------------------------------------------------------- status codes

_STATUS_PATTERNS = re.compile(
    r"(?m)^(?:< )?HTTP/\d(?:\.\d)?\s+(?P<a>\d{3})\b"
    r"|awaiting response\.\.\.\s*(?P<b>\d{3})\b"
    r"|\bERROR (?P<c>\d{3})\b"
    r"|HTTP Error (?P<d>\d{3})\b"
    r"|<title>(?P<e>\d{3}) [^<]*</title>"
    r"|<Response \[(?P<f>\d{3})\]>"
    r"|\b[Ss]tatus(?:[_ ][Cc]ode)?\s*[:=]\s*(?P<g>\d{3})\b"
)


def statuses_in(observation: str) -> list[tuple[int, int]]:
    """``(position, status)`` for every HTTP status line/marker in the output."""
    if not observation:
        return []
    out: list[tuple[int, int]] = []
    last_pos = -100
    for m in _STATUS_PATTERNS.finditer(observation):
        code = int(next(g for g in m.groups() if g))
        if not 100 <= code <= 599:
            continue
        # A Werkzeug page after its own status line repeats the code: count once.
        if m.group("e") and out and out[-1][1] == code and m.start() - last_pos < 2000:
            continue
        out.append((m.start(), code))
        last_pos = m.start()
    return out


def write_out_status(observation: str, write_out: str) -> int | None:
    """The ``%{http_code}`` value that curl's ``-w`` format printed, if found."""
    if "http_code" not in write_out and "response_code" not in write_out:
        return None
    fmt = write_out.replace("\\n", "\n").replace("\\t", "\t").replace("\\r", "\r")
    parts = re.split(r"(%\{[^}]*\})", fmt)
    pattern = ""
    for p in parts:
        if p in ("%{http_code}", "%{response_code}"):
            pattern += r"(\d{3})"
        elif p.startswith("%{"):
            pattern += r".*?"
        else:
            pattern += re.escape(p).replace("\\\n", r"\s*").replace("\n", r"\s*")
    try:
        matches = list(re.finditer(pattern, observation, re.S))
    except re.error:
        return None
    if not matches:
        return None
    return int(matches[-1].group(1))
