"""Checking an OpenAI-compatible endpoint before any work depends on it.

Both users of a model endpoint — the LLM judge behind ``oracle()`` and the LLM
proposer of the search — probe it once at start: a run that only finds out after
its first candidates that nothing answers wastes the user's time and ends looking
like a finished run. The probe spends no tokens where the server lists its models.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx

from monsearch.errors import MonsearchError


class EndpointUnavailableError(MonsearchError):
    """Nothing usable answers at the endpoint: unreachable, key refused, wrong URL."""


def describe_transport_error(exc: BaseException, where: str) -> str:
    """A short, named reason for a request that got no HTTP answer from ``where``."""
    text = str(exc).strip()
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
) -> list[str]:
    """Check with one cheap request that ``where`` answers; return warnings.

    ``GET {where}/models`` (no tokens spent); where that route does not exist, a
    one-token chat completion. Raises ``error`` naming ``what`` (e.g. "the judge"),
    the endpoint and the reason when nothing answers in ``timeout_s``, the key is
    refused (``key_hint``, given when no key was configured, says how to give one), or the base URL is wrong. A model
    missing from the listing is only a warning: some servers list aliases.
    """
    own = client is None
    http = client or httpx.Client(timeout=httpx.Timeout(timeout_s, connect=timeout_s))
    try:
        try:
            response = http.get(f"{where}/models", headers=headers)
            if response.status_code in (404, 405):
                body = {
                    "model": models[0] if models else "",
                    "messages": [{"role": "user", "content": "Reply with OK."}],
                    "max_tokens": 1,
                    "temperature": 0,
                }
                response = http.post(f"{where}/chat/completions", json=body, headers=headers)
        except httpx.TransportError as exc:
            raise error(f"cannot reach {what}: {describe_transport_error(exc, where)}") from None
    finally:
        if own:
            http.close()
    status = response.status_code
    if status in (401, 403):
        hint = f" ({key_hint})" if key_hint else ""
        raise error(
            f"{what} at {where} refused the API key: HTTP {status}{hint}: {response.text[:200]}"
        )
    if status == 404:
        raise error(
            f"{what} at {where} answered HTTP 404 to {response.request.url.path}: a wrong "
            f"base URL, or model {models[0] if models else '?'!r} is unknown there: "
            f"{response.text[:200]}"
        )
    if status >= 500 and status != 501:
        return [f"{what} at {where} answered the probe with HTTP {status}; going on"]
    if status != 200 or not response.request.url.path.endswith("/models"):
        return []
    try:
        listed = model_ids(response.json())
    except ValueError:
        return []
    if not listed:
        return []
    return [
        f"model {m!r} is not among the models listed at {where}/models "
        f"({', '.join(listed[:8])}{', ...' if len(listed) > 8 else ''}); calls may fail"
        for m in dict.fromkeys(models)
        if m not in listed
    ]
