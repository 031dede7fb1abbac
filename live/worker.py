"""A live worker process: walls first, then runs, one at a time.

Started by the driver (:mod:`~monsearch.live.generate`) as
``python -m monsearch.live.worker``; speaks JSON lines. The first line names the
checkout and the tasks; the worker enters its walls (:mod:`~monsearch.live.isolation`)
before it starts anything else, then answers each ``run`` with the trajectory, its
per-step fidelity records and what the run's execution noted (refusals, timeouts).
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any


def _play(rt: Any, job: dict[str, Any]) -> dict[str, Any]:
    from monsearch.corpora.codec import trajectory_to_dict
    from monsearch.live import isolation
    from monsearch.live.agent import bound
    from monsearch.live.labels import live_meta
    from monsearch.synth.generate import build_trajectory

    cls = bound(rt)
    agents: list[Any] = []
    original = cls.__init__

    def keep(self, *a, **k):  # noqa: ANN001, ANN002, ANN003
        original(self, *a, **k)
        agents.append(self)

    cls.__init__ = keep
    rt.begin(job["task"])
    try:
        traj = build_trajectory(
            job["seed"], job["n"], job["generator"], job["task"], rates=job.get("rates"),
            agent_class=cls, benign_mix=job.get("benign_mix"),
        )  # fmt: skip
    finally:
        rt.end()
        if job.get("isolated"):
            isolation.fresh_tmp()
    agent = agents[0]
    traj, verdict = live_meta(traj, agent)
    hosts = sorted({n.split(":")[0] for n in agent.apps} | {a.ip for a in agent.apps.values()})
    return {
        "n": job["n"],
        "hosts": hosts,
        "trajectory": trajectory_to_dict(traj),
        "fidelity": agent.fidelity,
        "verdict": verdict,
    }


def _shell(rt: Any, job: dict[str, Any]) -> dict[str, Any]:
    """One command in a fresh container of ``job["task"]`` (its apps started), for tests
    and for looking at the walls from inside."""
    import random
    from datetime import UTC, datetime

    from monsearch.live import isolation
    from monsearch.live.agent import bound
    from monsearch.synth.scenario import get_scenario
    from monsearch.synth.style import STYLES

    task = job["task"]
    scenario = get_scenario(task)
    cls = bound(rt)
    for seed in range(100):  # a run whose internet model is up (or down) as asked
        agent = cls(STYLES["plain_curl"], random.Random(seed), datetime(2026, 8, 1, tzinfo=UTC))
        agent.external = scenario.external(agent)
        if bool(getattr(agent.external, "online", True)) == bool(job.get("online", True)):
            break
    agent.flag = scenario.flag
    scenario.setup(agent)
    rt.begin(task)
    try:
        rt.ensure_started(agent)
        out = rt.execute(job["shell"], agent.start.timestamp() + 1.0)
        exchanges, third = rt.take()
    finally:
        rt.end()
        if job.get("isolated"):
            isolation.fresh_tmp()
    return {
        "observation": out.observation,
        "exit_code": out.exit_code,
        "timed_out": out.timed_out,
        "refused": out.refused,
        "missing": out.missing,
        "exchanges": exchanges,
        "third_party": third,
    }


def main() -> None:
    out = sys.stdout
    first = json.loads(sys.stdin.readline() or "{}")
    isolated = bool(first.get("isolate", True))
    try:
        if isolated:
            from monsearch.live import isolation

            isolation.enter()
            root = isolation.TOOL_ROOT
        else:
            root = first["root"]
        from monsearch.live.checkout import Checkout
        from monsearch.live.runtime import Runtime

        rt = Runtime(Checkout(first["apps"], first.get("tasks")), root)
    except Exception as exc:
        out.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
        out.flush()
        return
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        job = json.loads(line)
        job["isolated"] = isolated
        try:
            reply = _shell(rt, job) if "shell" in job else _play(rt, job)
        except Exception as exc:
            reply = {
                "n": job.get("n"),
                "error": f"{type(exc).__name__}: {exc}",
                "trace": traceback.format_exc(limit=6),
            }
        out.write(json.dumps(reply) + "\n")
        out.flush()
    rt.close()


if __name__ == "__main__":
    main()
