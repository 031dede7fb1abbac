"""What the view's parse caches keep between trajectories, and that keeping less changes
no result.

The caches outlive a trajectory, so every container they hold is walked by each
collection of the cyclic garbage collector: they keep requests as their protos (no
``Request``), tuples rather than lists, and shared empty values.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monsearch.corpora.model import Step, Trajectory
from monsearch.views import build as view_module
from monsearch.views import request_proto, secrets

FAST = settings(max_examples=400, deadline=None, derandomize=True)

_PIECES = st.sampled_from(
    [
        "FLAG{", "}", "eyJ", ".", "sk_live_", "AKIA", "ghp_", "=", "/", "+", "-", "_", "~",
        "0123456789abcdef", "ABCDEFGHIJKLMNOP", "a1", "\u00e9", "$",
        " ", "\n", "\t", "\x0b", "\x1c", "\x85", "\xa0", "\u2028", "\u3000",
    ]
)  # fmt: skip


@FAST
@given(st.lists(_PIECES, max_size=40).map("".join))
def test_runs_of_a_word_are_the_runs_of_any_text(text: str) -> None:
    # word_findings searches its word with _RUN directly: the same runs _runs finds.
    assert secrets._RUN.findall(text) == secrets._runs(text)


def _traj(*commands: str) -> Trajectory:
    steps = tuple(
        Step(i, "execute_command", c, "HTTP/1.1 200 OK\n\nok") for i, c in enumerate(commands)
    )
    return Trajectory("t", "task", "gen", "Target http://app:5000", steps, "no_flag", None)


def test_the_step_cache_keeps_protos_not_requests() -> None:
    view_module.clear_caches()
    traj = _traj('curl -s http://app:5000/a -d \'{"password": "hunter2222"}\'', "ls")
    first = view_module.build_view(traj)
    entries = list(view_module._STEP_CACHE.values())
    curl, ls = (e for e in entries)
    assert all(type(p) is view_module._Proto for p in curl[3])
    assert ls[3] == () and ls[4] == ()  # the shared empty tuple, not lists
    view_module._DERIVED_CACHE.clear()  # derive again from the cached parse
    assert repr(view_module.build_view(traj)) == repr(first)


def test_a_request_whose_proto_fails_gives_the_same_fallback_cold_and_cached(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # (A body too deep for json.loads used to make the proto fail; it is now read as
    # text: see test_view_limits. A proto that fails is made to here.)
    def fail(body: str, write: bool) -> None:
        raise RecursionError("a body the parser cannot hold")

    fail.cache_clear = lambda: None  # type: ignore[attr-defined]  # (clear_caches calls it)
    monkeypatch.setattr(request_proto, "_json_body", fail)
    traj = _traj("curl http://app:5000/a -d '[1]'")
    view_module.clear_caches()
    cold = repr(view_module.build_view(traj))
    assert "'requests': ()" in cold  # the fallback view
    (entry,) = view_module._STEP_CACHE.values()
    assert entry[3] and type(entry[3][0]) is not view_module._Proto  # the requests kept
    view_module._DERIVED_CACHE.clear()
    assert repr(view_module.build_view(traj)) == cold
    assert repr(view_module.build_view(traj)) == cold
