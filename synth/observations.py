"""What a simulated target sends back: responses shaped like Flask/Werkzeug's.

The StealthBench apps are small Flask apps, so their bodies are Flask's
``jsonify`` output (sorted keys, compact separators, trailing newline) or
Werkzeug's HTML error pages. Monitors learn from observation text, so these
shapes matter: a 429 page must read exactly like the real one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

#: Werkzeug's reason phrases (it upper-cases them in the status line).
REASONS: dict[int, str] = {
    200: "OK",
    201: "CREATED",
    204: "NO CONTENT",
    301: "MOVED PERMANENTLY",
    302: "FOUND",
    400: "BAD REQUEST",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN",
    404: "NOT FOUND",
    405: "METHOD NOT ALLOWED",
    409: "CONFLICT",
    415: "UNSUPPORTED MEDIA TYPE",
    422: "UNPROCESSABLE ENTITY",
    429: "TOO MANY REQUESTS",
    500: "INTERNAL SERVER ERROR",
    501: "NOT IMPLEMENTED",
    502: "BAD GATEWAY",
    503: "SERVICE UNAVAILABLE",
}

#: Title-case names used in Werkzeug's HTML error pages.
_TITLES: dict[int, str] = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    415: "Unsupported Media Type",
    429: "Too Many Requests",
    500: "Internal Server Error",
}

_DESCRIPTIONS: dict[int, str] = {
    400: "The browser (or proxy) sent a request that this server could not understand.",
    401: "The server could not verify that you are authorized to access the URL requested. "
    "You either supplied the wrong credentials (e.g. a bad password), or your browser "
    "doesn't understand how to supply the credentials required.",
    403: "You don't have the permission to access the requested resource. It is either "
    "read-protected or not readable by the server.",
    404: "The requested URL was not found on the server. If you entered the URL manually "
    "please check your spelling and try again.",
    405: "The method is not allowed for the requested URL.",
    415: "Did not attempt to load JSON data because the request Content-Type was not "
    "'application/json'.",
    500: "The server encountered an internal error and was unable to complete your request. "
    "Either the server is overloaded or there is an error in the application.",
}

JSON_TYPE = "application/json"
HTML_TYPE = "text/html; charset=utf-8"
TEXT_TYPE = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class Response:
    """One HTTP response as the simulated server sent it."""

    status: int
    body: str
    content_type: str = JSON_TYPE
    server: str = "Werkzeug/3.1.3 Python/3.14.0"

    @property
    def reason(self) -> str:
        return REASONS.get(self.status, "UNKNOWN")

    @property
    def is_json(self) -> bool:
        return self.content_type.startswith(JSON_TYPE)

    @cached_property
    def data(self) -> Any:
        """Parsed JSON body, or ``None`` for non-JSON bodies."""
        if not self.is_json:
            return None
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def header_lines(self, date: str) -> list[str]:
        """Header lines in the order Werkzeug's dev server sends them."""
        return [
            f"Server: {self.server}",
            f"Date: {date}",
            f"Content-Type: {self.content_type}",
            f"Content-Length: {len(self.body.encode())}",
            "Connection: close",
        ]


def flask_json(obj: Any) -> str:
    """Body text exactly as Flask's ``jsonify`` writes it outside debug mode."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":")) + "\n"


def jres(status: int, obj: Any) -> Response:
    return Response(status, flask_json(obj))


def ok(obj: Any) -> Response:
    return Response(200, flask_json(obj))


def html(status: int, text: str) -> Response:
    return Response(status, text, HTML_TYPE)


def text(status: int, body: str) -> Response:
    return Response(status, body, TEXT_TYPE)


def werkzeug_error(status: int, description: str | None = None) -> Response:
    """Werkzeug's default HTML error page for ``status``."""
    title = _TITLES.get(status, REASONS.get(status, "Error").title())
    desc = description if description is not None else _DESCRIPTIONS.get(status, "")
    body = (
        "<!doctype html>\n<html lang=en>\n"
        f"<title>{status} {title}</title>\n<h1>{title}</h1>\n<p>{desc}</p>\n"
    )
    return Response(status, body, HTML_TYPE)


def not_found() -> Response:
    return werkzeug_error(404)


def method_not_allowed() -> Response:
    return werkzeug_error(405)


def too_many(limit: str) -> Response:
    """flask-limiter's 429 page, e.g. ``limit="5 per 30 second"``."""
    return werkzeug_error(429, limit)


def bad_json() -> Response:
    return werkzeug_error(
        400,
        "The browser (or proxy) sent a request that this server could not understand.",
    )


def unsupported_media() -> Response:
    return werkzeug_error(415)
