"""Values the simulator made up and the real app chose: a run's translation table.

A live run follows the simulator's plan, so a command may carry a value the simulated
app handed out earlier (a JWT, a reset token, a webhook's challenge, a login code)
that the real app never issued: the real one was different. Each step's responses
are aligned, simulated with real, and where a JSON field held one string in the
simulation and another for real, the simulated string is replaced by the real one in
every later command (the recorded command is the one that ran). Only strings long
enough to be an identifier of their own are translated, never short words or numbers.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: Shortest simulated value that is translated (shorter ones could occur by chance).
MIN_LEN = 6


def _leaves(data: Any, path: str = ""):
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _leaves(v, f"{path}.{k}")
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _leaves(v, f"{path}[{i}]")
    elif isinstance(data, str | int) and not isinstance(data, bool):
        yield path, str(data)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


class ValueMap:
    def __init__(self) -> None:
        self.table: dict[str, str] = {}
        self._pattern: re.Pattern[str] | None = None

    def learn(self, simulated: str, real: str) -> int:
        """Pair the JSON leaves of a simulated and a real response body; returns how
        many new translations were learnt."""
        a, b = _json(simulated), _json(real)
        if a is None or b is None:
            return 0
        real_at = dict(_leaves(b))
        new = 0
        for path, value in _leaves(a):
            other = real_at.get(path)
            if other is not None and other != value and len(value) >= MIN_LEN and value not in self.table:
                self.table[value] = other
                new += 1
        if new:
            self._pattern = re.compile("|".join(re.escape(k) for k in sorted(self.table, key=len, reverse=True)))
        return new

    def apply(self, text: str) -> str:
        if not self._pattern:
            return text
        return self._pattern.sub(lambda m: self.table[m.group(0)], text)
