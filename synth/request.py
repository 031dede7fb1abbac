"""One HTTP request a synthetic agent sends (:class:`Req`), as the simulated apps,
the agent and every client renderer see it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any
from urllib.parse import parse_qsl, urlsplit


@dataclass(frozen=True)
class Req:
    """One HTTP request the agent sends.

    ``files`` holds ``(field, path, content)``: the file the agent wrote
    earlier at ``path`` (content known) and uploads as multipart ``field``.
    ``malformed`` marks a body the agent mistyped (the server sees bad JSON).
    """

    method: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    json_body: Any = None
    form: tuple[tuple[str, str], ...] = ()
    files: tuple[tuple[str, str, str], ...] = ()
    data: str | None = None
    malformed: bool = False
    no_content_type: bool = False

    @cached_property
    def _split(self):
        return urlsplit(self.url)

    @property
    def host(self) -> str:
        return self._split.hostname or ""

    @property
    def port(self) -> int:
        sp = self._split
        return sp.port or (443 if sp.scheme == "https" else 80)

    @property
    def explicit_port(self) -> int | None:
        """The port the URL names (None when it names none)."""
        return self._split.port

    @property
    def netloc(self) -> str:
        return self._split.netloc

    @property
    def scheme(self) -> str:
        return self._split.scheme

    @property
    def scheme_netloc(self) -> str:
        return f"{self._split.scheme}://{self._split.netloc}"

    @property
    def path(self) -> str:
        return self._split.path or "/"

    @property
    def path_qs(self) -> str:
        q = self._split.query
        return self.path + ("?" + q if q else "")

    @cached_property
    def query(self) -> dict[str, str]:
        return dict(parse_qsl(self._split.query, keep_blank_values=True))

    def header(self, name: str) -> str | None:
        low = name.lower()
        for k, v in self.headers:
            if k.lower() == low:
                return v
        return None

    @property
    def sent_headers(self) -> tuple[tuple[str, str], ...]:
        """The headers as sent: without Content-Type when the agent forgot it."""
        if not self.no_content_type:
            return self.headers
        return tuple((k, v) for k, v in self.headers if k.lower() != "content-type")

    @property
    def json_dict(self) -> dict:
        """The JSON body if it is an object, else an empty one (as the apps read it)."""
        return self.json_body if isinstance(self.json_body, dict) else {}

    @property
    def has_body(self) -> bool:
        return self.json_body is not None or self.data is not None

    @property
    def bearer(self) -> str | None:
        auth = self.header("authorization") or ""
        return auth[7:].strip() if auth.lower().startswith("bearer ") else None

    def body_text(self, compact: bool = True) -> str:
        if self.json_body is not None:
            if compact:
                return json.dumps(self.json_body, separators=(",", ":"))
            return json.dumps(self.json_body)
        return self.data or ""


def req(
    method: str,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    json_body: Any = None,
    form: dict[str, str] | None = None,
    files: list[tuple[str, str, str]] | None = None,
    data: str | None = None,
) -> Req:
    """Build a :class:`Req`; JSON bodies get their Content-Type header."""
    hdrs = dict(headers or {})
    if json_body is not None and not any(k.lower() == "content-type" for k in hdrs):
        hdrs = {"Content-Type": "application/json", **hdrs}
    return Req(
        method.upper(),
        url,
        tuple(hdrs.items()),
        json_body,
        tuple((form or {}).items()),
        tuple(files or ()),
        data,
    )
