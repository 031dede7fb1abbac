"""Run length independent of the mode: filler steps that depend on nothing the run did,
spliced in at random points up to a length drawn the same way for every mode."""

from __future__ import annotations

import math
from datetime import timedelta

from monsearch.corpora.model import Step
from monsearch.synth.agent import Agent
from monsearch.synth.family import pick
from monsearch.synth.tasks.endings import SIDE_THOUGHTS
from monsearch.synth.tasks.shell_steps import (
    etc_hosts,
    identity,
    own_address,
    python_version,
    uname,
    which,
)


#: Filler steps: look-arounds that depend on nothing the run did (no files, no results).
def _filler(a: Agent) -> None:
    rng = a.rng
    x = rng.randrange(9)
    if x < 3:
        a.say(pick(rng, a.plans or SIDE_THOUGHTS) if x < 2 else pick(rng, SIDE_THOUGHTS))
    elif x == 3:
        a.shell("cat /etc/hosts", etc_hosts(a))
    elif x == 4:
        own_address(a)
    elif x == 5:
        identity(a, ("id", "whoami"))
    elif x == 6:
        python_version(a)
    elif x == 7:
        uname(a)
    else:
        which(a, "curl jq python3 nc")


#: What unsolved runs write to the result file when they write a wrong answer.
WRONG_ANSWERS = ("FLAG{test}", "FLAG{not_found}", "no flag found", "FLAG{}", "FLAG{placeholder}")


def target_length(a: Agent, solved: bool) -> int:
    """A run length drawn without looking at the mode (log-normal, by solve status)."""
    median = 10.0 if solved else 9.0
    return max(4, min(34, round(a.rng.lognormvariate(math.log(median), 0.45))))


def pad_to(a: Agent, target: int) -> None:
    """Bring the run up to ``target`` steps with filler spliced in at random points.

    Filler steps depend on no state of the run, so they can go anywhere; each
    one takes its own time, and every later step moves back by that much.
    """
    steps, times = a.steps, a.step_t
    missing = target - len(steps)
    if missing <= 0:
        return
    rng = a.rng
    # Build the filler on a scratch copy of the agent's surface (same host, style).
    scratch = Agent(a.style, rng, a.start)
    scratch.ip, scratch.hostname, scratch.plans = a.ip, a.hostname, a.plans
    slots = sorted(rng.randint(1, len(steps)) for _ in range(missing))
    out: list[Step] = []
    out_t: list[float] = []
    new_index: dict[int, int] = {}
    start = a.start
    shift = 0.0
    j = 0
    for i in range(len(steps) + 1):
        while j < len(slots) and slots[j] == i:
            prev = out_t[-1] if out_t else 0.0
            before = len(scratch.steps)
            scratch.t = 0.0
            _filler(scratch)
            for fs, ft in zip(scratch.steps[before:], scratch.step_t[before:], strict=True):
                t = prev + ft
                ts = (start + timedelta(seconds=t)).isoformat(timespec="microseconds")
                out.append(
                    Step(
                        len(out), fs.tool, fs.text, fs.observation, fs.arguments, ts, fs.latency_ms
                    )
                )
                out_t.append(t)
            shift += scratch.t
            j += 1
        if i < len(steps):
            s = steps[i]
            new_index[i] = len(out)
            if shift:
                t = times[i] + shift
                ts = (start + timedelta(seconds=t)).isoformat(timespec="microseconds")
                s = Step(len(out), s.tool, s.text, s.observation, s.arguments, ts, s.latency_ms)
            else:
                t = times[i]
            out.append(s)
            out_t.append(t)
    a.steps[:] = out
    a.step_t[:] = out_t
    a.t += shift
    a.requests = [(t, r, st, new_index.get(k, k)) for t, r, st, k in a.requests]
    if a.flag:
        a.flag_step = next((s.index for s in out if a.flag in s.observation), None)
