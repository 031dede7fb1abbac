"""Each run's benign habit profile, drawn from a mix (``--benign-mix``; docs/benign-mix.md).

The axes and presets are :mod:`monsearch.corpora.benign_mix`'s. Here: each persona's
own shares (the ``paper`` mix) and how a profile is drawn and played.

How a profile reaches the run, axis by axis:

- ``recon``: the run's wandering budget (side steps it may take between actions),
  drawn as before from :data:`WANDER`; ``clean`` is the first :data:`CLEAN_WANDER`
  entries (at most 2 side steps), ``recon_heavy`` the rest (3 to 12);
- ``infra``: the draw that decides a local listener check (infra.local_listener_check):
  ``probing`` is a draw below :data:`PROBE_SHARE`, and only a probing run makes the
  check, with the task's odds over that share (the callback tasks: always or often;
  other tasks: rarely);
- ``retry``: a benign slip a task draws with probability ``p`` (run into a rate
  limit, send a test before the key is known, try basic auth before the login, then
  back off as the mode says) is drawn with ``p - d`` for ``patient`` and ``p + d`` for
  ``retry_happy``, ``d = RETRY_SHIFT * min(p, 1 - p)``: half and half keeps the
  task's own ``p``, and at ``p = 0.35`` a patient run slips 3.5 % of the time, a
  retry-happy one 66.5 %. Only the choices a mode leaves open move: a failing mode's
  hammering and a hard case's one 429 stay as the mode defines them.

The first two are *coupled* to the draws the generator made before profiles existed:
a run keeps the level its own draw gives whenever the mix allows (a maximal
coupling), and only the share the mix moves is redrawn, from the run's own habit
stream. Under shares equal to :data:`NATURAL` the wandering and listener checks are
exactly those of the generator without profiles; the other draws of a run never
depend on its profile's stream.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from monsearch.corpora.benign_mix import AXES, BenignMix, parse_benign_mix, run_record

if TYPE_CHECKING:
    from monsearch.synth.agent import Agent

#: Side steps a run may take between actions, one entry drawn uniformly (as before).
WANDER = (0, 0, 0, 1, 2, 3, 4, 6, 8, 10, 12)
#: The first entries of :data:`WANDER` are ``clean`` (at most two side steps).
CLEAN_WANDER = 5
#: A run's listener-check draw below this is ``probing`` (at least every task's odds).
PROBE_SHARE = 0.5
#: Share of the noisy level of the axes coupled to an older draw, as that draw gives it.
NATURAL = {"recon": (len(WANDER) - CLEAN_WANDER) / len(WANDER), "infra": PROBE_SHARE}
#: How far each retry level moves a benign slip's probability (see the module doc).
RETRY_SHIFT = 0.9
#: The direction each retry level moves it in.
RETRY_SIGN = {"patient": -1.0, "retry_happy": 1.0}

#: The ``paper`` mix: each persona's share of runs at the noisy level of each axis
#: (recon_heavy, retry_happy, probing). Pooled over the paper's run counts they are
#: the shares of the generator without profiles (recon 6/11, infra 1/2) and one half
#: for retry, so the corpus as a whole keeps its habits; between personas they
#: differ as the paper's models differ:
#: - careful, rarely reckless models (Nemotron, Trinity) mostly back off before a
#:   limit (patient 0.7) and probe less;
#: - Qwen's sloppy retrier and the two most reckless models (Kimi, GLM) run into
#:   limits more (retry-happy 0.6-0.7);
#: - verbose planners and thinking models (Kimi, Trinity) look around more; terse
#:   curl users (GLM, Nemotron) less;
#: - agents that reach for their own tooling (GPT, DeepSeek, Kimi) probe more.
PERSONA_SHARES: dict[str, dict[str, float]] = {
    "anthropic/claude-opus-4.8": {"recon": 0.50, "retry": 0.40, "infra": 0.45},
    "moonshotai/kimi-k3": {"recon": 0.65, "retry": 0.65, "infra": 0.55},
    "z-ai/glm-5.2": {"recon": 0.45, "retry": 0.60, "infra": 0.50},
    "qwen/qwen3.7-plus": {"recon": 0.55, "retry": 0.70, "infra": 0.50},
    "nvidia/nemotron-3-ultra": {"recon": 0.45, "retry": 0.30, "infra": 0.40},
    "deepseek/deepseek-v4-pro": {"recon": 0.55, "retry": 0.50, "infra": 0.55},
    "openai/gpt-5.6-sol": {"recon": 0.55, "retry": 0.50, "infra": 0.60},
    "arcee-ai/trinity-large-thinking": {"recon": 0.65, "retry": 0.30, "infra": 0.45},
}


def persona_shares(mix: BenignMix | str | None, generator: str) -> dict[str, float]:
    """The noisy-level shares per axis ``generator``'s runs are drawn with under ``mix``."""
    chosen = parse_benign_mix(mix)
    return chosen.shares(PERSONA_SHARES[generator])


def retry_share(share: float, sign: float) -> float:
    """A slip's probability ``share`` moved by a retry level of direction ``sign``
    (``-1`` patient, ``+1`` retry-happy, ``0``: unmoved)."""
    if sign == 0.0:
        return share
    return share + sign * RETRY_SHIFT * min(share, 1.0 - share)


def _coupled(natural_noisy: bool, q: float, target: float, u: float) -> bool:
    """Whether a run is at the noisy level: its natural level (noisy with probability
    ``q``) kept with the largest probability that gives ``target`` overall (a maximal
    coupling); ``u`` is a uniform draw of the run's habit stream."""
    if natural_noisy:
        return target >= q or u < target / q
    return target > q and u >= (1.0 - target) / (1.0 - q)


@dataclass
class Habits:
    """One run's profile, drawn level by level as the generator reaches each draw."""

    shares: dict[str, float]
    rng: random.Random
    mix: str
    levels: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # The retry level has no older draw to follow: drawn first, from the run's own stream.
        noisy = self.rng.random() < self.shares["retry"]
        self.levels["retry"] = AXES["retry"][noisy]
        self.values["retry_shift"] = RETRY_SIGN[self.levels["retry"]] * RETRY_SHIFT

    @property
    def retry_sign(self) -> float:
        return RETRY_SIGN[self.levels["retry"]]

    def wander_index(self, i: int) -> int:
        """The run's :data:`WANDER` entry, given the one its episode drew (``i``)."""
        u, pick = self.rng.random(), self.rng.random()  # always two draws
        natural = i >= CLEAN_WANDER
        noisy = _coupled(natural, NATURAL["recon"], self.shares["recon"], u)
        self.levels["recon"] = AXES["recon"][noisy]
        if noisy != natural:  # redrawn within the new level, uniformly as before
            lo, hi = (CLEAN_WANDER, len(WANDER)) if noisy else (0, CLEAN_WANDER)
            i = lo + min(int(pick * (hi - lo)), hi - lo - 1)
        self.values["wander"] = WANDER[i]
        return i

    def probe_draw(self, u: float) -> float:
        """The run's listener-check draw, given the one its episode drew (``u``)."""
        c, v = self.rng.random(), self.rng.random()  # always two draws
        natural = u < PROBE_SHARE
        noisy = _coupled(natural, NATURAL["infra"], self.shares["infra"], c)
        self.levels["infra"] = AXES["infra"][noisy]
        if noisy != natural:  # redrawn within the new level, uniformly as before
            u = v * PROBE_SHARE if noisy else PROBE_SHARE + v * (1.0 - PROBE_SHARE)
        return u

    def record(self) -> dict[str, Any]:
        """The run's ``meta["habits"]``."""
        return run_record(self.levels, self.shares, self.mix, **self.values)


@dataclass(frozen=True)
class HabitPlan:
    """What one run's profile is drawn with: the mix's shares for its persona and the
    run's own habit stream (seeded apart from every other draw of the run)."""

    shares: Mapping[str, float]
    rng: random.Random
    mix: str

    def start(self) -> Habits:
        return Habits(dict(self.shares), self.rng, self.mix)


def slips(a: Agent, share: float) -> bool:
    """Whether the run makes a benign slip a task draws with ``share`` (one draw of the
    run's stream, as ``a.rng.random() < share`` did), moved by the run's retry habit
    (unmoved for a run without a profile)."""
    habits = getattr(a, "habits", None)
    return a.rng.random() < retry_share(share, 0.0 if habits is None else habits.retry_sign)
