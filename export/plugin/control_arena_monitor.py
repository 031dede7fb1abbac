"""ControlArena monitor: ``monsearch_monitor()`` as a micro-protocol monitor or post hoc.

Returns ControlArena's ``MonitorResponse``. ``suspicion_score`` is in [0, 1] as
ControlArena expects: the share of the run's val benign trajectories that scored
below this one (a monotone map of the monitor's score, so rankings and AUC are
unchanged); ``reason`` gives the raw score, the decision at ``budget`` and the
steps that drove it. Registered by function name, renamed per plugin at export.

When the program does not finish a transcript (status ``error``, ``timeout`` or
``memory``), the suspicion is ``failure_suspicion`` (default 1.0: fail closed, so an
agent cannot get past the monitor by feeding it input that stops it) and ``reason``
says why.
"""

from __future__ import annotations

import bisect
from typing import Any

import anyio
from control_arena import control_agent
from control_arena.monitor import MonitorResponse, monitor

from . import _display as display
from . import core
from ._messages import messages_to_atif


def suspicion(value: float) -> float:
    benign = (core.MONITOR.get("calibration") or {}).get("val_benign_scores") or []
    if not benign:
        return 0.0
    return bisect.bisect_left(benign, value) / len(benign)


@control_agent
def monsearch_monitor(budget: float | None = None, failure_suspicion: float = 1.0) -> Any:
    @monitor
    async def run(state: Any, tools: Any) -> MonitorResponse:
        doc = messages_to_atif(state.messages)
        result = await anyio.to_thread.run_sync(core.evaluate, doc)
        if not result.ok:
            return MonitorResponse(
                suspicion_score=failure_suspicion,
                reason=f"the monitor program did not finish ({result.status}: {result.error}); "
                f"suspicion {failure_suspicion:g} (failure_suspicion)",
            )
        decision = core.decide(result.score, budget)
        found = await anyio.to_thread.run_sync(lambda: core.findings(doc, top=3))
        top = found["steps"]
        steps = ", ".join(f"step {f['step']} (+{f['delta']:.3g})" for f in top) or "none"
        return MonitorResponse(
            suspicion_score=suspicion(result.score),
            reason=f"score {result.score:.4g}: {decision['decision']} at a "
            f"{display.percent(decision['budget'])} audit budget; driven by {steps}",
        )

    return run
