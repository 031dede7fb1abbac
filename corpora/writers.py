"""Writing trajectories in the two interchange formats the readers read.

The inverse of :mod:`monsearch.corpora.readers`: a trajectory written here and
read back gives the same steps, prompt, task, generator, outcome, solved flag
and verdicts (tested), so what a monitor sees of it is unchanged. It is how a
corpus's runs become files that other tools, and ``monsearch score``, take.

- :func:`to_stealthbench`: StealthBench's harness dialect (``"atif_version":
  "1.7"``, nested steps), laid out by :func:`write_stealthbench` as the
  harness's results tree: ``trajectories/<model>/<task>/<id>/trajectory.atif.json``,
  the label panel in ``panel-verdicts/<task>/<id>/panel-verdict.json`` and each
  oracle verdict in ``verdicts/<judge>/<task>/<id>/verdict.json`` (read back as
  the oracle with ``corpus import --oracle-judge JUDGE``).
- :func:`to_atif`: canonical ATIF (one agent step per tool call, observations
  matched by call id), task, outcome and verdicts under ``extra.monsearch``, a
  step's latency under its tool call's ``extra.latency_ms``.

monsearch's own provenance (``Trajectory.meta``: the synthetic scenario, its
ground truth) is not written: the files hold what a real harness would record.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from monsearch.corpora.model import Step, Trajectory, Verdict, aggregate_panel
from monsearch.corpora.readers.stealthbench import PANEL_FILE, TRAJECTORY_FILE, VERDICT_FILE
from monsearch.corpora.readers.verdicts import judge_slug
from monsearch.files import atomic_write

#: The canonical ATIF version written (the readers take v1.4 to v1.8).
ATIF_VERSION = "ATIF-v1.6"
#: StealthBench's own dialect tag.
STEALTHBENCH_VERSION = "1.7"
#: Agent name and version of an ATIF file when the trajectory does not record them.
UNKNOWN = "unknown"


def _json_bytes(doc: dict[str, Any]) -> bytes:
    # Indented and key order kept: the files are for people as much as for tools.
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _verdict(v: Verdict, judge_key: str) -> dict[str, Any]:
    return {
        judge_key: v.judge,
        "is_failure": v.is_failure,
        "stealth_score": v.stealth_score,
        "confidence": v.confidence,
        "dimension": v.dimension,
        "reason": v.reason,
    }


# --------------------------------------------------------------------------- StealthBench


def to_stealthbench(traj: Trajectory) -> dict[str, Any]:
    """The trajectory file of a StealthBench run (the harness's ATIF 1.7 dialect)."""
    steps = [
        {
            "index": s.index,
            "timestamp": s.timestamp,
            "action": {"type": "tool_call", "tool": s.tool, "input": s.arguments},
            "observation": {"text": s.observation},
            "latency_ms": s.latency_ms,
        }
        for s in traj.steps
    ]
    return {
        "atif_version": STEALTHBENCH_VERSION,
        "trajectory_id": traj.id,
        "agent_model": traj.generator,
        "task": {"name": traj.task, "prompt": traj.prompt},
        "step_count_total": len(steps),
        "step_window": {"from": 0, "to": len(steps) - 1} if steps else None,
        "steps": steps,
        "outcome": traj.outcome,
        "flag_correct": traj.solved,
    }


def _panel_record(traj: Trajectory) -> dict[str, Any] | None:
    label = aggregate_panel(traj.panel, traj.task)
    if label is None:
        return None
    return {
        "trajectory_id": traj.id,
        "agent_model": traj.generator,
        "task": traj.task,
        "is_failure": label.is_failure,
        "stealth_score": label.stealth_score,
        "dimension": label.dimension_text,
        "reason": label.reason,
        "confidence": label.confidence,
        "panel_size": label.panel_size,
        "votes_failure": label.votes_failure,
        "votes_pass": label.votes_pass,
        "unanimous": label.unanimous,
        "verdicts": [_verdict(v, "model") for v in traj.panel],
    }


def _folder_name(value: str, what: str, traj: Trajectory) -> str:
    if not value or "/" in value or "\\" in value or value in (".", ".."):
        raise ValueError(
            f"trajectory {traj.id!r}: its {what} {value!r} cannot name a folder, as the "
            "StealthBench layout needs (write it as ATIF instead)"
        )
    return value


def stealthbench_files(traj: Trajectory, *, labels: bool = True) -> dict[str, bytes]:
    """``{path inside the results tree: content}`` for one run."""
    task, tid = _folder_name(traj.task, "task", traj), _folder_name(traj.id, "id", traj)
    run = f"{judge_slug(traj.generator)}/{task}/{tid}"
    files = {f"trajectories/{run}/{TRAJECTORY_FILE}": _json_bytes(to_stealthbench(traj))}
    if not labels:
        return files
    panel = _panel_record(traj)
    if panel is not None:
        files[f"panel-verdicts/{task}/{tid}/{PANEL_FILE}"] = _json_bytes(panel)
    for v in traj.oracle:
        record = {"trajectory_id": traj.id, "task": traj.task, **_verdict(v, "model")}
        path = f"verdicts/{judge_slug(v.judge)}/{task}/{tid}/{VERDICT_FILE}"
        files[path] = _json_bytes(record)
    return files


# --------------------------------------------------------------------------- canonical ATIF


def _is_message(step: Step) -> bool:
    """A step the ATIF reader made from an agent's free text (and nothing else)."""
    return (
        step.tool == "message" and not step.observation and step.arguments == {"message": step.text}
    )


def _atif_step(step: Step, step_id: int, model: str) -> dict[str, Any]:
    out: dict[str, Any] = {"step_id": step_id}
    if step.timestamp is not None:
        out["timestamp"] = step.timestamp
    out.update(source="agent", model_name=model)
    if _is_message(step):
        out["message"] = step.text
        return out
    call_id = f"call_{step_id}"
    call: dict[str, Any] = {
        "tool_call_id": call_id,
        "function_name": step.tool,
        "arguments": step.arguments,
    }
    if step.latency_ms is not None:
        call["extra"] = {"latency_ms": step.latency_ms}
    out["message"] = ""
    out["tool_calls"] = [call]
    out["observation"] = {"results": [{"source_call_id": call_id, "content": step.observation}]}
    return out


def to_atif(traj: Trajectory, *, labels: bool = True) -> dict[str, Any]:
    """One canonical ATIF document for ``traj``."""
    agent = traj.meta.get("agent") if isinstance(traj.meta.get("agent"), dict) else {}
    steps: list[dict[str, Any]] = []
    if traj.prompt:
        steps.append({"step_id": 1, "source": "user", "message": traj.prompt})
    for step in traj.steps:
        steps.append(_atif_step(step, len(steps) + 1, traj.generator))
    ours: dict[str, Any] = {
        "task": traj.task,
        "generator": traj.generator,
        "outcome": traj.outcome,
        "solved": traj.solved,
    }
    if labels:
        ours["verdicts"] = [
            {**_verdict(v, "judge"), "role": v.role} for v in (*traj.panel, *traj.oracle)
        ]
    return {
        "schema_version": ATIF_VERSION,
        "session_id": traj.id,
        "agent": {
            "name": agent.get("name") or UNKNOWN,
            "version": agent.get("version") or UNKNOWN,
            "model_name": traj.generator,
        },
        "steps": steps,
        "extra": {"monsearch": ours},
    }


def file_name(traj_id: str) -> str:
    """A file name for an id: characters other than letters, digits, ``.-_`` become ``_``."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", traj_id).lstrip(".")
    return name or "trajectory"


def atif_files(traj: Trajectory, *, labels: bool = True) -> dict[str, bytes]:
    return {f"{file_name(traj.id)}.json": _json_bytes(to_atif(traj, labels=labels))}


# --------------------------------------------------------------------------- folders

FORMATS = {"atif": atif_files, "stealthbench": stealthbench_files}


def planned_files(
    trajectories: Iterable[Trajectory], fmt: str, *, labels: bool = True
) -> dict[str, bytes]:
    """Every file the trajectories make in format ``fmt``, by path inside the folder."""
    files: dict[str, bytes] = {}
    for traj in trajectories:
        for path, data in FORMATS[fmt](traj, labels=labels).items():
            if path in files:
                raise ValueError(f"two trajectories would both write {path} (the same id twice?)")
            files[path] = data
    return files


def write_files(folder: Path, files: dict[str, bytes]) -> list[Path]:
    """Write ``files`` under ``folder``; each file is written whole or not at all."""
    written = []
    for rel, data in files.items():
        written.append(atomic_write(folder / rel, data))
    return written
