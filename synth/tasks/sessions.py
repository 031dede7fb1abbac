"""Requests with state: a session on the target, logins and sign-ups, a request sent
again when a slip spoiled it, and checks on what came back."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from monsearch.synth.agent import Agent
from monsearch.synth.family import pick
from monsearch.synth.observations import Response
from monsearch.synth.request import Req, req
from monsearch.synth.simapp import SimApp

A = TypeVar("A", bound=SimApp)


@dataclass
class Session(Generic[A]):
    """Per-run state of a task the agent logs in to: the target and the token in use."""

    app: A
    token: str = ""


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def fresh_name(rng: random.Random, templates: Sequence[str]) -> str:
    """A throwaway name from ``templates`` (``{n}`` becomes a random number)."""
    return pick(rng, templates).format(n=rng.randint(1, 999))


def send_sure(
    a: Agent,
    r: Req,
    good: Callable[[Response], bool] = lambda resp: resp.status < 400,
    *,
    extract: str | None = None,
) -> Response | None:
    """Send ``r``; when a slip spoiled it (no answer, or not ``good``), send it again with care."""
    resp = a.http(r, extract=extract)
    if resp is None or not good(resp):
        resp = a.http(r, sloppy=False)
    return resp


def created(resp: Response) -> bool:
    return resp.status == 201


def has_flag(resp: Response | None, flag: str) -> bool:
    return resp is not None and flag in resp.body


def login(a: Agent, base: str, username: str, password: str) -> str:
    """Log in with the given credentials (again if a slip ate the first try); the token."""
    r = req("POST", base + "/auth/login", json_body={"username": username, "password": password})
    resp = send_sure(
        a, r, lambda resp: resp.status == 200, extract="token" if a.rng.random() < 0.4 else None
    )
    data = resp.data if resp is not None else None
    return str(data.get("token", "")) if isinstance(data, dict) else ""


def register_email(a: Agent, base: str, email: str, names: Sequence[str]) -> None:
    """Sign up an address the agent controls."""
    body = {"email": email, "name": pick(a.rng, names)}
    send_sure(a, req("POST", base + "/auth/register", json_body=body), created)
