"""Checking an OpenAI-compatible endpoint before any work depends on it.

Both users of a model endpoint — the LLM judge behind ``oracle()`` and the LLM
proposer of the search — probe it once at start: a run that only finds out after
its first candidates that nothing answers wastes the user's time and ends looking
like a finished run. The probe spends no tokens where the server lists its models.

Everything a server sends is bounded (:mod:`.bounded_http`: the probe's deadline covers
the whole request, the listing is read up to :data:`MAX_LISTING_BYTES`) and shown
escaped (:func:`shown`): a model id or an error body cannot drive the terminal or forge
a line of the command's own output.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from monsearch.errors import MonsearchError

from .bounded_http import Budget, ReplyCut, body_chunks, bounded, bounded_client, refuse_encoded

#: A model listing longer than this is refused (real ones are well under 1 MB).
MAX_LISTING_BYTES = 8 * 1024 * 1024
#: Of an error body, this much is read (the rest never).
MAX_ERROR_BYTES = 64 * 1024


def shown(text: str, limit: int | None = 300) -> str:
    """Text from a server (a model id, an error body) as one line nothing can obey.

    Its first ``limit`` characters, each character ``str.isprintable`` refuses (controls,
    line breaks, escape sequences' ESC, bidi overrides, lone surrogates) shown as its
    escape (``\\x1b``, ``\\n``, ``\\u202e``, ``\\ud800``) and, in text that needed
    that, backslashes doubled so the escapes read one way: the rule of the CLI's
    ``monsearch.commands.printable``, which this floor may not import. Apply it last:
    after any key scrub (an escaped line break would hide a key split across lines).
    """
    text = str(text)
    if limit is not None and len(text) > limit:
        text = text[:limit]
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() and c != "\\" else ascii(c)[1:-1] for c in text)


class EndpointUnavailableError(MonsearchError):
    """Nothing usable answers at the endpoint: unreachable, key refused, wrong URL."""


def describe_transport_error(exc: BaseException, where: str) -> str:
    """A short, named reason for a request that got no HTTP answer from ``where``."""
    text = shown(str(exc).strip(), 200)
    low = text.lower()
    if isinstance(exc, httpx.ConnectTimeout):
        return f"connection timed out at {where}"
    if isinstance(exc, httpx.ReadTimeout):
        return f"no reply before the read timeout at {where}"
    if isinstance(exc, httpx.TimeoutException):
        return f"timeout ({type(exc).__name__}) at {where}"
    if isinstance(exc, httpx.ConnectError):
        if "refused" in low:
            return f"connection refused at {where}"
        if any(
            k in low
            for k in ("name or service", "nodename nor servname", "name resolution", "getaddrinfo")
        ):
            return f"cannot resolve the host of {where} ({text})"
        if "unreachable" in low:
            return f"network unreachable for {where} ({text})"
        return f"cannot connect to {where}" + (f": {text}" if text else "")
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"the server at {where} closed the connection without a valid reply" + (
            f" ({text})" if text else ""
        )
    return f"{type(exc).__name__} at {where}" + (f": {text}" if text else "")


def model_ids(data: Any) -> list[str] | None:
    """Model ids of an OpenAI-style ``/models`` listing, or None when it is not one."""
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return None
    ids = [i.get("id") for i in items if isinstance(i, dict)]
    return [i for i in ids if isinstance(i, str)]


def _fetch(
    http: httpx.Client,
    method: str,
    url: str,
    *,
    headers: dict[str, str],
    timeout_s: float,
    where: str,
    body: Any = None,
) -> tuple[int, str, bytes]:
    """One request under a deadline of ``timeout_s``: (status, path, body). A 200 body
    over :data:`MAX_LISTING_BYTES` raises :class:`ReplyCut`; an error body is read up to
    :data:`MAX_ERROR_BYTES`. Transport errors propagate."""
    budget = Budget(timeout_s, MAX_LISTING_BYTES)
    with (
        bounded(budget, where),
        http.stream(
            method, url, headers={**headers, "Accept-Encoding": "identity"}, json=body
        ) as response,
    ):
        refuse_encoded(response, where)
        status = response.status_code
        cap = MAX_LISTING_BYTES if status == 200 else MAX_ERROR_BYTES
        data = bytearray()
        try:
            for chunk in body_chunks(response, budget, cap, where):
                data += chunk
        except ReplyCut:
            if status == 200:
                raise
        return status, response.request.url.path, bytes(data)


def probe_endpoint(
    where: str,
    headers: dict[str, str],
    models: Sequence[str],
    *,
    what: str,
    key_hint: str | None = None,
    timeout_s: float = 5.0,
    client: httpx.Client | None = None,
    error: type[MonsearchError] = EndpointUnavailableError,
    scrub: Callable[[str], str] | None = None,
) -> list[str]:
    """Check with one cheap request that ``where`` answers; return warnings.

    ``GET {where}/models`` (no tokens spent); where that route does not exist, a
    one-token chat completion, each request under a deadline of ``timeout_s``. Raises
    ``error`` naming ``what`` (e.g. "the judge"), the endpoint and the reason when
    nothing answers in time, the key is refused (``key_hint``, given when no key was
    configured, says how to give one), the base URL is wrong, or the listing passes
    :data:`MAX_LISTING_BYTES`. A model missing from the listing is only a warning: some
    servers list aliases. Whatever the server wrote is shown through :func:`shown`,
    after ``scrub`` (the caller's key scrub) where it may echo the key.
    """
    own = client is None
    http = client or bounded_client(httpx.Timeout(timeout_s, connect=timeout_s))

    def server_text(data: bytes) -> str:
        text = data.decode("utf-8", errors="replace")
        return shown(scrub(text) if scrub is not None else text, 200)

    try:
        try:
            status, path, data = _fetch(
                http, "GET", f"{where}/models", headers=headers, timeout_s=timeout_s, where=where
            )
            if status in (404, 405):
                body = {
                    "model": models[0] if models else "",
                    "messages": [{"role": "user", "content": "Reply with OK."}],
                    "max_tokens": 1,
                    "temperature": 0,
                }
                status, path, data = _fetch(
                    http, "POST", f"{where}/chat/completions", headers=headers,
                    timeout_s=timeout_s, where=where, body=body,
                )  # fmt: skip
        except httpx.TransportError as exc:
            raise error(f"cannot reach {what}: {describe_transport_error(exc, where)}") from None
        except ReplyCut as exc:
            raise error(f"cannot use {what}: {exc}") from None
    finally:
        if own:
            http.close()
    if status in (401, 403):
        hint = f" ({key_hint})" if key_hint else ""
        raise error(
            f"{what} at {where} refused the API key: HTTP {status}{hint}: {server_text(data)}"
        )
    if status == 404:
        raise error(
            f"{what} at {where} answered HTTP 404 to {shown(path, 200)}: a wrong "
            f"base URL, or model {models[0] if models else '?'!r} is unknown there: "
            f"{server_text(data)}"
        )
    if status >= 500 and status != 501:
        return [f"{what} at {where} answered the probe with HTTP {status}; going on"]
    if status != 200 or not path.endswith("/models"):
        return []
    listed = listing_ids(data)
    if not listed:
        return []
    return [
        f"model {m!r} is not among the models listed at {where}/models "
        f"({', '.join(shown(i, 100) for i in listed[:8])}{', ...' if len(listed) > 8 else ''}); "
        "calls may fail"
        for m in dict.fromkeys(models)
        if m not in listed
    ]


def listing_ids(data: bytes) -> list[str] | None:
    """Model ids of a ``/models`` body, or None when it is not an OpenAI-style listing."""
    try:
        return model_ids(json.loads(data))
    except (ValueError, RecursionError):
        return None
