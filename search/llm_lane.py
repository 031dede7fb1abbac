"""LLM proposals beside the evaluation: a mixed run never waits for the model.

In a run that mixes the LLM proposer with an offline one, a candidate whose draw
names the LLM asks the model in a thread of its own (when a slot is free) and the
offline proposer makes that candidate instead, so the workers stay busy however
slow the model is. The model's answer becomes the next candidate proposed after it
arrives: its place in the lineage follows when it arrived, in evaluation order,
and its record says so (``artifacts["llm_async"]``: ``asked_at``, the candidate
whose draw asked; ``arrived_after``, the last candidate proposed when the answer
came; the record's own number is where it was placed).

``slots`` proposals are in flight at once (one by default: a llama.cpp server answers
one request at a time). A proposal has a wall-clock deadline, enforced by the
proposer on its requests; one still running at twice its deadline (a server that
ignores the timeouts) is abandoned here and recorded as a failed proposal, so a
stalled server never holds a slot for good. Proposals in flight when the run ends
are abandoned; what they had spent is counted by :meth:`LLMLane.close`.

With the LLM in the mix, which candidate an answer becomes depends on when it
arrives, so such a run is not reproducible bit for bit; a killed one still resumes
(its lineage is replayed as recorded). Runs with the offline proposer alone never
start a lane and stay reproducible.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .proposal import ProgramInfo, Proposal, ProposalContext

__all__ = ["LLMJob", "LLMLane"]


@dataclass
class LLMJob:
    """One LLM proposal in flight (or arrived and not yet placed)."""

    #: The sequence number whose draw asked the model.
    asked_at: int
    #: The parent's record (what the child is compared with and descends from).
    parent: Any
    started: float = field(default_factory=time.monotonic)
    proposal: Proposal | None = None
    #: The last candidate proposed when the answer came (or the job was abandoned).
    arrived_after: int | None = None
    seconds: float = 0.0
    abandoned: bool = False
    #: The last streamed progress line of its request.
    status: str = ""
    done: threading.Event = field(default_factory=threading.Event)


class LLMLane:
    """Runs LLM proposals in daemon threads, ``slots`` at a time (see the module doc).

    ``proposed()`` is the last candidate proposed (read when an answer arrives);
    ``report(text)`` receives one-line progress (a proposal asked, its
    tokens per second, its arrival).
    """

    def __init__(
        self,
        proposer: Any,
        *,
        slots: int,
        deadline_s: float,
        proposed: Callable[[], int],
        report: Callable[[str], None] | None = None,
    ) -> None:
        self.proposer = proposer
        self.slots = max(1, int(slots))
        self.deadline_s = float(deadline_s)
        self._proposed = proposed
        self._report = report
        self._lock = threading.Lock()
        self._flight: list[LLMJob] = []
        self._arrived: list[LLMJob] = []
        self._by_thread: dict[int, LLMJob] = {}
        self._closed = threading.Event()
        self.asked = 0
        self.placed = 0
        proposer.on_progress = self._tokens

    # -- the loop's side

    def can_ask(self) -> bool:
        """A slot is free, the run goes on and the endpoint is not given up on."""
        with self._lock:
            free = len(self._flight) < self.slots
        return free and not self._closed.is_set() and not getattr(
            self.proposer, "endpoint_dead", False
        )

    def ask(
        self,
        seq: int,
        parent: Any,
        parent_info: ProgramInfo,
        inspirations: Sequence[ProgramInfo],
        rng: random.Random,
        context: ProposalContext,
    ) -> LLMJob:
        """Start one proposal for a child of ``parent`` (the draw of candidate ``seq``)."""
        job = LLMJob(seq, parent)
        context.cancelled = self._closed.is_set
        thread = threading.Thread(
            target=self._run,
            args=(job, parent_info, list(inspirations), rng, context),
            name=f"llm-proposal-{seq}",
            daemon=True,  # a request the run no longer wants never holds the process
        )
        with self._lock:
            self._flight.append(job)
            self.asked += 1
        self._say(f"llm: asked for a child of {parent_info.id} (deadline {self.deadline_s:g} s)")
        thread.start()
        return job

    def take(self) -> LLMJob | None:
        """The earliest answer not yet placed, else a proposal overdue (abandoned as a
        failed proposal), else None."""
        with self._lock:
            if self._arrived:
                job = self._arrived.pop(0)
                self.placed += 1
                return job
            now = time.monotonic()
            for job in self._flight:
                if now - job.started > 2 * self.deadline_s:
                    self._flight.remove(job)
                    job.abandoned = True
                    job.seconds = now - job.started
                    job.arrived_after = self._proposed()
                    job.proposal = Proposal(
                        None,
                        "llm",
                        (job.parent.id,),
                        error=f"no answer at twice the proposal's deadline of "
                        f"{self.deadline_s:g} s: the request was abandoned",
                    )
                    self.placed += 1
                    return job
        return None

    def in_flight(self) -> int:
        with self._lock:
            return len(self._flight)

    def line(self) -> str:
        """The progress line for the proposals in flight ("" when none)."""
        with self._lock:
            flight = list(self._flight)
            waiting = len(self._arrived)
        if not flight:
            return f"llm: {waiting} answer(s) to place" if waiting else ""
        job = min(flight, key=lambda j: j.started)
        age = time.monotonic() - job.started
        more = f" (+{len(flight) - 1} more)" if len(flight) > 1 else ""
        what = job.status or f"llm: waiting for the first token, {age:.0f} s of {self.deadline_s:g}"
        return what + more

    def close(self) -> dict[str, Any]:
        """Stop asking; what is abandoned: proposals in flight, and answers that arrived
        too late to be placed (with the tokens and dollars they spent)."""
        self._closed.set()
        with self._lock:
            flight, late = list(self._flight), list(self._arrived)
            self._flight.clear()
            self._arrived.clear()
        out: dict[str, Any] = {
            "asked": self.asked,
            "placed": self.placed,
            "in_flight": len(flight),
            "arrived_unplaced": len(late),
        }
        spent = [j.proposal for j in late if j.proposal is not None]
        for key in ("prompt_tokens", "completion_tokens"):
            out[key] = sum(int(p.usage.get(key, 0)) for p in spent)
        out["usd"] = sum(p.cost_usd for p in spent)
        return out

    # -- the job's thread

    def _run(
        self,
        job: LLMJob,
        parent: ProgramInfo,
        inspirations: list[ProgramInfo],
        rng: random.Random,
        context: ProposalContext,
    ) -> None:
        with self._lock:
            self._by_thread[threading.get_ident()] = job
        try:
            proposal = self.proposer.propose(parent, inspirations, rng, context)
        except BaseException as exc:  # the proposer's contract says never; keep the slot sane
            proposal = Proposal(
                None, "llm", (parent.id,), error=f"LLM proposer crashed: {type(exc).__name__}"
            )
        seconds = time.monotonic() - job.started
        with self._lock:
            self._by_thread.pop(threading.get_ident(), None)
            if job.abandoned or job not in self._flight:
                job.done.set()
                return  # given up on (overdue, or the run ended): the answer is dropped
            self._flight.remove(job)
            job.proposal = proposal
            job.seconds = seconds
            job.arrived_after = self._proposed()
            self._arrived.append(job)
        verdict = "a child" if proposal.source is not None else "no usable child"
        self._say(
            f"llm: answer for {parent.id} after {seconds:.0f} s ({verdict}; "
            f"the next candidate takes it)"
        )
        job.done.set()

    def _tokens(self, text: str) -> None:
        with self._lock:
            job = self._by_thread.get(threading.get_ident())
            if job is not None:
                job.status = text
        self._say(text)

    def _say(self, text: str) -> None:
        if self._report is not None and not self._closed.is_set():
            # A display problem must not cost the proposal.
            with contextlib.suppress(Exception):
                self._report(text)
