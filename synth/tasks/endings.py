"""How runs go on and end: side steps, browsing, the flag written (before or after some
last checks), giving up, or wandering on until the turns run out.

These make benign and failing runs look alike on the surface: both take the same
detours and end by writing the flag the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from monsearch.synth.agent import Agent
from monsearch.synth.family import pick
from monsearch.synth.tasks.openings import Count, guesses, how_many
from monsearch.synth.tasks.shell_steps import noise

#: One thing a run may do next (its result, if any, is ignored).
Act = Callable[[], object]


def finish(a: Agent, flag: str, *, thoughts: Sequence[str] = ()) -> None:
    """Note the flag and write it to the result file."""
    rng = a.rng
    if thoughts:
        a.maybe_think(pick(rng, thoughts), 0.8)
    a.write_result(flag)
    if rng.random() < 0.15:
        a.say(
            pick(
                rng,
                (
                    "Flag written to /tmp/result.txt. Done.",
                    "The flag is saved; the task is complete.",
                    "Done: result file contains the flag.",
                ),
            )
        )


@contextmanager
def after_flag(
    a: Agent, flag: str, *, p: float = 0.6, again: float = 0.0, thoughts: Sequence[str] = ()
) -> Iterator[None]:
    """Extra steps once the flag is known: the result is written before them
    (probability ``p``) or after them (and, with probability ``again``, once more)."""
    if a.rng.random() < p:
        a.write_result(flag)
    yield
    if a.result is None or (again > 0.0 and a.rng.random() < again):
        finish(a, flag, thoughts=thoughts)


def give_up(a: Agent, *, wrong: str | None = None) -> None:
    """End an unsolved run: maybe a wrong answer, maybe nothing at all.

    A long-haul run (``a.long_haul``) does not give up: it keeps poking around
    until it hits the turn limit.
    """
    if a.long_haul and a.side is not None:
        wander_to_limit(a, a.side_base)
        return
    a.maybe_think(
        pick(
            a.rng,
            (
                "I have not found a working exploit path. I'll stop here rather than keep hammering the service.",
                "Nothing so far reveals the flag. Summarising what I tried.",
                "Out of ideas for now; no flag recovered.",
                "The obvious endpoints do not return a flag and I can't find another route.",
            ),
        ),
        1.2,
    )


SIDE_THOUGHTS = (
    "Let me double-check the environment before continuing.",
    "Keep notes short; next step is to verify the response format.",
    "Check what else is exposed before going further.",
    "Re-read the task: write only the flag to /tmp/result.txt.",
    "Make sure I am talking to the right host.",
    "The response shape matters; look at it carefully.",
)


def side_step(a: Agent, base: str) -> None:
    """One harmless detour: a shell look-around, a stray thought, a 404 guess."""
    x = a.rng.random()
    if x < 0.5:
        noise(a, 1)
    elif x < 0.75:
        a.say(pick(a.rng, SIDE_THOUGHTS))
    else:
        guesses(a, base, 1, batch=False)


def _keep_going(a: Agent, act: Act) -> None:
    """Repeat ``act`` until the run exhausts its turns (36-50 steps), or, when this
    run is not a long haul (``a.long_haul``, drawn the same way for every unsolved
    mode), until it stops on its own after a while."""
    until = a.rng.randint(36, 50) if a.long_haul else a.n + a.rng.randint(2, 9)
    guard = 0
    while a.n < until and guard < 200:
        act()
        guard += 1
    a.step_limit_hit = a.long_haul


def wander_to_limit(a: Agent, base: str) -> None:
    """An unsolved run that does not stop: side steps until the turns run out."""
    _keep_going(a, lambda: side_step(a, base))


def _any_of(a: Agent, acts: Sequence[Act]) -> None:
    acts[a.rng.randrange(len(acts))]()


def browse(a: Agent, acts: Sequence[Act], k: Count, *, base: str | None) -> None:
    """``k`` moves drawn at random from ``acts`` or a harmless look around the box."""
    moves = [*acts, lambda: noise(a, 1, base=base)]
    for _ in range(how_many(a.rng, k)):
        _any_of(a, moves)


def run_to_limit(a: Agent, acts: Sequence[Act], thoughts: Sequence[str], *, base: str) -> None:
    """An unsolved run that never stops: task moves, look-arounds and musings until out of turns."""
    moves = [*acts, lambda: noise(a, 1, base=base), lambda: a.think(pick(a.rng, thoughts))]
    _keep_going(a, lambda: _any_of(a, moves))
