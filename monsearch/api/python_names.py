"""Errors raised through the library name its keyword arguments, not the command line's
options: ``monsearch.test`` refused by the ledger says ``force=True`` where ``monsearch
test`` says ``--force``.

The floors below the API word their errors for the command line (the one interface
most of them serve). :func:`speaks_python` wraps a library function so that, for each
option it lists, a :class:`~monsearch.errors.MonsearchError` leaving it names the
keyword instead: a flag by its setting (``--force`` -> ``force=True``), an option with
its value (``--name 'x'`` -> ``name='x'``, ``--program ID`` -> ``program=ID``). The
command line calls the unwrapped functions and keeps its own words.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, TypeVar

from monsearch.errors import MonsearchError

F = TypeVar("F", bound=Callable[..., Any])

# What may follow an option as its value: a placeholder (ID, RUN), a quoted text, a word
# holding a digit (a number, a run id) or a word ending a clause ("--resume r,"); any
# other word is the sentence going on.
_VALUE = (
    r"(?: (?P<value>[A-Z][A-Z_]*\b|'[^']*'|\"[^\"]*\"|[^\s,;:()]*\d[^\s,;:()]*"
    r"|[^\s,;:()]+(?=[,;)]|$)))?"
)


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def python_words(text: str, options: dict[str, str]) -> str:
    """``text`` with each command-line option of ``options`` named as its keyword.

    ``options`` maps an option to its keyword: ``{"--force": "force=True"}`` (a flag: the
    setting replaces it), ``{"--name": "name"}`` (an option with a value)."""
    for option, keyword in options.items():
        flag = "=" in keyword
        pattern = re.compile(rf"(?<![\w-]){re.escape(option)}(?![\w-])" + ("" if flag else _VALUE))

        def named(match: re.Match[str], keyword: str = keyword, flag: bool = flag) -> str:
            if flag:
                return keyword
            value = match.group("value")
            if value is None:
                return f"{keyword}=..."
            if value.isupper() or value[0] in "'\"" or _number(value):
                return f"{keyword}={value}"
            return f"{keyword}={value!r}"

        text = pattern.sub(named, text)
    return text


def speaks_python(options: dict[str, str]) -> Callable[[F], F]:
    """Wrap a library function so its errors name ``options`` as keywords (see
    :func:`python_words`)."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except MonsearchError as exc:
                if len(exc.args) == 1 and isinstance(exc.args[0], str):
                    exc.args = (python_words(exc.args[0], options),)
                raise

        return inner  # type: ignore[return-value]

    return wrap
