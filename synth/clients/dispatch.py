"""Which client writes a request, and its rendering (curl where a client cannot say it)."""

from __future__ import annotations

import random
from typing import Any

from monsearch.synth.clients.curl import render_curl
from monsearch.synth.clients.exchange import Exchange, Rendered
from monsearch.synth.clients.httpie import render_httpie
from monsearch.synth.clients.netcat import render_nc
from monsearch.synth.clients.python_habits import render_python_habit
from monsearch.synth.clients.wget import render_wget
from monsearch.synth.observations import Response
from monsearch.synth.request import req
from monsearch.synth.style import Style

CLIENTS = ("curl", "python_urllib", "wget", "httpie", "nc")

_MIXED = (("curl", 0.62), ("python_urllib", 0.3), ("httpie", 0.04), ("wget", 0.04))
_MIXED_IN_IMAGE = (("curl", 0.7), ("python_urllib", 0.3))


def choose_client(style: Style, rng: random.Random, previous: str | None = None) -> str:
    """The client for the next request: mostly the style's own (a mixed style is sticky)."""
    if style.client == "mixed":
        if previous is not None and rng.random() < 0.7:
            return previous
        x = rng.random()
        for name, p in _MIXED if style.out_of_image else _MIXED_IN_IMAGE:
            if x < p:
                return name
            x -= p
        return "curl"
    main_share = {"curl": 0.96, "python_urllib": 0.85, "wget": 0.75, "httpie": 0.8, "nc": 0.55}[
        style.client
    ]
    if rng.random() < main_share:
        return style.client
    return "curl" if style.client != "curl" else "python_urllib"


def render_exchange(
    style: Style, rng: random.Random, client: str, ex: Exchange
) -> tuple[str, Rendered]:
    """Render with ``client``, falling back to curl where the client cannot say it.

    Returns the client actually used and the rendering. Python is written in the
    run's own habit (:func:`render_python_habit`).
    """
    if client == "python_urllib":
        return client, render_python_habit(style, rng, ex)
    if client == "wget" and not ex.req.files and not ex.req.form and ex.extract is None:
        return client, render_wget(style, rng, ex)
    if client == "httpie" and ex.extract is None:
        out = render_httpie(style, rng, ex)
        if out is not None:
            return client, out
    if client == "nc" and ex.extract is None and ex.grep is None:
        out = render_nc(style, rng, ex)
        if out is not None:
            return client, out
    return "curl", render_curl(style, rng, ex)


def render_request(
    style: Style,
    rng: random.Random,
    method: str,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    json_body: Any = None,
    form: dict[str, str] | None = None,
    files: dict[str, tuple[str, str]] | None = None,
    data: str | None = None,
) -> str:
    """The shell command ``style`` would write for this request.

    ``files`` maps a multipart field to ``(path, content)`` of a file the
    agent wrote earlier.
    """
    file_list = [(k, p, c) for k, (p, c) in (files or {}).items()]
    r = req(
        method, url, headers=headers, json_body=json_body, form=form, files=file_list, data=data
    )
    client = choose_client(style, rng)
    ex = Exchange(r, Response(200, "{}\n"), "Sat, 01 Aug 2026 12:00:00 GMT", "172.18.0.2")
    return render_exchange(style, rng, client, ex)[1].command
