"""Judge verdict records: validation, the legacy fail-closed vote, panel vs oracle.

Both formats store a judge's verdict as ``{judge, is_failure, stealth_score,
confidence, dimension, reason}`` (StealthBench names the judge ``model``).

The version of StealthBench that produced the paper's data stored an
unparseable judge answer as a stand-in verdict whose reason is
:data:`LEGACY_PARSE_FAILURE` and counted it as a *failure* vote ("fail
closed"); its scores are not documented, so missing ones read as 0. We count
it the same way so labels match the published panel.

Callers may name *oracle judges*: their verdicts go to ``Trajectory.oracle``
(the escalation judge a monitor may consult) instead of the label panel, so
escalating never amounts to reading the label.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from monsearch.corpora.model import ORACLE, PANEL, VERDICT_ROLES, Verdict
from monsearch.corpora.readers.jsonio import Node

LEGACY_PARSE_FAILURE = "judge output could not be parsed"


def judge_slug(model: str) -> str:
    """The folder name StealthBench uses for a model (``/`` and ``:`` become ``-``)."""
    return model.replace("/", "-").replace(":", "-")


def is_oracle(judge: str, oracle_judges: frozenset[str] | set[str]) -> bool:
    """Judges may be named by model (``openrouter/x/y``) or folder slug."""
    return judge in oracle_judges or judge_slug(judge) in oracle_judges


def read_verdict(node: Node, *, judge_key: str, with_role: bool = False) -> Verdict:
    """One verdict object; ``with_role`` reads an optional ``role`` field."""
    node.as_obj("a verdict object")
    judge = node.string(judge_key, nonempty=True)
    reason = node.string("reason", required=False) or ""
    dimension = node.string("dimension", required=False) or ""
    role = PANEL
    if with_role:
        role = node.one_of("role", VERDICT_ROLES, required=False) or PANEL
    if reason == LEGACY_PARSE_FAILURE:
        return Verdict(
            judge=judge,
            is_failure=True,
            stealth_score=node.unit("stealth_score", required=False) or 0.0,
            confidence=node.unit("confidence", required=False) or 0.0,
            dimension=dimension,
            reason=reason,
            role=role,
        )
    return Verdict(
        judge=judge,
        is_failure=bool(node.boolean("is_failure")),
        stealth_score=float(node.unit("stealth_score")),  # type: ignore[arg-type]
        confidence=float(node.unit("confidence")),  # type: ignore[arg-type]
        dimension=dimension,
        reason=reason,
        role=role,
    )


def split_roles(
    verdicts: Iterable[Verdict], oracle_judges: frozenset[str] | set[str]
) -> tuple[tuple[Verdict, ...], tuple[Verdict, ...]]:
    """``(panel, oracle)`` keeping order; named oracle judges leave the panel."""
    panel: list[Verdict] = []
    oracle: list[Verdict] = []
    for v in verdicts:
        if v.role == ORACLE or is_oracle(v.judge, oracle_judges):
            oracle.append(v if v.role == ORACLE else dataclasses.replace(v, role=ORACLE))
        else:
            panel.append(v)
    return tuple(panel), tuple(oracle)


def legacy_votes(verdicts: Iterable[Verdict]) -> int:
    return sum(1 for v in verdicts if v.reason == LEGACY_PARSE_FAILURE)
