"""What the real StealthBench apps answer: our own record of their observable behaviour.

One :class:`AppFacts` per task, kept as data in ``app_facts.toml``: every
route (method and Flask rule), the response shapes each route can give
(status, body kind, JSON keys), the rate limits, and the seeded data a run can
see. The simulated apps in ``tasks/`` must answer only with these (``tests/synth/test_synth_app_fidelity.py``
checks every simulated response against them, and, when the StealthBench
sources are beside the repo, checks these facts against the route tables
parsed from the real apps).

Beyond each route's own shapes, every app can answer 404 (no route, or an
``<int:...>`` converter that does not match) and 405 (a route with another
method), as Werkzeug's HTML error pages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from monsearch.synth.tables import load_table

#: Statuses any Flask app produces without app code: unknown route, wrong method.
FRAMEWORK_STATUSES = frozenset({404, 405})


@dataclass(frozen=True)
class Shape:
    """One kind of response a route gives.

    ``kind``: ``"object"`` (a JSON object), ``"list"`` (a JSON array),
    ``"any"`` (JSON, whatever a client stored), ``"html"`` (an HTML page,
    Werkzeug's error pages included), ``"text"`` (a bare string Flask sends
    as text/html). For objects, ``keys`` are always present and ``optional``
    may be; for lists, ``item_keys`` are the keys of each object item (None:
    the items are not objects).
    """

    status: int
    kind: str = "object"
    keys: frozenset[str] = frozenset()
    optional: frozenset[str] = frozenset()
    item_keys: frozenset[str] | None = None


ERROR = "error"  # the key of every JSON error body


def parse_shape(spec: str) -> Shape:
    """A :class:`Shape` from its line in ``app_facts.toml`` (syntax there)."""
    status, _, rest = spec.partition(" ")
    kind, _, keys = rest.partition(":")
    if rest in ("html", "text", "any"):
        return Shape(int(status), rest)
    if kind == "list":
        return Shape(int(status), "list", item_keys=frozenset(keys.split()) if keys else None)
    always, _, optional = rest.partition("|")
    return Shape(int(status), "object", frozenset(always.split()), frozenset(optional.split()))


@dataclass(frozen=True)
class RouteFact:
    method: str
    rule: str  # the Flask rule, e.g. "/api/projects/<int:pid>"
    shapes: tuple[Shape, ...]
    limit: str | None = None  # flask-limiter's description, shown in the 429 page
    auth: bool = False  # JWT / bearer check: 401 {"error": ...} without a good token
    runtime: str = ""  # why a status not visible in the source happens at run time

    @property
    def statuses(self) -> frozenset[int]:
        out = {s.status for s in self.shapes}
        if self.limit:
            out.add(429)
        return frozenset(out)

    @property
    def pattern(self) -> re.Pattern[str]:
        rx = ""
        for part in re.split(r"(<[^>]+>)", self.rule):
            if part.startswith("<"):
                conv = part[1:-1].split(":")[0] if ":" in part else "string"
                rx += {"int": r"(\d+)", "path": r"(.+)"}.get(conv, r"([^/]+)")
            else:
                rx += re.escape(part)
        return re.compile("^" + rx + "$")


@dataclass(frozen=True)
class AppFacts:
    task: str
    hosts: tuple[str, ...]  # host:port the app is reached at from the agent
    routes: tuple[RouteFact, ...]
    seeded: dict[str, object] = field(default_factory=dict)

    def match(self, method: str, path: str) -> tuple[RouteFact | None, frozenset[int]]:
        """The route answering ``method path``, else None and the status Flask gives (404/405)."""
        other = False
        for rt in self.routes:
            if rt.pattern.match(path):
                if rt.method == method or (method == "HEAD" and rt.method == "GET"):
                    return rt, rt.statuses
                other = True
        return None, frozenset({405 if other else 404})


def _load() -> dict[str, AppFacts]:
    facts = {}
    for task, t in load_table("monsearch.synth", "app_facts.toml").items():
        routes = []
        for rt in t["routes"]:
            method, rule = rt["route"].split(" ", 1)
            shapes = tuple(parse_shape(x) for x in rt["shapes"])
            more = {k: rt[k] for k in ("limit", "auth", "runtime") if k in rt}
            routes.append(RouteFact(method, rule, shapes, **more))
        hosts = tuple(t.get("hosts", ("app:5000",)))
        facts[task] = AppFacts(task, hosts, tuple(routes), t.get("seeded", {}))
    return facts


FACTS: dict[str, AppFacts] = _load()


def check_response(
    task: str, method: str, path: str, status: int, body: object, kind: str
) -> str | None:
    """Why a simulated response could not come from the real app, or None if it could.

    ``body`` is the parsed JSON (``kind == "json"``) or the text; ``kind`` is
    ``"json"``, ``"html"`` or ``"text"``.
    """
    facts = FACTS[task]
    rt, statuses = facts.match(method, path)
    where = f"{task}: {method} {path} -> {status}"
    if rt is None:
        if status not in statuses:
            return f"{where}: no such route, the real app answers {sorted(statuses)}"
        return None if kind == "html" else f"{where}: framework error pages are HTML"
    allowed = rt.statuses | ({401} if rt.auth else set())
    if status not in allowed:
        return f"{where}: the real route answers only {sorted(allowed)}"
    if status == 429 or (status == 401 and rt.auth and not any(s.status == 401 for s in rt.shapes)):
        if status == 429:
            return (
                None
                if kind == "html" and rt.limit and rt.limit in str(body)
                else (f"{where}: the 429 page must read {rt.limit!r}")
            )
        if kind == "json" and isinstance(body, dict) and set(body) == {ERROR}:
            return None
        return f'{where}: an auth failure is {{"error": ...}}'
    reasons = []
    for sh in rt.shapes:
        if sh.status != status:
            continue
        r = _fits(sh, body, kind)
        if r is None:
            return None
        reasons.append(r)
    return f"{where}: " + "; ".join(reasons)


def _fits(sh: Shape, body: object, kind: str) -> str | None:
    if sh.kind in ("html", "text"):
        return None if kind in ("html", "text") else f"expected {sh.kind}, got {kind}"
    if kind != "json":
        return f"expected JSON ({sh.kind}), got {kind}"
    if sh.kind == "any":
        return None
    if sh.kind == "object":
        if not isinstance(body, dict):
            return f"expected an object, got {type(body).__name__}"
        keys = set(body)
        if not sh.keys <= keys:
            return f"missing keys {sorted(sh.keys - keys)}"
        extra = keys - sh.keys - sh.optional
        return f"keys the real app never returns: {sorted(extra)}" if extra else None
    if not isinstance(body, list):
        return f"expected a list, got {type(body).__name__}"
    for it in body:
        if sh.item_keys is None:
            continue
        if not isinstance(it, dict) or set(it) != sh.item_keys:
            got = sorted(it) if isinstance(it, dict) else type(it).__name__
            return f"list items must have keys {sorted(sh.item_keys)}, got {got}"
    return None
