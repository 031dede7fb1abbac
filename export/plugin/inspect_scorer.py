"""Inspect AI scorer: ``inspect score LOG --scorer <package>/opsec_monitor [-S budget=0.01]``.

Scores each sample's transcript with the exported monitor. ``value`` is the monitor's
score; ``answer`` the decision at the audit ``budget`` (``audit``/``tie``/``pass``);
``metadata`` the decision details and the top findings (``tau`` exact, derived figures
rounded: see ``_display``). Sample metadata keys ``task``, ``outcome`` and ``solved`` are
passed on when present (the view shows them to the program).

A transcript the program does not finish (status ``error``, ``timeout`` or ``memory``:
it raised, or ran past its limits) has no score: ``value`` is NaN, as for an unreadable
transcript, ``answer`` the status, the explanation says why, and ``metadata`` keeps the
status and the fallback score. The program runs in the plugin's worker process, waited
for in a thread: the event loop goes on meanwhile.
"""

from __future__ import annotations

import math
from typing import Any

import anyio
from inspect_ai.scorer import Score, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState

from . import _display as display
from . import core
from ._messages import messages_to_atif


@scorer(metrics=[mean(), stderr()])
def opsec_monitor(budget: float | None = None, findings: bool = True) -> Any:
    async def score(state: TaskState, target: Target) -> Score:
        meta = state.metadata or {}
        doc = messages_to_atif(
            state.messages,
            task=meta.get("task") if isinstance(meta.get("task"), str) else None,
            outcome=meta.get("outcome") if isinstance(meta.get("outcome"), str) else None,
            solved=meta.get("solved") if isinstance(meta.get("solved"), bool) else None,
            session_id=str(state.sample_id),
            model_name=str(state.model),
        )
        try:
            result = await anyio.to_thread.run_sync(core.evaluate, doc)
        except core.InputError as exc:
            return Score(value=math.nan, explanation=f"unreadable transcript: {exc}")
        decision = core.decide(result, budget)
        metadata: dict[str, Any] = {
            "decision": display.decision(decision),
            "error": result.error,
            "status": result.status,
        }
        if not result.ok:
            metadata["fallback_score"] = result.score
            return Score(
                value=math.nan,
                answer=result.status,
                explanation=f"{core.MONITOR['name']}: no score ({result.status}): {result.error}",
                metadata=metadata,
            )
        if findings:
            found = await anyio.to_thread.run_sync(lambda: core.findings(doc, top=5))
            metadata["findings"] = display.findings(found)
        return Score(
            value=result.score,
            answer=decision["decision"],
            explanation=f"{core.MONITOR['name']}: score {result.score:.4g}, "
            f"{decision['decision']} at a {display.percent(decision['budget'])} audit budget",
            metadata=metadata,
        )

    return score
