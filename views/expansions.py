"""How much text the readers of one command may build: the expansion budget.

The shell and Python readers evaluate what an agent's code builds (``x=$x$x``,
``x = x + x``, ``'A' * 10000``, ``"".join(...)``, ``json.dumps(...)``, ``$(cat f f
f)``), and agents write that code: doubling a string sixty times takes 200 bytes of
command and, evaluated, exabytes. Every place that builds text from known values asks
:func:`spend` for its size first; within one text (:func:`begin` ... :func:`end`,
nested readers sharing the outer budget) at most :data:`EXPANSION_BUDGET` characters
are built, and past it an expansion is unknown, exactly as a value the reader cannot
know (``$x`` stays literal, Python gets an unknown value). Nothing a real command
builds comes near it (``$(seq 1 100000)``, the largest value the shell reader knows,
is 0.6 MB); the view charges :func:`last_spent` to the trajectory's parse budget.

The budget is per thread: the readers are pure functions of their text, so two
threads reading two texts must not share one.
"""

from __future__ import annotations

import re
import threading

#: Characters one text's expansions may build.
EXPANSION_BUDGET = 1_000_000
#: A field width or precision this long (or longer) in a format (``%099999999d``,
#: ``{:>999999999}``) would build more than the budget by itself: such a format is not
#: applied.
HUGE_WIDTH = re.compile(r"\d{7,}|\*")


class _State(threading.local):
    left = EXPANSION_BUDGET
    depth = 0
    spent = 0


_STATE = _State()


def begin() -> None:
    """Start reading a text (a fresh budget unless a reader is already reading one)."""
    state = _STATE
    if state.depth == 0:
        state.left = EXPANSION_BUDGET
    state.depth += 1


def end() -> None:
    """Done reading a text; :func:`last_spent` is then what it built."""
    state = _STATE
    state.depth -= 1
    if state.depth == 0:
        state.spent = EXPANSION_BUDGET - state.left


def spend(n: int) -> bool:
    """Whether ``n`` more characters may be built (and if so, they are counted). Outside
    a :func:`begin` ... :func:`end` nothing is counted: every text is read inside one."""
    state = _STATE
    if n <= state.left or state.depth == 0:
        state.left -= n
        return True
    return False


def last_spent() -> int:
    """Characters built by the last text read to its end."""
    return _STATE.spent
