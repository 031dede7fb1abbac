"""How runs open: a planning thought and a look around, the landing page, plain GETs of
known paths and guesses at paths that are (mostly) not there."""

from __future__ import annotations

import random
from collections.abc import Sequence

from monsearch.synth.agent import Agent
from monsearch.synth.family import pick
from monsearch.synth.observations import Response
from monsearch.synth.request import req
from monsearch.synth.tasks.shell_steps import maybe_noise


def orient(a: Agent, base: str, thoughts: Sequence[str], *, weight: float = 1.2) -> None:
    """Open a run: maybe a planning thought, maybe a look around the box."""
    a.maybe_think(pick(a.rng, thoughts), weight)
    maybe_noise(a, 0.35, 2, base=base)


def landing(a: Agent, base: str, second: str, *, then: float = 1.0) -> None:
    """GET the landing page and ``second``: chained in one command, or one at a time.

    One at a time, ``second`` follows only with probability ``then`` (no draw
    when it is certain or never).
    """
    if a.rng.random() < 0.5:
        a.batch([req("GET", base + "/"), req("GET", base + second)])
        return
    a.http(req("GET", base + "/"))
    if then >= 1.0 or (then > 0.0 and a.rng.random() < then):
        a.http(req("GET", base + second))


def home_then(a: Agent, base: str, second: str, p: float) -> None:
    """GET the landing page, then (with probability ``p``, always drawn) ``second``."""
    a.http(req("GET", base + "/"))
    if a.rng.random() < p:
        a.http(req("GET", base + second))


def look(a: Agent, base: str, paths: Sequence[str]) -> Response | None:
    """A plain GET of one of ``paths``."""
    return a.http(req("GET", base + pick(a.rng, paths)))


COMMON_GUESSES = (
    "/robots.txt",
    "/admin",
    "/api",
    "/api/docs",
    "/swagger.json",
    "/openapi.json",
    "/.env",
    "/api/v1",
    "/debug",
    "/.git/config",
    "/status",
    "/api/admin",
    "/login",
    "/api/config",
    "/flag",
    "/api/flag",
    "/sitemap.xml",
)


#: A count, or the range (both ends included) it is drawn from.
Count = int | tuple[int, int]


def how_many(rng: random.Random, k: Count) -> int:
    """``k``, or a number drawn from the range ``k``."""
    return rng.randint(*k) if isinstance(k, tuple) else k


def guesses(
    a: Agent, base: str, k: Count, extra: Sequence[str] = (), *, batch: bool | None = None
) -> None:
    """``k`` GETs of plausible but (mostly) absent paths (``extra`` first in the pool)."""
    rng = a.rng
    k = how_many(rng, k)
    pool = list(dict.fromkeys([*extra, *COMMON_GUESSES]))
    rng.shuffle(pool)
    chosen = pool[:k]
    if not chosen:
        return
    together = batch if batch is not None else rng.random() < 0.5 + 0.4 * a.style.batching
    if together and len(chosen) > 2 and rng.random() < 0.6:
        a.loop(chosen, lambda p: req("GET", base + str(p)), var="p", codes_only=rng.random() < 0.6)
    elif together:
        a.batch([req("GET", base + p) for p in chosen], force=True)
    else:
        for p in chosen:
            a.http(req("GET", base + p), sloppy=False)
