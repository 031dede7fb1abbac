"""The live agent: the synthetic agent's plan, every command executed for real.

:class:`LiveAgent` is the simulator's :class:`~monsearch.synth.agent.Agent` with one
difference: each ``execute_command`` step it writes is run in the worker's container
against the real apps (:mod:`~monsearch.live.execute`), and the step records what the
command really printed and how long it really took (sleeps on the run's clock). The
plan itself (which request next, when to back off, when to write the flag) still
follows the simulated app's answers: that is what makes the simulator's and the real
observation of the same step comparable (:mod:`~monsearch.live.fidelity`), and the
simulator's mistakes visible. Values the real app chose (tokens, codes) replace the
simulated ones in later commands (:mod:`~monsearch.live.values`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from monsearch.corpora.model import Step
from monsearch.synth.agent import _EOF_LINE, EXEC_MEDIAN_LOG, EXEC_SIGMA, Agent


class LiveAgent(Agent):
    """Bound to a run's :class:`~monsearch.live.runtime.Runtime` by :func:`bound`."""

    runtime: Any = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from monsearch.live.values import ValueMap

        self.values = ValueMap()
        self.fidelity: list[dict[str, Any]] = []
        self.real_flag_step: int | None = None
        self.live_notes: dict[str, Any] = {"refused": [], "missing": [], "timeouts": 0, "cut": 0}

    def _push(self, tool: str, text: str, observation: str, args: dict[str, Any], ms: int) -> Step:
        if tool != "execute_command":
            text = self.values.apply(text)
            if tool == "think":
                args = {"thought": text}
            return super()._push(tool, text, observation, args, ms)
        if self.held_out and "<<'EOF'" in text:
            text = _EOF_LINE.sub("PY", text.replace("<<'EOF'", "<<'PY'"))
        text = self.values.apply(text)
        rt = self.runtime
        rt.ensure_started(self)
        index = len(self.steps)
        sim_requests = [
            (r.method, r.host, r.path, status, r.explicit_port)
            for _t, r, status, step in self.requests
            if step == index
        ]
        sim_bodies = [
            (r.method, r.path, resp_body)
            for (_t, r, _s, step), resp_body in zip(self.requests, self._bodies, strict=False)
            if step == index
        ]
        # The simulator's draw of the exec overhead, made and dropped: the run's random
        # stream stays the simulator's, so the live run follows the same plan.
        self.rng.lognormvariate(EXEC_MEDIAN_LOG, EXEC_SIGMA)
        outcome = rt.execute(text, self.start.timestamp() + self.t)
        exchanges, third = rt.take()
        self._learn(sim_bodies, exchanges)
        self.fidelity.append(
            {
                "index": index,
                "command": text,
                "sim_observation": observation,
                "sim_requests": sim_requests,
                "real_observation": outcome.observation,
                "exchanges": [
                    (e["instance"], e["client"], e["method"], e["path"], e["status"]) for e in exchanges
                ],
                "third_party": [(s["method"], s["url"]) for s in third],
                "timed_out": outcome.timed_out,
            }
        )
        notes = self.live_notes
        notes["refused"] += outcome.refused
        notes["missing"] += outcome.missing
        notes["timeouts"] += int(outcome.timed_out)
        notes["cut"] += int(outcome.cut)
        self.t += outcome.elapsed_ms / 1000.0
        ts = (self.start + timedelta(seconds=self.t)).isoformat(timespec="microseconds")
        step = Step(index, tool, text, outcome.observation, {"command": text}, ts, outcome.elapsed_ms)
        self.steps.append(step)
        self.step_t.append(self.t)
        # The plan's own flag logic reads the simulated observation (as it was written to);
        # what the real run showed is kept beside it.
        if self.flag and self.flag_step is None and self.flag in observation:
            self.flag_step = index
        if self.flag and self.real_flag_step is None and self.flag in outcome.observation:
            self.real_flag_step = index
        return step

    # The simulated response bodies, in the order of self.requests (for the value map).
    @property
    def _bodies(self) -> list[str]:
        return self.__dict__.setdefault("_sim_bodies", [])

    def send(self, r, t):  # noqa: ANN001 - the base signature
        resp = super().send(r, t)
        self._bodies.append(resp.body if resp is not None else "")
        return resp

    def _learn(self, sim_bodies: list[tuple[str, str, str]], exchanges: list[dict[str, Any]]) -> None:
        mine = [e for e in exchanges if e["client"] == "agent"]
        j = 0
        for method, path, body in sim_bodies:
            for k in range(j, len(mine)):
                if mine[k]["method"] == method and mine[k]["path"] == path:
                    self.values.learn(body, mine[k]["response"])
                    j = k + 1
                    break

    def outcome(self, *, step_limit: bool = False) -> tuple[str, bool | None]:
        """The run's outcome from the container's real ``/tmp/result.txt``."""
        text = self.runtime.result_text() if self.runtime is not None else None
        solved = None if text is None else text.strip() == (self.flag or "")
        if solved:
            return "flag_found", True
        return ("step_limit" if step_limit else "no_flag"), solved


def bound(runtime: Any) -> type[LiveAgent]:
    """A :class:`LiveAgent` class whose runs execute in ``runtime``."""
    return type("BoundLiveAgent", (LiveAgent,), {"runtime": runtime})
