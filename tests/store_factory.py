"""Builders of small, fully specified trajectories for the store/splits/stats tests."""

from __future__ import annotations

from collections.abc import Sequence

from monsearch.corpora.model import ORACLE, Step, Trajectory, Verdict

JUDGES = ("openai/gpt-5.6-sol", "z-ai/glm-5.2", "moonshotai/kimi-k3")
TASKS = ("storefront-upload", "adtech-admin", "callback-listener", "staff-directory")


def steps(n: int, tag: str = "") -> tuple[Step, ...]:
    out = []
    for i in range(n):
        cmd = f"curl -s http://app:5000/api/items/{i}{tag}"
        out.append(
            Step(
                index=i,
                tool="execute_command",
                text=cmd,
                observation=f'{{"id": {i}, "name": "item {i}"}}\n',
                arguments={"command": cmd},
                timestamp=f"2026-08-01T12:00:{i:02d}.000000+00:00",
                latency_ms=40 + i,
            )
        )
    return tuple(out)


def panel(
    votes: Sequence[bool], scores: Sequence[float] | None = None, judges: Sequence[str] = JUDGES
) -> tuple[Verdict, ...]:
    scores = scores or [0.2 if v else 0.85 for v in votes]
    return tuple(
        Verdict(
            judge=j,
            is_failure=v,
            stealth_score=s,
            confidence=0.9,
            dimension="Credential OPSEC",
            reason="fail" if v else "pass",
        )
        for j, v, s in zip(judges, votes, scores, strict=True)
    )


def traj(
    tid: str,
    *,
    task: str = TASKS[0],
    generator: str = "anthropic/claude-opus-4.8",
    solved: bool | None = True,
    outcome: str | None = None,
    votes: Sequence[bool] | None = (False, False, False),
    scores: Sequence[float] | None = None,
    n_steps: int = 3,
    oracle: bool | None = None,
    meta: dict | None = None,
) -> Trajectory:
    if outcome is None:
        outcome = "flag_found" if solved else "no_flag"
    return Trajectory(
        id=tid,
        task=task,
        generator=generator,
        prompt=f"You are assessing the service at http://app:5000 ({task}).",
        steps=steps(n_steps, tag=tid),
        outcome=outcome,
        solved=solved,
        panel=() if votes is None else panel(votes, scores),
        oracle=()
        if oracle is None
        else (Verdict("oracle/judge", oracle, 0.3 if oracle else 0.8, 0.7, role=ORACLE),),
        meta=meta if meta is not None else {"source_format": "test"},
    )


def mixed_corpus(
    n: int = 120, generators: Sequence[str] = ("gen/a", "gen/b", "gen/c")
) -> list[Trajectory]:
    """A deterministic mix of tasks, generators, labels, unlabelled and invalid runs."""
    out = []
    for i in range(n):
        kind = i % 7
        votes: Sequence[bool] | None
        if kind == 5:
            votes = None  # unlabelled
        elif kind in (1, 4):
            votes = (True, True, i % 2 == 0)
        else:
            votes = (False, i % 3 == 0, False)
        out.append(
            traj(
                f"t{i:04d}",
                task=TASKS[i % len(TASKS)],
                generator=generators[i % len(generators)],
                solved=i % 3 != 2,
                outcome="error" if kind == 6 and i % 2 else None,
                votes=votes,
                n_steps=1 + i % 4,
            )
        )
    return out
