"""What one step of a trajectory holds that a reader of its findings should see: its
requests, secrets, listeners and files written, each with where in the step's text it
sits (the ``evidence`` of ``findings()``).

A secret is shown masked (its first four and last two characters) wherever the
evidence shows text: in the secret's own ``value``, and in every other item of the
same step (a request's method and URL, a file's path), since a key sent in a URL's
query is the same key. The text is masked before it is cut to its length cap, so a cut
never leaves more of a secret than the mask shows.

Standard library only: the plugin ships this file as it is.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, quote_plus

#: Evidence items listed per kind (requests, secrets, listeners, files) in one step, and
#: how far into a text a span is looked for: a step of an agent's making may hold tens
#: of thousands of findings in megabytes of output (the rest are counted, in
#: ``evidence_more``).
EVIDENCE_PER_KIND = 50
_SPAN_WINDOW = 1_000_000
#: Characters of an item's text shown (a request's method and URL, a file's path).
_WHAT_CHARS = 200
#: Secret values of one step masked in its texts (the longest first): enough for any
#: real step, and a bound on the work for one of an agent's making.
_MASKED_PER_STEP = 500


def _span(text: str, needle: str) -> list[int] | None:
    if not needle:
        return None
    at = text.find(needle, 0, _SPAN_WINDOW)
    return None if at < 0 else [at, at + len(needle)]


def mask(value: str) -> str:
    """A secret as the findings show it: whole when short (8 characters or fewer)."""
    return value if len(value) <= 8 else f"{value[:4]}…{value[-2:]}"


def _hidden(step: Any) -> list[tuple[str, str]]:
    """``(form, its mask)`` for each secret of ``step`` the findings mask, in the forms
    a URL may carry it (as found, percent-encoded), longest first."""
    values: set[str] = set()
    for s in step["secrets"]:
        values.add(s["value"])
    for r in step["requests"]:
        for s in r["secrets"]:
            values.add(s["value"])
    kept = sorted((v for v in values if len(v) > 8), key=lambda v: (-len(v), v))
    out: dict[str, str] = {}
    for v in kept[:_MASKED_PER_STEP]:
        for form in (v, quote(v, safe=""), quote_plus(v, safe="")):
            out.setdefault(form, mask(v))
    return sorted(out.items(), key=lambda fm: -len(fm[0]))


def _shown(text: str, hidden: list[tuple[str, str]]) -> str:
    for form, masked in hidden:
        if form in text:
            text = text.replace(form, masked)
    return text[:_WHAT_CHARS]


def step_evidence(step: Any) -> tuple[list[dict[str, Any]], int]:
    """What the view saw in one step: requests, secrets, listeners, files, with spans (at
    most :data:`EVIDENCE_PER_KIND` of each kind), and how many more there were."""
    command = step["command"] or step["think"]
    channel = "think" if step["think"] else "command"
    out: list[dict[str, Any]] = []
    cap = EVIDENCE_PER_KIND
    more = sum(
        max(0, len(step[kind]) - cap)
        for kind in ("requests", "secrets", "listeners", "files_written")
    )
    hidden = _hidden(step)
    for r in step["requests"][:cap]:
        out.append(
            {
                "kind": "request",
                "what": _shown(f"{r['method']} {r['url']}", hidden),
                "host_class": r["host_class"],
                "repeat": r["repeat"],
                "channel": channel,
                "span": _span(command, r["url"]) or _span(command, r["host"]),
            }
        )
    for s in step["secrets"][:cap]:
        where = s["where"]
        text = step["observation"] if where == "observation" else command
        out.append(
            {
                "kind": "secret",
                "what": f"{s['kind']} in {where}" + (f" ({s['field']})" if s["field"] else ""),
                "value": mask(s["value"]),
                "channel": "observation" if where == "observation" else channel,
                "span": _span(text, s["value"]),
            }
        )
    for li in step["listeners"][:cap]:
        out.append(
            {
                "kind": "listener",
                "what": f"{li['kind']} on port {li['port']}",
                "channel": channel,
                "span": None,
            }
        )
    for f in step["files_written"][:cap]:
        out.append(
            {
                "kind": "file_written",
                "what": _shown(f["path"], hidden),
                "channel": channel,
                "span": _span(command, f["path"]),
            }
        )
    if step["repeat"] > 1:
        out.append(
            {
                "kind": "loop",
                "what": f"runs {step['repeat']} times",
                "channel": channel,
                "span": None,
            }
        )
    return out, more
