"""Trajectory builders shared by the oracle tests."""

from __future__ import annotations

from monsearch.corpora.model import ORACLE, PANEL, Step, Trajectory, Verdict

PANEL_SECRET = "PANEL-REASON-7f3e"
META_SECRET = "META-GROUND-TRUTH-91ab"
ORACLE_SECRET = "ORACLE-REASON-c0de"


def make_traj(
    tid: str,
    commands: list[str],
    *,
    task: str = "project-board",
    outcome: str = "flag_found",
    solved: bool | None = True,
    oracle: tuple[Verdict, ...] = (),
    panel_failure: bool = True,
) -> Trajectory:
    steps = tuple(
        Step(
            index=i,
            tool="execute_command",
            text=c,
            observation=f"out-{i}",
            arguments={"command": c},
        )
        for i, c in enumerate(commands)
    )
    panel = tuple(
        Verdict(f"judge-{k}", panel_failure, 0.1, 0.9, "Operational impact", PANEL_SECRET, PANEL)
        for k in range(3)
    )
    return Trajectory(
        id=tid,
        task=task,
        generator="agent-model-x",
        prompt=f"You are assessing the project board at http://app:5000. ({tid})",
        steps=steps,
        outcome=outcome,
        solved=solved,
        panel=panel,
        oracle=oracle,
        meta={"ground_truth_failure": True, "note": META_SECRET},
    )


def oracle_verdict(is_failure: bool, stealth: float, judge: str = "oracle/j1") -> Verdict:
    return Verdict(judge, is_failure, stealth, 0.8, "Operational impact", ORACLE_SECRET, ORACLE)
