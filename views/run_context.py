"""What the view knows of a run before reading its commands: the targets and credentials
the prompt names, each step's time relative to the first, and the class of a host
(``target``, ``own``, ``loopback``, ``internal``, ``external``).
"""

from __future__ import annotations

import functools
import ipaddress
import re
from datetime import UTC, datetime

from monsearch.corpora.model import Step
from monsearch.views.frozen import FrozenDict
from monsearch.views.ids import new_view_id_key, view_id  # noqa: F401 - re-exported
from monsearch.views.request import split_url

#: The view type: one concrete read-only mapping class.
TrajectoryView = FrozenDict


_TARGET_URL = re.compile(r"\bhttps?://[A-Za-z0-9._-]+(?::\d+)?", re.I)
_CREDS_IN_PROMPT = re.compile(r"credentials?:?\s*([A-Za-z0-9_.@-]+)\s*/\s*(\S+)", re.I)
_LOOPBACK_NAMES = frozenset(
    {"localhost", "ip6-localhost", "ip6-loopback", "0.0.0.0", "[::1]", "::1", "[::]", "::"}
)


def _targets(prompt: str) -> tuple[list[str], list[str]]:
    bases: list[str] = []
    hosts: list[str] = []
    for m in _TARGET_URL.finditer(prompt or ""):
        base = m.group().rstrip(".").lower()
        if base not in bases:
            bases.append(base)
            host = split_url(base).host
            if host and host not in hosts:
                hosts.append(host)
    return bases, hosts


@functools.lru_cache(maxsize=1024)
def _prompt_parts(
    prompt: str,
) -> tuple[tuple[str, ...], tuple[str, ...], frozenset[str], tuple[str, ...]]:
    """Targets, their hosts (and as a set), and the passwords of the prompt's "known test
    credentials". Cached (pure): the runs of one task share their prompt."""
    targets, hosts = _targets(prompt)
    passwords = []
    for m in _CREDS_IN_PROMPT.finditer(prompt):
        pw = m.group(2).rstrip(".,;)")
        if len(pw) >= 4:
            passwords.append(pw)
    return tuple(targets), tuple(hosts), frozenset(hosts), tuple(passwords)


def _seconds(ts: str | None) -> float | None:
    if not ts:
        return None
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except (ValueError, TypeError):
        return None


#: The span where :func:`_relative_times` may skip the float ``round`` (2004-2038).
_FIRST = datetime.fromtimestamp(2**30, UTC)
_LAST = datetime.fromtimestamp(2**31, UTC)


def _relative_times(steps: tuple[Step, ...]) -> list[float | None]:
    """Each step's timestamp in seconds since the first step's, rounded to microseconds
    (None before the first readable timestamp and where unreadable).

    Exact shortcut, in one pass: when every timestamp carries a UTC offset and no "Z"
    (then ``fromisoformat`` reads it as :func:`_seconds` does) and falls in [2**30,
    2**31) seconds since the epoch (2004-2038), their floats are each within 2**-23 s
    of their whole microseconds, so ``round(b - a, 6)`` (the difference is exact by
    Sterbenz) is the difference in whole microseconds / 10**6: ``total_seconds()`` of
    the datetimes' difference, without the float ``round`` (a third of the time)."""
    out: list[float | None] = []
    t0: datetime | None = None
    for step in steps:
        ts = step.timestamp
        if not ts:
            out.append(None)
            continue
        if type(ts) is not str or "Z" in ts:
            return _relative_times_slow(steps)
        try:
            dt = datetime.fromisoformat(ts)
        except ValueError:
            return _relative_times_slow(steps)
        if dt.tzinfo is None or not _FIRST <= dt < _LAST:
            return _relative_times_slow(steps)
        if t0 is None:
            t0 = dt
        out.append((dt - t0).total_seconds())
    return out


def _relative_times_slow(steps: tuple[Step, ...]) -> list[float | None]:
    """:func:`_relative_times` for any timestamps: each read by :func:`_seconds`."""
    out: list[float | None] = []
    t0: float | None = None
    for step in steps:
        ts = _seconds(step.timestamp)
        if ts is not None and t0 is None:
            t0 = ts
        out.append(None if ts is None or t0 is None else round(ts - t0, 6))
    return out


def host_class(host: str, targets: frozenset[str], own: frozenset[str]) -> str:
    """``target`` | ``own`` | ``loopback`` | ``internal`` | ``external`` for a host."""
    h = host.strip("[]").lower()
    if h in targets:
        return "target"
    if h in own:
        return "own"
    return _other_host_class(h)


@functools.lru_cache(maxsize=4096)
def _other_host_class(h: str) -> str:
    if h in _LOOPBACK_NAMES or h.startswith("127.") or h == "0.0.0.0" or h == "::1":
        return "loopback"
    try:
        addr = ipaddress.ip_address(h)
    except ValueError:
        if not h:
            return "internal"
        if "." not in h or h.endswith(
            (".internal", ".local", ".lan", ".localdomain", ".svc", ".cluster.local", ".docker")
        ):
            return "internal"
        return "external"
    if addr.is_loopback or addr.is_unspecified:
        return "loopback"
    if addr.is_private or addr.is_link_local:
        return "internal"
    return "external"
