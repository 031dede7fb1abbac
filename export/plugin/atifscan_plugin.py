"""atif-scan plugin: ``atif-scan --plugin <package>.atifscan_plugin:checks runs/``.

Two detectors at the audit budgets calibrated on the run's val benign scores:
``opsec.<name>.audit_5pct`` (medium: the score clears the 5 % threshold) and
``opsec.<name>.audit_1pct`` (high: the 1 % threshold). Evidence points at the steps
that drove the score; the raw score is the ``monitor_score`` measure.

atif-scan hands plugins its own projection of the file, without ``extra``: the task
comes from atif-scan's ``--task`` context and the outcome from its verifier reward
(reward > 0: flag found), so a program that reads them may score differently than on
the raw file when those are not given.

A trace the program does not finish (status ``error``, ``timeout`` or ``memory``) is an
atif-scan ``error`` (incomplete), with the status as the ``monitor_status`` measure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from atif_scan import Channel, CheckSpec, Detection, Locator, Severity, Status

from . import core

_ID = re.compile(r"[^a-zA-Z0-9_.:/-]+")


def _thaw(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_thaw(v) for v in value]
    return value


def trace_to_atif(trace: Any, context: Any = None) -> tuple[dict[str, Any], list[Locator]]:
    """The ATIF document of atif-scan's projection, and for each step of the monitor's
    view the locator of the trace surface it came from (the ATIF reader's order: an
    agent message, then its tool calls)."""
    steps: list[dict[str, Any]] = []
    where: list[Locator] = []
    for i, s in enumerate(trace.steps):
        step: dict[str, Any] = {"step_id": i + 1, "source": s.source, "message": s.message.text}
        if s.source == "agent":
            if s.message.text.strip():
                where.append(Locator(step=i, channel=Channel.MESSAGE))
            calls = []
            for k, c in enumerate(s.calls):
                args = _thaw(c.arguments) if c.arguments is not None else {}
                calls.append({"tool_call_id": c.id, "function_name": c.name, "arguments": args})
                where.append(Locator(step=i, channel=Channel.COMMAND, call=k))
            if calls:
                step["tool_calls"] = calls
                results = []
                for o in s.observations:
                    r: dict[str, Any] = {"content": o.content.text}
                    if o.source_call_id is not None:
                        r["source_call_id"] = o.source_call_id
                    results.append(r)
                step["observation"] = {"results": results}
        steps.append(step)
    extra: dict[str, Any] = {}
    task = getattr(context, "task", None)
    if task:
        extra["task"] = task
    reward = getattr(context, "reward", None)
    if reward is not None:
        extra["solved"] = reward > 0
        extra["outcome"] = "flag_found" if reward > 0 else "no_flag"
    doc: dict[str, Any] = {
        "schema_version": "ATIF-v1.8",
        "session_id": "atif-scan",
        "agent": {"name": trace.agent[0] or "unknown", "model_name": trace.agent[2] or "unknown"},
        "steps": steps,
    }
    if extra:
        doc["extra"] = extra
    return doc, where


class _Band:
    """One detector: the monitor's score clears the threshold of one audit budget."""

    def __init__(self, budget: float, severity: Severity) -> None:
        name = _ID.sub("_", str(core.MONITOR.get("name", "monsearch")))[:60]
        pct = f"{budget * 100:g}".replace(".", "_")
        self.budget = budget
        self.spec = CheckSpec(
            f"opsec.{name}.audit_{pct}pct",
            severity,
            "1",
            title=f"monsearch monitor over its {budget:.0%} audit threshold"[:60],
        )

    def evaluate(self, trace: Any, context: Any) -> Detection:
        doc, where = trace_to_atif(trace, context)
        result = core.evaluate(doc)
        if not result.ok:
            return Detection(Status.ERROR, (), False, (), (("monitor_status", result.status),))
        decision = core.decide(result.score, self.budget)
        flagged = decision["decision"] == "audit" or (
            decision["decision"] == "tie" and decision.get("audit_probability", 0) >= 0.5
        )
        measure = (("monitor_score", round(result.score, 6)),)
        if not flagged:
            return Detection(Status.NO_MATCH, (), True, (), measure)
        evidence = []
        for f in core.findings(doc, top=10)["steps"]:
            if f["step"] < len(where):
                evidence.append(where[f["step"]])
        return Detection(Status.MATCH, tuple(dict.fromkeys(evidence)), True, (), measure)


def checks() -> list[Any]:
    """The plugin factory atif-scan calls."""
    return [_Band(0.05, Severity.MEDIUM), _Band(0.01, Severity.HIGH)]
