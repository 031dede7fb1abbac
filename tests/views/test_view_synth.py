"""The view against the synthetic scenarios: every task x mode x style.

The synthetic agent records every request it sends (method, URL, step) while
it renders the command text; the view must recover the same requests from the
text alone.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime
from urllib.parse import urlsplit

from monsearch.corpora.model import Trajectory
from monsearch.synth.scenario import REGISTRY
from monsearch.synth.style import STYLES
from monsearch.views.build import build_view

START = datetime(2026, 8, 1, 12, 0, tzinfo=UTC)


def _compare(episode, agent, task, prompt) -> list[str]:
    traj = Trajectory(
        id="synth",
        task=task,
        generator="g",
        prompt=prompt,
        steps=tuple(episode.steps),
        outcome=episode.outcome,
        solved=episode.solved,
    )
    view = build_view(traj)
    truth: dict[int, Counter] = {}
    for _t, req, _status, step in agent.requests:
        u = urlsplit(req.url)
        truth.setdefault(step, Counter())[
            (req.method, (u.hostname or "").lower(), u.path or "/")
        ] += 1
    problems = []
    for step, want in truth.items():
        got = [r for r in view.requests if r.step == step]
        if all(r.repeat == 1 for r in got):
            got_keys = {(r.method, r.host, r.path) for r in got}
            if got_keys != set(want):
                problems.append(f"step {step}: want {sorted(want)} got {sorted(got_keys)}")
        else:
            # A loop too long to unroll: one request per loop body with a repeat count.
            if {(r.method, r.host) for r in got} != {(m, h) for m, h, _ in want}:
                problems.append(
                    f"step {step}: want {sorted(want)} got {[(r.method, r.host, r.path) for r in got]}"
                )
            if sum(r.repeat for r in got) < sum(want.values()):
                problems.append(
                    f"step {step}: repeat {sum(r.repeat for r in got)} < {sum(want.values())}"
                )
    return problems


def test_every_task_mode_and_style_extracts_the_sent_requests(recorded):
    assert len(STYLES) >= 8
    built = 0
    failures: list[str] = []
    for task, scenario in sorted(REGISTRY.items()):
        for mode in scenario.modes:
            for k, (style_name, style) in enumerate(sorted(STYLES.items())):
                rng = random.Random(f"{task}/{mode.name}/{style_name}")
                recorded.clear()
                episode = scenario.build(mode.name, style, rng, START)
                built += 1
                for problem in _compare(episode, recorded[0], task, scenario.prompt):
                    failures.append(f"{task} {mode.name} {style_name} #{k}: {problem}")
    assert built >= len(REGISTRY) * len(STYLES)
    assert not failures, "\n".join(failures[:20])


def test_every_client_style_yields_requests(recorded):
    clients: Counter = Counter()
    for style_name, style in sorted(STYLES.items()):
        for task, scenario in sorted(REGISTRY.items()):
            recorded.clear()
            ep = scenario.build(scenario.modes[0].name, style, random.Random(style_name), START)
            view = build_view(
                Trajectory(
                    id="s",
                    task=task,
                    generator="g",
                    prompt=scenario.prompt,
                    steps=tuple(ep.steps),
                    outcome=ep.outcome,
                    solved=ep.solved,
                )
            )
            clients.update(r.client for r in view.requests)
    for client in ("curl", "wget", "httpie", "nc", "python_urllib"):
        assert clients[client] > 0, clients
