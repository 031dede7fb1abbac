"""Trajectory <-> plain dict <-> canonical JSON bytes.

The canonical form is what the store writes (one line per trajectory) and what
the content hash is computed over, so the hash depends on the data alone: keys
sorted, fields at their default value omitted, scores as floats. Free-form
fields (``Step.arguments``, ``Trajectory.meta``) must hold JSON values
(dict with str keys, list, str, int, float, bool, None); a tuple there would
come back as a list.

One compaction: when a step's arguments are a single key whose value is the
step's ``text`` (``{"command": text}``, the common case), only the key name is
stored (``"arguments": "command"``); decoding rebuilds the dict. Commands are
otherwise stored twice, which costs a fifth of the load time.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from monsearch.corpora.model import PANEL, Step, Trajectory, Verdict
from monsearch.errors import MonsearchError

_DUMP_OPTS = orjson.OPT_SORT_KEYS


class CodecError(MonsearchError):
    """A trajectory that cannot be stored, or a stored record that cannot be read."""


def _finite(value: float, what: str, traj_id: str) -> float:
    out = float(value)
    if not math.isfinite(out):
        # orjson would silently write null, which would not round-trip.
        raise CodecError(f"trajectory {traj_id!r}: {what} is not finite ({value!r})")
    return out


def step_to_dict(step: Step) -> dict[str, Any]:
    d: dict[str, Any] = {"index": step.index, "tool": step.tool, "text": step.text}
    if step.observation:
        d["observation"] = step.observation
    args = step.arguments
    if args:
        if len(args) == 1:
            key, value = next(iter(args.items()))
            d["arguments"] = key if value == step.text and isinstance(value, str) else args
        else:
            d["arguments"] = args
    if step.timestamp is not None:
        d["timestamp"] = step.timestamp
    if step.latency_ms is not None:
        d["latency_ms"] = step.latency_ms
    return d


def verdict_to_dict(v: Verdict, traj_id: str = "?") -> dict[str, Any]:
    d: dict[str, Any] = {
        "judge": v.judge,
        "is_failure": bool(v.is_failure),
        "stealth_score": _finite(
            v.stealth_score, f"verdict of {v.judge!r}: stealth_score", traj_id
        ),
        "confidence": _finite(v.confidence, f"verdict of {v.judge!r}: confidence", traj_id),
    }
    if v.dimension:
        d["dimension"] = v.dimension
    if v.reason:
        d["reason"] = v.reason
    if v.role != PANEL:
        d["role"] = v.role
    return d


def trajectory_to_dict(t: Trajectory) -> dict[str, Any]:
    d: dict[str, Any] = {
        "id": t.id,
        "task": t.task,
        "generator": t.generator,
        "prompt": t.prompt,
        "outcome": t.outcome,
        "solved": t.solved,
        "steps": [step_to_dict(s) for s in t.steps],
    }
    if t.panel:
        d["panel"] = [verdict_to_dict(v, t.id) for v in t.panel]
    if t.oracle:
        d["oracle"] = [verdict_to_dict(v, t.id) for v in t.oracle]
    if t.meta:
        d["meta"] = t.meta
    return d


def _step_from_dict(s: dict[str, Any]) -> Step:
    args = s.get("arguments")
    if isinstance(args, str):
        s = {**s, "arguments": {args: s["text"]}}
    return Step(**s)


def trajectory_from_dict(d: dict[str, Any]) -> Trajectory:
    """Inverse of :func:`trajectory_to_dict`. Raises KeyError/TypeError on bad records."""
    return Trajectory(
        id=d["id"],
        task=d["task"],
        generator=d["generator"],
        prompt=d["prompt"],
        steps=tuple(_step_from_dict(s) for s in d["steps"]),
        outcome=d["outcome"],
        solved=d["solved"],
        panel=tuple(Verdict(**v) for v in d.get("panel", ())),
        oracle=tuple(Verdict(**v) for v in d.get("oracle", ())),
        meta=d.get("meta", {}),
    )


def encode(t: Trajectory) -> bytes:
    """Canonical JSON of one trajectory (no trailing newline)."""
    try:
        return orjson.dumps(trajectory_to_dict(t), option=_DUMP_OPTS)
    except TypeError as exc:  # orjson.JSONEncodeError subclasses TypeError
        raise CodecError(f"trajectory {t.id!r}: not JSON-serialisable: {exc}") from exc


def decode(line: bytes | str) -> Trajectory:
    return trajectory_from_dict(orjson.loads(line))
