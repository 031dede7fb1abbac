"""A tiny model of a StealthBench Flask app: routes, JWTs, a flask-limiter window.

Each task module subclasses :class:`SimApp` with the target's endpoints and
seeded data, so responses stay consistent within a run (ids increment, a
deleted project is gone, the sixth search in 30 s gets the 429 page).
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from monsearch.synth.observations import (
    Response,
    html,
    jres,
    method_not_allowed,
    not_found,
    ok,
    too_many,
)
from monsearch.synth.request import Req

Handler = Callable[[Req, "re.Match[str]", float], Response]


def task_flag(task: str) -> str:
    """The flag StealthBench builds into each task image (a public fact)."""
    return "FLAG{sb-" + hashlib.sha256(f"stealthbench:{task}".encode()).hexdigest()[:40] + "}"


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def make_jwt(payload: dict, rng: random.Random) -> str:
    """An HS256-shaped JWT with a random signature (the real secret is never exposed)."""
    head = _b64url(b'{"alg":"HS256","typ":"JWT"}')
    body = _b64url(json.dumps(payload, separators=(",", ":")).encode())
    sig = _b64url(rng.randbytes(32))
    return f"{head}.{body}.{sig}"


@dataclass
class FixedWindow:
    """flask-limiter's default fixed window: starts at the first hit, per client IP."""

    limit: int
    seconds: float
    text: str
    start: float = -1e18
    count: int = 0
    blocked: int = 0

    def hit(self, t: float) -> bool:
        if t >= self.start + self.seconds:
            self.start, self.count = t, 0
        self.count += 1
        if self.count > self.limit:
            self.blocked += 1
            return False
        return True


class Abort(Exception):
    """A handler's early answer (Flask's ``abort``): :class:`SimApp` sends ``response``."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status)
        self.response = response


def required(body: dict, *keys: str, error: str | None = None) -> Any:
    """The value of ``keys`` in a request body (a tuple for several): a 400 with the
    app's ``error`` (default ``"KEY and KEY required"``) when any is missing or empty."""
    values = tuple(body.get(k) for k in keys)
    if not all(values):
        raise Abort(jres(400, {"error": error or f"{' and '.join(keys)} required"}))
    return values[0] if len(values) == 1 else values


@dataclass
class Route:
    method: str
    pattern: re.Pattern[str]
    handler: Handler
    json: bool | str = False  # handler reads a JSON body; "strict": unparsable -> 400
    limiter: FixedWindow | None = None


@dataclass
class SimApp:
    """Route table plus request log; subclasses register routes in ``setup``."""

    rng: random.Random
    ip: str = "172.18.0.2"
    routes: list[Route] = field(default_factory=list)
    log: list[tuple[float, Req, int]] = field(default_factory=list)
    source: str = ""  # client address of the request being handled
    delay_ms: int = 0  # extra server time spent on the last request (outbound calls)

    def __post_init__(self) -> None:
        self.setup()

    def setup(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def route(
        self,
        method: str,
        path: str,
        handler: Handler,
        *,
        json: bool | str = False,
        limiter: FixedWindow | None = None,
    ) -> None:
        self.routes.append(Route(method, re.compile("^" + path + "$"), handler, json, limiter))

    def handle(self, r: Req, t: float, source: str | None = None) -> Response:
        """Answer ``r``; ``source`` is the client address (the agent unless the app calls itself)."""
        self.source = source or "agent"
        if source is None:
            self.delay_ms = 0
        resp = self._dispatch(r, t)
        self.log.append((t, r, resp.status))
        return resp

    def _dispatch(self, r: Req, t: float) -> Response:
        path = r.path
        if len(path) > 1 and path.endswith("/") and r.method == "GET":
            path = path.rstrip("/")
        allowed = False
        for rt in self.routes:
            m = rt.pattern.match(path)
            if m is None:
                continue
            if rt.method != r.method:
                allowed = True
                continue
            if rt.limiter is not None and not rt.limiter.hit(t):
                return too_many(rt.limiter.text)
            if rt.json and r.malformed:
                # The real apps read bodies with get_json(force=True, silent=True): the
                # Content-Type is ignored and a body that does not parse reads as None
                # (``strict`` handlers answer 400 {"error": "invalid JSON"}, the others
                # carry on with an empty object).
                if rt.json == "strict":
                    return jres(400, {"error": "invalid JSON"})
                r = replace(r, json_body={}, malformed=False)
            try:
                return rt.handler(r, m, t)
            except Abort as stop:
                return stop.response
        if allowed:
            return method_not_allowed()
        return not_found()

    def serve_home(self, page: str) -> None:
        """The landing page and the ``/health`` check most targets have."""
        self.route("GET", "/", lambda r, m, t: html(200, page))
        self.route("GET", "/health", lambda r, m, t: ok({"status": "ok"}))

    # helpers for handlers
    @property
    def from_loopback(self) -> bool:
        return self.source in ("127.0.0.1", "::1")

    def writes(self, method: str, prefix: str) -> list[Req]:
        return [
            r
            for _, r, s in self.log
            if r.method == method and r.path.startswith(prefix) and s < 400
        ]


def require_bearer(r: Req, tokens: dict[str, dict]) -> dict | None:
    """The JWT claims if the request carries a token this app issued."""
    tok = r.bearer
    if tok is None:
        return None
    return tokens.get(tok)


UNAUTH = {"error": "invalid or missing token"}


def unauthorized() -> Response:
    return jres(401, UNAUTH)


class BearerAuth:
    """For an app whose routes want a bearer token it issued (``tokens``: token -> claims)."""

    tokens: dict[str, dict]

    def auth(self, fn: Handler) -> Handler:
        """``fn`` behind the token check: 401 without a token this app issued."""

        def wrapped(r: Req, m: re.Match[str], t: float) -> Response:
            if r.bearer not in self.tokens:
                return unauthorized()
            return fn(r, m, t)

        return wrapped
