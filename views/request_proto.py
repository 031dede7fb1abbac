"""A request as the view shows it: the part that depends on the request alone, computed
once per request and cached with its step (:class:`_Proto`): URL, query, headers, the
JSON body frozen with its leaves checked, form, uploads and the URLs in the body; and the
text the secret scan would read, when it cannot find anything new (:func:`_quiet_haystack`).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, urlencode

from monsearch.corpora.readers.jsonio import MAX_DEPTH, too_deep
from monsearch.views import secrets as sec
from monsearch.views.frozen import FrozenDict, freeze
from monsearch.views.ids import new_view_id_key, view_id  # noqa: F401 - re-exported
from monsearch.views.request import Request, split_url, strip_credentials
from monsearch.views.run_context import _other_host_class

#: The view type: one concrete read-only mapping class.
TrajectoryView = FrozenDict


_BODY_URL = re.compile(r"\b(?:https?|ftp|file|gopher|dict|ws|wss)://[^\s\"'<>\\]+", re.I)
_WRITE_METHODS = frozenset({"POST", "PUT", "PATCH"})


class _Proto:
    """What a request's view needs that depends on the request alone (computed once)."""

    __slots__ = (
        "view",
        "host",
        "host_key",
        "host_other",
        "repeat",
        "url_text",
        "headers",
        "body",
        "leaves",
        "files",
        "auth",
        "auth_password",
        "body_urls",
        "write_out",
        "include_headers",
        "haystack",
    )

    #: The request's view fields, in schema order; the per-step ones (step, host_class,
    #: status, response, body_urls, secrets) are filled in by :func:`_step_requests`.
    view: dict[str, Any]
    #: The host as :func:`host_class` compares it, and its class when it is neither a
    #: target nor an own address (the per-run sets decide those two in pass 2).
    host_key: str
    host_other: str
    #: When no pattern finds anything in the request: its scanned texts joined by NUL
    #: (see :func:`_request_secrets`); else None.
    haystack: str | None


def _parse_json(body: str) -> Any:
    """A request body's JSON value, or None when it is not JSON, or is nested deeper than
    the documents the readers accept (a body nested a thousand deep made the whole
    view the fallback: no request or secret of any step)."""
    s = body.strip()
    if not s or s[0] not in "{[":
        return None
    try:
        value = json.loads(s)
    except (ValueError, RecursionError):
        return None
    return None if too_deep(value, MAX_DEPTH) is not None else value


#: The one empty mapping of every request without a query, headers or form fields.
_EMPTY = FrozenDict()


def _leaf_checks(
    json_leaves: Iterable[tuple[str, str, int]], write: bool
) -> tuple[tuple[str, str, str, bool], ...]:
    """``(path, value, where, is_password)`` per body field, for :func:`_request_secrets`
    (request-only, so worked out once per request). A tuple of tuples of leaves: the
    collector stops tracking it, though the request's cache entry keeps it."""
    return tuple(
        [
            (
                path,
                value,
                "stored_field" if write and not sec.is_auth_field(path, depth) else "body",
                bool(value) and not value.startswith("$") and sec.is_password_field(path),
            )
            for path, value, depth in json_leaves
        ]
    )


@functools.lru_cache(maxsize=8192)
def _json_body(
    body: str, write: bool
) -> tuple[Any, tuple[tuple[str, str, int], ...], tuple[tuple[str, str, str, bool], ...]] | None:
    """A JSON request body's frozen value, leaves and leaf checks (None when the body is
    not JSON). Cached (pure): agents send the same bodies from different commands. (The
    leaves as a tuple: a list would stay tracked by the garbage collector.)"""
    plain = _parse_json(body)
    if plain is None:
        return None
    leaves = sec.json_leaves(plain)
    return freeze(plain), tuple(leaves), _leaf_checks(leaves, write) if leaves else ()


def _proto(req: Request) -> _Proto:
    """The request-only part of a request's view (kept in the step cache in place of the
    request: see :func:`_parse_entry`)."""
    p = _Proto()
    parts = split_url(req.url)
    query_text = parts.query
    url = strip_credentials(req.url)
    if req.query_extra:
        extra = urlencode(req.query_extra)
        query_text = f"{query_text}&{extra}" if query_text else extra
        url = f"{url}{'&' if '?' in url else '?'}{extra}"
    # (Most requests have no query, form or files: share one empty value for each.)
    if query_text:
        query: dict[str, str] = {}
        query_all: dict[str, list[str]] = {}
        for k, v in parse_qsl(query_text, keep_blank_values=True):
            query.setdefault(k, v)
            query_all.setdefault(k, []).append(v)
        frozen_query = FrozenDict(query)
        frozen_query_all = FrozenDict({k: tuple(v) for k, v in query_all.items()})
        p.url_text = f"{parts.path}?{query_text}"
    else:
        frozen_query = frozen_query_all = _EMPTY
        p.url_text = parts.path
    method = req.method or "GET"
    write = method in _WRITE_METHODS
    json_body = _json_body(req.body, write) if req.body else None
    p.host = parts.host
    p.host_key = parts.host.strip("[]").lower()
    p.host_other = _other_host_class(p.host_key)
    p.headers = FrozenDict(req.headers) if req.headers else _EMPTY
    p.body = req.body
    if json_body is not None:
        json_value, json_leaves, p.leaves = json_body
    else:
        json_value = None
        json_leaves = [(k, v, 1) for k, v in req.form.items()]
        p.leaves = _leaf_checks(json_leaves, write) if json_leaves else ()
    p.files = (
        tuple(
            [
                FrozenDict(
                    {
                        "field": f.get("field", ""),
                        "filename": f.get("filename", ""),
                        "content": f.get("content", ""),
                    }
                )
                for f in req.files
            ]
        )
        if req.files
        else ()
    )
    p.repeat = max(1, req.repeat)
    p.auth = req.auth_user if req.auth_user is not None else parts.user
    p.auth_password = req.auth_password if req.auth_password is not None else parts.password
    if req.body and "://" in req.body:
        if json_body is not None:
            p.body_urls = tuple(
                [
                    (v, path)
                    for path, v, _ in json_leaves
                    if "://" in v and _BODY_URL.match(v.strip())
                ]
            )
        else:
            p.body_urls = tuple([(m.group(), "") for m in _BODY_URL.finditer(req.body)])
    else:
        p.body_urls = ()
    p.write_out = req.write_out
    p.include_headers = req.include_headers
    p.view = {
        "step": 0,
        "method": method,
        "url": url,
        "scheme": parts.scheme,
        "host": parts.host,
        "port": parts.port,
        "path": parts.path,
        "query": frozen_query,
        "query_all": frozen_query_all,
        "headers": p.headers,
        "body": req.body,
        "json": json_value,
        "form": FrozenDict(req.form) if req.form else _EMPTY,
        "files": p.files,
        "client": req.client,
        "host_class": "",
        "repeat": p.repeat,
        "repeat_known": req.repeat_known,
        "status": None,
        "response": "",
        "auth": p.auth,
        "body_urls": (),
        "secrets": (),
        "background": req.background,
    }
    p.haystack = _quiet_haystack(p)
    return p


def _quiet_haystack(p: _Proto) -> str | None:
    """The texts :func:`_request_secrets` scans, joined by NUL, when none of them holds
    a pattern finding and the request adds no password or basic-auth pair; else None.

    Then a request can only find values seen earlier in the run, and only when one of
    them is inside the haystack (each text is), so most requests skip the scan."""
    if p.auth_password is not None:
        return None
    texts = [p.url_text]
    for name, value in dict.items(p.headers):  # (skips FrozenDict's attribute hook)
        if name == "authorization" and value[:6].lower() == "basic ":
            return None
        texts.append(value)
    if p.leaves:
        for _path, value, _where, is_password in p.leaves:
            if is_password:
                return None
            texts.append(value)
    elif p.body:
        texts.append(p.body)
    for u, _field in p.body_urls:
        texts.append(u)
    for upl in p.files:
        texts.append(upl["content"])
    texts = [text for text in texts if text]  # (:meth:`_Secrets.text` skips empty ones)
    for text in texts:
        if type(text) is not str or sec.scan(text):
            return None
    return "\0".join(texts)


def clear_caches() -> None:
    """Drop the parsed-body cache (the view's ``clear_caches`` calls this)."""
    _json_body.cache_clear()
