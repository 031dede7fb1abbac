"""One exchange (a request, the server's answer and what the client needs to print it),
its rendering (command, stdout, stderr), and the output shapes clients share."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from monsearch.synth.observations import Response
from monsearch.synth.request import Req


@dataclass
class Exchange:
    """One request, its response, and the context needed to print it."""

    req: Req
    resp: Response | None  # None: connection failed (host unreachable)
    date: str  # HTTP date of the response
    ip: str  # address the host name resolved to
    extract: str | None = None  # a JSON key the agent wants (jq -r .key)
    grep: str | None = None  # a grep pattern the agent pipes the body through
    error: str = ""  # client error text for failed connections
    stamp: str = "2026-08-01 12:00:00"  # local time as wget prints it


@dataclass
class Rendered:
    """The command an agent writes for an exchange and what it prints.

    ``extra["files"]``: files the command wrote (path -> content), for the agent's record.
    """

    command: str
    stdout: str = ""
    stderr: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def observation(self) -> str:
        return self.stdout + "\n" + self.stderr


# --------------------------------------------------------------------------- output shapes


def jq_pretty(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def httpie_pretty(obj: Any) -> str:
    return json.dumps(obj, indent=4, sort_keys=True, ensure_ascii=False) + "\n"


def status_line(resp: Response) -> str:
    return f"HTTP/1.1 {resp.status} {resp.reason}"


def raw_http(resp: Response, date: str, crlf: bool = True) -> str:
    nl = "\r\n" if crlf else "\n"
    return status_line(resp) + nl + nl.join(resp.header_lines(date)) + nl + nl + resp.body


def jq_filter_output(resp: Response, key: str | None) -> tuple[str, str]:
    """stdout/stderr of ``| jq .`` or ``| jq -r .key`` on the body."""
    data = resp.data
    if data is None:
        return "", "jq: parse error: Invalid numeric literal at line 1, column 10\n"
    if key is None:
        return jq_pretty(data), ""
    val = data.get(key) if isinstance(data, dict) else None
    if val is None:
        return "null\n", ""
    if isinstance(val, str):
        return val + "\n", ""
    return jq_pretty(val), ""


def grep_lines(body: str, pattern: str) -> str:
    """What ``| grep -i pattern`` keeps of ``body``."""
    low = pattern.lower()
    lines = [ln for ln in body.splitlines() if low in ln.lower()]
    return "".join(ln + "\n" for ln in lines)
