"""Chat messages (Inspect / ControlArena) -> a canonical ATIF document for :mod:`.core`.

Duck-typed: works on Inspect ``ChatMessage`` objects and on plain dicts with the same
fields, and never imports a host framework. System and user messages become system and
user steps (the first user message is the task prompt, as the ATIF reader takes it);
an assistant message becomes an agent step with its tool calls, and the tool messages
that follow become that step's observation results, linked by tool call id.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _text(message: Any) -> str:
    text = _get(message, "text")
    if isinstance(text, str):
        return text
    content = _get(message, "content")
    if isinstance(content, str):
        return content
    parts = []
    for part in content or ():
        value = _get(part, "text")
        if isinstance(value, str):
            parts.append(value)
    return "\n".join(parts)


def _arguments(call: Any) -> Any:
    args = _get(call, "arguments")
    if isinstance(args, str):
        try:
            return json.loads(args)
        except ValueError:
            return {"raw": args}
    return dict(args) if isinstance(args, Mapping) else {}


def messages_to_atif(
    messages: Iterable[Any],
    *,
    task: str | None = None,
    outcome: str | None = None,
    solved: bool | None = None,
    session_id: str = "inspect-sample",
    model_name: str = "unknown",
) -> dict[str, Any]:
    """The ATIF-v1.8 document of a chat transcript (``task``/``outcome``/``solved`` go to
    ``extra``, where the ATIF reader looks for them)."""
    steps: list[dict[str, Any]] = []
    last_agent: dict[str, Any] | None = None
    for message in messages:
        role = _get(message, "role")
        if role in ("system", "user"):
            steps.append({"step_id": len(steps) + 1, "source": role, "message": _text(message)})
            last_agent = None
        elif role == "assistant":
            calls = []
            for k, call in enumerate(_get(message, "tool_calls") or ()):
                calls.append(
                    {
                        "tool_call_id": str(_get(call, "id") or f"call_{len(steps) + 1}_{k}"),
                        "function_name": str(_get(call, "function") or "unknown"),
                        "arguments": _arguments(call),
                    }
                )
            last_agent = {"step_id": len(steps) + 1, "source": "agent", "message": _text(message)}
            if calls:
                last_agent["tool_calls"] = calls
                last_agent["observation"] = {"results": []}
            steps.append(last_agent)
        elif role == "tool" and last_agent is not None and "observation" in last_agent:
            text = _text(message)
            error = _get(message, "error")
            if error is not None and not text:
                text = str(_get(error, "message") or error)
            result: dict[str, Any] = {"content": text}
            call_id = _get(message, "tool_call_id")
            if call_id:
                result["source_call_id"] = str(call_id)
            last_agent["observation"]["results"].append(result)
    extra: dict[str, Any] = {}
    if task:
        extra["task"] = task
    if outcome:
        extra["outcome"] = outcome
    if solved is not None:
        extra["solved"] = solved
    doc: dict[str, Any] = {
        "schema_version": "ATIF-v1.8",
        "session_id": session_id,
        "agent": {"name": "inspect", "version": "0", "model_name": model_name},
        "steps": steps,
    }
    if extra:
        doc["extra"] = extra
    return doc
