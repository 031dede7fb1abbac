"""How faithful the simulator is: the same plan's simulated and real observation, step
by step.

A live run records, for every command, what the simulator said it would print and
what the real apps made it print (:class:`~monsearch.live.agent.LiveAgent`). Two
measures per step:

- **status codes**: the sequence of HTTP statuses the task's apps answered the agent
  (simulated: the simulated apps' answers to the requests of that step; real: the
  apps' own exchange log). A step with requests on either side is compared; it agrees
  when the two sequences are equal.
- **what a monitor reads**: both observations of the step read by the project's view
  builder (:func:`~monsearch.views.build.build_view`), as a one-step run: the status
  codes found in the text, the requests (method, host class, path, status), the
  findings (kind, where) and the hosts named. Each field agrees or not.

:func:`summarise` turns a corpus's records into per task and style shares and the
commonest differences (``monsearch corpus fidelity``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

#: Fields of the view compared per step.
VIEW_FIELDS = ("statuses", "requests", "findings", "hosts")


def app_hosts(record: dict[str, Any], hosts: Iterable[str]) -> list[int]:
    known = set(hosts)
    return [int(r[3]) for r in record["sim_requests"] if r[1] in known and r[3] is not None]


def status_pair(record: dict[str, Any], hosts: Iterable[str]) -> tuple[list[int], list[int]]:
    """(simulated, real) statuses the task's apps answered the agent in this step."""
    sim = app_hosts(record, hosts)
    real = [int(e[4]) for e in record["exchanges"] if e[1] == "agent"]
    return sim, real


def _step_view(text: str, observation: str, task: str) -> dict[str, Any]:
    from monsearch.corpora.model import Step, Trajectory
    from monsearch.views.build import build_view

    traj = Trajectory(
        id="fidelity", task=task, generator="fidelity", prompt="",
        steps=(Step(0, "execute_command", text, observation, {"command": text}),),
        outcome="no_flag", solved=None,
    )  # fmt: skip
    v = build_view(traj)
    step = v.steps[0]
    return {
        "statuses": tuple(step.statuses),
        "requests": tuple((r.method, r.host_class, r.path, r.status) for r in v.requests),
        "findings": tuple(sorted({(f.kind, f.where) for f in v.secrets})),
        "hosts": tuple(sorted({r.host for r in v.requests})),
    }


def compare_views(record: dict[str, Any], task: str) -> dict[str, bool]:
    """Which view fields the step's simulated and real observation agree on."""
    text = record["command"]
    a = _step_view(text, record["sim_observation"], task)
    b = _step_view(text, record["real_observation"], task)
    return {f: a[f] == b[f] for f in VIEW_FIELDS}


@dataclass
class Tally:
    compared: int = 0
    agree: int = 0
    view_compared: int = 0
    view_agree: Counter = field(default_factory=Counter)
    differences: Counter = field(default_factory=Counter)

    @property
    def share(self) -> float | None:
        return None if not self.compared else self.agree / self.compared

    def to_dict(self) -> dict[str, Any]:
        return {
            "steps_compared": self.compared,
            "steps_agree": self.agree,
            "share": self.share,
            "view_steps": self.view_compared,
            "view_share": {
                f: (self.view_agree[f] / self.view_compared if self.view_compared else None)
                for f in VIEW_FIELDS
            },
            "differences": [
                {"what": k, "count": v} for k, v in self.differences.most_common(10)
            ],
        }


def _difference(sim: Sequence[int], real: Sequence[int], record: dict[str, Any]) -> str:
    paths = [f"{r[0]} {r[2]}" for r in record["sim_requests"]][:2] or [
        f"{e[2]} {e[3]}" for e in record["exchanges"]
    ][:2]
    where = ", ".join(paths) or "no request"
    if record.get("timed_out"):
        return f"timed out for real ({where})"
    return f"{where}: simulated {list(sim)[:4]} real {list(real)[:4]}"


def summarise(runs: Iterable[dict[str, Any]], *, views: bool = True) -> dict[str, Any]:
    """Per task, per style and overall status-code agreement (and view fields) of the
    runs' step records. ``runs``: dicts with ``task``, ``style``, ``hosts`` and
    ``fidelity`` (the steps' records)."""
    total = Tally()
    by_task: dict[str, Tally] = defaultdict(Tally)
    by_style: dict[str, Tally] = defaultdict(Tally)
    for run in runs:
        task, style = run["task"], run["style"]
        for rec in run["fidelity"]:
            sim, real = status_pair(rec, run["hosts"])
            if not sim and not real:
                continue
            same = sim == real
            for tally in (total, by_task[task], by_style[style]):
                tally.compared += 1
                tally.agree += int(same)
                if not same:
                    tally.differences[_difference(sim, real, rec)] += 1
            if views:
                fields = compare_views(rec, task)
                for tally in (total, by_task[task], by_style[style]):
                    tally.view_compared += 1
                    for f, ok in fields.items():
                        tally.view_agree[f] += int(ok)
    return {
        "overall": total.to_dict(),
        "tasks": {k: v.to_dict() for k, v in sorted(by_task.items())},
        "styles": {k: v.to_dict() for k, v in sorted(by_style.items())},
    }


def read_records(corpus: Any) -> list[dict[str, Any]]:
    """The per-step records a live corpus keeps beside it (``fidelity.jsonl.zst``)."""
    import json
    from pathlib import Path

    import zstandard

    from monsearch.errors import MonsearchError

    path = Path(corpus) / "fidelity.jsonl.zst"
    if not path.is_file():
        raise MonsearchError(f"{corpus}: no fidelity records (not a live corpus?)")
    with open(path, "rb") as fh, zstandard.ZstdDecompressor().stream_reader(fh) as r:
        text = r.read().decode("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]
