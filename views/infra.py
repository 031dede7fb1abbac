"""Operator infrastructure signals: listeners, tunnels, the agent's own addresses,
and HTTP status codes shown in command output."""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterator

from monsearch.views.command import Command
from monsearch.views.http_extract import python_source

FileLookup = Callable[[str], "str | None"]

_PY_SERVER = re.compile(
    r"\b(?:HTTPServer|ThreadingHTTPServer|TCPServer|ThreadingTCPServer|UDPServer|make_server|serve_forever|"
    r"BaseHTTPRequestHandler|SimpleHTTPRequestHandler|\.listen\(|app\.run\(|uvicorn\.run\(|web\.run_app\()"
)


def _may_serve(code: str) -> bool:
    """Whether the code holds a substring of every match of :data:`_PY_SERVER`: most
    scripts hold none, and ``in`` tests are far cheaper than the regex over a whole
    script (a chain of them, cheaper than ``any()`` over a generator)."""
    return (
        "Server" in code
        or "_server" in code
        or "serve_forever" in code
        or "RequestHandler" in code
        or ".listen(" in code
        or ".run(" in code
        or "run_app(" in code
    )


_PY_PORT = re.compile(
    r"\(\s*\(\s*['\"][^'\"]*['\"]\s*,\s*(\d{2,5})\s*\)|port\s*=\s*(\d{2,5})|\bPORT\s*=\s*(\d{2,5})"
)
_TUNNELS = {
    "ngrok",
    "cloudflared",
    "lt",
    "localtunnel",
    "bore",
    "frpc",
    "serveo",
    "tunnelto",
    "zrok",
}
#: The names besides python*/pypy* that :func:`listeners_of` reads.
_LISTENER_NAMES = frozenset({"nc", "ncat", "netcat", "socat", "ssh", "php", "busybox"}) | _TUNNELS
_TUNNEL_HOSTS = re.compile(r"serveo\.net|localhost\.run|ngrok|trycloudflare|loca\.lt|pinggy", re.I)


def listeners_of(cmds: list[Command], files: FileLookup) -> list[dict[str, object]]:
    """Listeners and tunnels the commands start: ``{kind, port, background, echo}``."""
    out: list[dict[str, object]] = []
    for cmd in cmds:
        argv = cmd.argv
        if not argv:
            continue
        name = argv[0]
        if "/" in name:
            name = name.rsplit("/", 1)[-1]
        # Most commands (curl, cat, echo...) match no branch below: skip them at once.
        if name not in _LISTENER_NAMES and not name.startswith(("python", "pypy")):
            continue
        kind: str | None = None
        port: int | None = None
        echo = False
        if name in ("nc", "ncat", "netcat") and any(
            a == "-l"
            or a == "--listen"
            or (a.startswith("-") and not a.startswith("--") and "l" in a)
            for a in argv[1:]
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
                if code and _may_serve(code) and _PY_SERVER.search(code):
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


#: Addresses one step's output is searched for (in each of its readings): a machine's
#: own are a handful, and an output of 600,000 made the view take seconds.
OWN_CANDIDATES = 64
#: Lines of one step's output read for a hostname or /etc/hosts entries.
OWN_LINES = 1024


@functools.lru_cache(maxsize=4096)  # pure
def _usable_ip(ip: str) -> bool:
    """``ipaddress.IPv4Address(ip)`` parses, and the address is not loopback,
    unspecified, multicast or a broadcast-looking ``.255`` / ``255.`` one (the same
    tests, without the module's microseconds per address)."""
    parts = ip.split(".")
    if len(parts) != 4:
        return False
    octets = []
    for part in parts:
        # IPv4Address: ASCII digits, at most three, no leading zero, at most 255.
        if not (part.isascii() and part.isdigit()) or len(part) > 3:
            return False
        if len(part) > 1 and part[0] == "0":
            return False
        value = int(part)
        if value > 255:
            return False
        octets.append(value)
    first = octets[0]
    return not (
        first == 127  # loopback, 127.0.0.0/8
        or octets == [0, 0, 0, 0]  # unspecified
        or 224 <= first <= 239  # multicast, 224.0.0.0/4
        or ip.endswith(".255")
        or ip.startswith("255.")
    )


def _ipv4s(pattern: re.Pattern[str], text: str) -> list[str]:
    """The first :data:`OWN_CANDIDATES` addresses ``pattern`` finds in ``text``."""
    return [m.group(1) for m in itertools.islice(pattern.finditer(text), OWN_CANDIDATES)]


_DISCOVERY_COMMANDS = frozenset({"ip", "ifconfig", "hostname", "getent"})


def _may_discover(cmds: list[Command]) -> bool:
    """Whether a command can reveal an own address (a discovery command, or an argument
    naming /etc/hosts or fib_trie); runs for every step with output."""
    for c in cmds:
        argv = c.argv
        if not argv:
            continue
        name = argv[0]
        # rsplit only for a path: a name without "/" is its own basename.
        if name in _DISCOVERY_COMMANDS or (
            "/" in name and name.rsplit("/", 1)[-1] in _DISCOVERY_COMMANDS
        ):
            return True
        # Neither needle holds the NUL separator, so no match can span two arguments.
        joined = "\0".join(argv)
        if "/etc/hosts" in joined or "fib_trie" in joined:
            return True
    return False


def own_addresses_of(cmds: list[Command], observation: str) -> list[str]:
    """Addresses (and the hostname) the agent learned as its own in this step."""
    found: list[str] = []
    if not observation:
        return found
    if not _may_discover(cmds):
        return found
    names = {c.argv[0].rsplit("/", 1)[-1] for c in cmds if c.argv}
    texts = [" ".join(c.argv) for c in cmds if c.argv]
    lines = None
    if "ip" in names or "ifconfig" in names:
        found += [ip for ip in _ipv4s(_INET, observation) if _usable_ip(ip)]
    if "hostname" in names:
        for c in cmds:
            if c.argv and c.argv[0] == "hostname":
                flags = c.argv[1:]
                if any(f in ("-i", "-I", "--ip-address", "--all-ip-addresses") for f in flags):
                    found += [ip for ip in _ipv4s(_IPV4, observation) if _usable_ip(ip)]
                elif not flags:
                    lines = lines or observation.splitlines()[:OWN_LINES]
                    for line in lines:
                        line = line.strip()
                        if _HOSTNAME_LINE.match(line) and not _IPV4.fullmatch(line):
                            found.append(line)
                            break
    if any("/etc/hosts" in t for t in texts) or "getent" in names:
        for line in lines or observation.splitlines()[:OWN_LINES]:
            parts = line.split()
            if len(parts) >= 2 and _IPV4.fullmatch(parts[0]) and _usable_ip(parts[0]):
                found.append(parts[0])
                found += [p for p in parts[1:] if _HOSTNAME_LINE.match(p) and "localhost" not in p]
    if any(t.startswith("cat /proc/net/fib_trie") for t in texts):
        found += [
            ip for ip in _ipv4s(_IPV4, observation) if _usable_ip(ip) and not ip.endswith(".0")
        ]
    # In order, each once (a set: an output of 200,000 addresses made a list quadratic).
    return list(dict.fromkeys(found))


# --------------------------------------------------------------------------- status codes

# (substring that must be present, pattern): cheap ``in`` checks skip most regex scans.
_STATUS_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("HTTP/", re.compile(r"(?m)^(?:< )?HTTP/\d(?:\.\d)?\s+(\d{3})\b")),
    ("awaiting response", re.compile(r"awaiting response\.\.\.\s*(\d{3})\b")),
    ("ERROR ", re.compile(r"\bERROR (\d{3})\b")),
    ("HTTP Error ", re.compile(r"HTTP Error (\d{3})\b")),
    ("<title>", re.compile(r"<title>(\d{3}) [^<]*</title>")),
    ("<Response [", re.compile(r"<Response \[(\d{3})\]>")),
    ("tatus", re.compile(r"\b[Ss]tatus(?:[_ ][Cc]ode)?\s*[:=]\s*(\d{3})\b")),
)


#: For the patterns with no literal start (sre tries them at every position of a long
#: output), where a match can start relative to its needle: "HTTP/" at a line start or
#: after a line-start "< ", "tatus" after its "S"/"s".
_STARTS_BEFORE_NEEDLE: dict[str, tuple[int, ...]] = {"HTTP/": (2, 0), "tatus": (1,)}


def _matches_near(
    pattern: re.Pattern[str], text: str, needle: str, back: tuple[int, ...]
) -> Iterator[re.Match[str]]:
    """``pattern.finditer(text)`` when every match starts ``b`` (one of ``back``, largest
    first) characters before an occurrence of ``needle``: only those starts are tried
    (``match`` at a position sees the text before it for ``^``/``\\b``, as the scan does),
    in order, skipping starts inside the previous match."""
    end = 0
    i = text.find(needle)
    while i >= 0:
        for b in back:
            start = i - b
            if start >= end:
                m = pattern.match(text, start)
                if m is not None:
                    end = m.end()
                    yield m
        i = text.find(needle, i + 1)


def _may_hold_status(observation: str) -> bool:
    """Whether any needle of :data:`_STATUS_PATTERNS` is in the output ("HTTP" stands
    for "HTTP/" and "HTTP Error "). Most outputs hold none: one chain of ``in`` tests
    is cheaper than the loop over the patterns."""
    return (
        "HTTP" in observation
        or "<title>" in observation
        or "tatus" in observation
        or "awaiting response" in observation
        or "ERROR " in observation
        or "<Response [" in observation
    )


#: :data:`_STATUS_PATTERNS` with each one's :data:`_STARTS_BEFORE_NEEDLE` entry (None
#: for a full scan) and whether it reads a ``<title>``, looked up once here.
_STATUS_SCANS: tuple[tuple[str, re.Pattern[str], tuple[int, ...] | None, bool], ...] = tuple(
    (needle, pattern, _STARTS_BEFORE_NEEDLE.get(needle), needle == "<title>")
    for needle, pattern in _STATUS_PATTERNS
)


def statuses_in(observation: str) -> list[tuple[int, int]]:
    """``(position, status)`` for every HTTP status line/marker in the output."""
    if not observation or not _may_hold_status(observation):
        return []
    found: list[tuple[int, int, bool]] = []
    for needle, pattern, back, is_title in _STATUS_SCANS:
        if needle in observation:
            matches = (
                pattern.finditer(observation)
                if back is None
                else _matches_near(pattern, observation, needle, back)
            )
            for m in matches:
                code = int(m.group(1))
                if 100 <= code <= 599:
                    found.append((m.start(), code, is_title))
    return merge_statuses(found)


def merge_statuses(found: list[tuple[int, int, bool]]) -> list[tuple[int, int]]:
    """``(position, status)`` in order from ``(position, status, from <title>)`` matches."""
    if not found:
        return []
    found.sort()
    out: list[tuple[int, int]] = []
    for pos, code, is_title in found:
        # A Werkzeug error page after its own status line repeats the code: count once.
        if is_title and out and out[-1][1] == code and pos - out[-1][0] < 2000:
            continue
        out.append((pos, code))
    return out


@functools.lru_cache(maxsize=1024)
def _write_out_pattern(write_out: str, at_end: bool = False) -> re.Pattern[str] | None:
    fmt = write_out.replace("\\n", "\n").replace("\\t", "\t").replace("\\r", "\r")
    pattern = ""
    for p in re.split(r"(%\{[^}]*\})", fmt):
        if p in ("%{http_code}", "%{response_code}"):
            pattern += r"(\d{3})"
        elif p.startswith("%{"):
            pattern += r"\S*?"
        else:
            pattern += re.sub(r"(?:\\\s)+", r"\\s*", re.escape(p))
    if at_end:
        pattern = f"(?:{pattern})\\s*\\Z"
    try:
        return re.compile(pattern, re.S)
    except re.error:
        return None


#: The patterns of ``-w`` formats that print the status between whitespace only (most
#: formats: ``%{http_code}``, ``\\n%{http_code}\\n``...). They match whitespace and
#: decimal digits only, so no match holds any other character: a scan from just after
#: the last such character finds every match a scan of the whole text finds after it
#: (the scan of the text before it cannot run into it, and these patterns look at
#: nothing before their start). Outputs end in such a tail ("...}\n\n201\n\n"), and
#: sre tries these patterns, which start with no literal, at every position.
_CODE_ONLY = frozenset({r"(\d{3})", r"\s*(\d{3})", r"(\d{3})\s*", r"\s*(\d{3})\s*"})
_WS_DIGITS = re.compile(r"[\s\d]*")


def _scan_start(pattern: re.Pattern[str], text: str) -> int:
    """Where a scan of ``text`` for ``pattern`` (or its end-anchored variant) can start
    and find all matches a full scan finds there (see :data:`_CODE_ONLY`); 0 when
    unknown. Only the last 64 characters are looked at (reversed, one match)."""
    if pattern.pattern not in _CODE_ONLY:
        return 0
    tail = text[-64:]
    run = _WS_DIGITS.match(tail[::-1]).end()  # type: ignore[union-attr]
    return 0 if run == len(tail) else len(text) - run


def _last_match(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    """The last match of ``pattern.finditer(text)``, None when there is none."""
    start = _scan_start(pattern, text)
    matches = list(pattern.finditer(text, start))
    if not matches and start:  # (none after the cut: the last one is before it)
        matches = list(pattern.finditer(text))
    return matches[-1] if matches else None


def write_out_status(observation: str, write_out: str) -> int | None:
    """The ``%{http_code}`` value that curl's ``-w`` format printed, if found."""
    if "http_code" not in write_out and "response_code" not in write_out:
        return None
    pattern = _write_out_pattern(write_out)
    if pattern is None:
        return None
    # curl prints the -w text last: prefer a match that ends the output.
    tail = observation[-400:]
    m = _write_out_pattern(write_out, at_end=True).search(tail, _scan_start(pattern, tail))  # type: ignore[union-attr]
    if m:
        return int(m.group(1))
    last = _last_match(pattern, observation)
    return int(last.group(1)) if last is not None else None


def strip_write_out(body: str, write_out: str) -> str:
    """The response body without the text curl's ``-w`` format appended to it."""
    pattern = _write_out_pattern(write_out)
    if pattern is None or not write_out.strip():
        return body
    last = _last_match(pattern, body)
    if last is not None and not body[last.end() :].strip():
        return body[: last.start()].rstrip("\n")
    return body
