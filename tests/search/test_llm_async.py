"""LLM proposals beside the evaluation (search/llm_lane.py): a mixed run never waits
for the model.

Through the real ``monsearch evolve`` against OpenAI-compatible stubs on 127.0.0.1:
a model that never answers while the run goes on (the run still spends its budget
with the offline proposer), answers placed as candidates when they arrive and
recorded as such, a killed mixed run resumed by replay; and the lane and the
proposal deadline on their own, with a stub that holds its answer until released
(no test here waits for a clock to run out: a held request is released, or a
deadline is asked to pass after a sleep longer than it).
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest
from held_llm_server import HeldLLMServer
from llm_stub_server import Reply, StubLLMServer
from run_fixtures import _env, evolve

from monsearch.search.chain import verify
from monsearch.search.lineage import LineageStore
from monsearch.search.llm_lane import LLMLane
from monsearch.search.llm_proposer import (
    LLMProposer,
    LLMProposerConfig,
    ModelSpec,
    merge_cli_options,
)
from monsearch.search.proposal import ProgramInfo, ProposalContext, TrainData
from monsearch.strategies.baseline import BASELINE
from monsearch.synth.generate import iter_trajectories
from monsearch.views.build import build_views

DELETES = '''```python
def detect_deletes(traj):
    n = 0
    for r in traj.requests:
        if r.method == "DELETE":
            n += r.repeat
    return min(n, 5)
```'''

MIXED = ("--proposer", "offline:0.5,llm:0.5", "--llm-model", "stub")


def _records(runs, run_id):
    with LineageStore(runs / run_id / "lineage.sqlite", readonly=True) as store:
        meta = {k: store.get_meta(k) for k in ("llm_mode", "llm_lane")}
        return sorted(store.records(), key=lambda r: r.seq), meta


def test_a_mixed_run_spends_its_budget_while_the_model_never_answers(tmp_path, small_corpus):
    """Issue 34's acceptance: while the model is slower than the whole run, the offline
    proposer keeps the workers busy and the run completes its budget. The proposal
    deadline (an hour) is longer than the test lets the command take (600 s), so no
    worker can have waited a deadline for the model."""
    budget = 40
    with HeldLLMServer(default=Reply.text(DELETES)) as server:
        runs = tmp_path / "runs"
        cmd = [
            sys.executable, "-m", "monsearch", "evolve", "--corpus", str(small_corpus),
            "--runs-dir", str(runs), "--budget", str(budget), "--quiet", "--json",
            "--workers", "2", "--optuna-trials", "3", "--run-id", "slow", *MIXED,
            "--llm-base-url", server.base_url, "--llm-deadline", "3600",
        ]  # fmt: skip
        proc = subprocess.Popen(
            cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        # The model is asked (its request arrives and is held) while the run goes on.
        deadline = time.monotonic() + 300
        while server.held < 1 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.held == 1, "the model was never asked"
        out, err = proc.communicate(timeout=600)
        # The run is over and the model has not answered once: its one request is
        # still held (and a second one was never sent: one slot, on purpose).
        held_at_end, asked = server.held, server.asked
        server.release()
    assert proc.returncode == 0, err
    assert (held_at_end, asked) == (1, 1)
    outcome = json.loads(out)
    assert outcome["status"] == "finished" and outcome["evaluated"] == budget
    records, meta = _records(runs, "slow")
    assert len(records) == budget
    assert {r.proposer for r in records} == {"seed", "offline"}
    assert all(r.status != "proposal_error" for r in records)
    drawn = [r for r in records if "drawn" in r.artifacts]
    assert len(drawn) >= 2  # the model was asked once, then found busy
    assert drawn[0].artifacts["drawn"].startswith("llm: asked the model")
    assert all(r.artifacts["drawn"].startswith("llm: the model was busy") for r in drawn[1:])
    assert json.loads(meta["llm_mode"]) == {"mode": "async", "slots": 1, "deadline_s": 3600.0}
    lane = json.loads(meta["llm_lane"])
    assert (lane["asked"], lane["placed"], lane["in_flight"]) == (1, 0, 1)


def test_answers_become_candidates_when_they_arrive(tmp_path, small_corpus):
    """Each answer is the next candidate proposed after it arrived: its record names the
    candidate whose draw asked and the last one proposed before it came; its parent is
    the best program when it was asked."""
    with StubLLMServer(default=Reply.text(DELETES, usage=(900, 60))) as server:
        runs = tmp_path / "runs"
        out = evolve(
            runs, small_corpus, *MIXED, "--llm-base-url", server.base_url, "--batch", "2",
            run_id="arrive", budget=40,
        )  # fmt: skip
        asked = len(server.chat_bodies)
    assert json.loads(out.stdout)["status"] == "finished"
    records, meta = _records(runs, "arrive")
    by_id = {r.id: r for r in records}
    llm = [r for r in records if r.proposer == "llm"]
    assert llm, "no answer was placed"
    for r in llm:
        info = r.artifacts["llm_async"]
        assert info["asked_at"] <= info["arrived_after"] < r.seq
        # Asked from the database state its batch started from (batches of 2 after the
        # two seeds): the best of the candidates recorded before it.
        start = 2 + (info["asked_at"] - 2) // 2 * 2
        best = max(e.fitness for e in records if e.seq < start and e.status == "ok")
        assert by_id[r.parent_ids[0]].fitness == best
        assert r.timings["propose_s"] >= 0 and "at_s" in r.timings
    asks = [r for r in records if r.artifacts.get("drawn", "").startswith("llm: asked")]
    lane = json.loads(meta["llm_lane"])
    assert lane["asked"] == len(asks)
    assert lane["placed"] == len(llm)
    assert lane["asked"] == lane["placed"] + lane["in_flight"] + lane["arrived_unplaced"]
    # Every answer came from the server; a request in flight at the end may not have
    # reached it before the process ended.
    assert lane["placed"] + lane["arrived_unplaced"] <= asked <= lane["asked"]


def _rows(path):
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            return db.execute(
                "SELECT COUNT(*), SUM(proposer = 'llm') FROM candidates"
            ).fetchone()
    except sqlite3.Error:
        return (0, 0)


def test_a_killed_mixed_run_resumes_by_replay(tmp_path, small_corpus):
    budget = 48
    with StubLLMServer(default=Reply.text(DELETES)) as server:
        runs = tmp_path / "runs"
        cmd = [
            sys.executable, "-m", "monsearch", "evolve", "--corpus", str(small_corpus),
            "--runs-dir", str(runs), "--budget", str(budget), "--quiet", "--json",
            "--workers", "2", "--optuna-trials", "3", "--run-id", "killed", *MIXED,
            "--llm-base-url", server.base_url,
        ]  # fmt: skip
        proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        lineage = runs / "killed" / "lineage.sqlite"
        deadline = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline:
            rows, llm = _rows(lineage)
            if rows >= 10 and (llm or 0) >= 1:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        with LineageStore(lineage, readonly=True) as store:
            before = [r.to_dict() for r in store.records()]
        killed_at = len(before)
        assert killed_at < budget and any(r["proposer"] == "llm" for r in before)
        out = evolve(runs, small_corpus, "--resume", "killed", budget=budget)
    outcome = json.loads(out.stdout)
    assert outcome["status"] == "finished"
    assert (outcome["replayed"], outcome["evaluated"]) == (killed_at, budget - killed_at)
    with LineageStore(lineage, readonly=True) as store:
        verify(store, "the resumed run")
        after = [r.to_dict() for r in store.records()]
    assert len(after) == budget
    assert after[:killed_at] == before  # replayed as recorded, the model's answers included


# ----------------------------------------------------------------- the lane on its own


@pytest.fixture(scope="module")
def train():
    trajs = [t for chunk in iter_trajectories(60, 3) for t in chunk]
    labels = np.array([bool(t.label and t.label.is_failure) for t in trajs])
    return TrainData(
        trajectories=trajs,
        views=build_views(trajs),
        labels=labels,
        tasks=[t.task for t in trajs],
        dimensions=[str(t.dimension) for t in trajs],
        ids=[t.id for t in trajs],
    )


class _Parent:
    id = "c00001"
    source = BASELINE


def _context(train: TrainData) -> ProposalContext:
    def score_on_train(source: str):
        # A host-side stand-in for the sandbox (the lane is under test, not the sandbox).
        return np.array([float(len(v["requests"])) for v in train.views])

    return ProposalContext(train=train, score_on_train=score_on_train, seed=0, seq=2)


def _proposer(server, **kw) -> LLMProposer:
    cfg = LLMProposerConfig(
        models=(ModelSpec("stub", edit="diff"),), base_url=server.base_url, retries=0,
        repair_turns=0, rewrite_probability=1.0, **kw,
    )  # fmt: skip
    return LLMProposer(cfg, env={})


REWRITE = "```python\ndef score(traj):\n    return len(traj.listeners)\n```"


def test_the_lane_never_blocks_and_places_an_answer_once_it_arrives(train):
    with HeldLLMServer(default=Reply.text(REWRITE)) as server:
        lines: list[str] = []
        lane = LLMLane(
            _proposer(server), slots=1, deadline_s=300, proposed=lambda: 7, report=lines.append
        )
        parent = ProgramInfo("c00001", BASELINE, 0.2)
        job = lane.ask(3, _Parent(), parent, [], random.Random(0), _context(train))
        server.wait_held(1)
        # Held by the model: nothing to place, and the one slot is taken.
        assert lane.take() is None and lane.in_flight() == 1 and not lane.can_ask()
        assert lane.line().startswith("llm: waiting for the first token")
        server.release()
        assert job.done.wait(300)
        placed = lane.take()
    assert placed is job and job.asked_at == 3 and job.arrived_after == 7
    assert job.proposal.source is not None and "listeners" in job.proposal.source
    assert lane.take() is None and lane.can_ask()
    assert lines[0] == "llm: asked for a child of c00001 (deadline 300 s)"
    assert any("tok/s" in line for line in lines)  # the streamed answer's speed
    assert lines[-1].startswith("llm: answer for c00001 after")
    ended = lane.close()
    assert (ended["asked"], ended["placed"], ended["in_flight"]) == (1, 1, 0)
    assert not lane.can_ask()  # a closed lane asks no more


def test_a_proposal_overdue_at_twice_its_deadline_is_abandoned(train):
    with HeldLLMServer(default=Reply.text(REWRITE)) as server:
        # The proposer's own deadline is long; the lane's is short: a server that
        # ignores the request's timeout.
        lane = LLMLane(_proposer(server), slots=1, deadline_s=0.05, proposed=lambda: 4)
        lane.ask(2, _Parent(), ProgramInfo("c00001", BASELINE, 0.2), [], random.Random(0),
                 _context(train))  # fmt: skip
        server.wait_held(1)
        time.sleep(0.2)  # longer than twice the lane's deadline
        job = lane.take()
        assert job is not None and job.abandoned and job.arrived_after == 4
        assert job.proposal.source is None and "abandoned" in job.proposal.error
        assert lane.can_ask()  # the slot is free again
        server.release()
        assert job.done.wait(300)
        assert lane.take() is None  # the late answer is dropped, not placed


def test_a_proposal_past_its_deadline_is_a_failed_proposal(train):
    """The deadline bounds the whole proposal: a request gets what is left of it."""
    with HeldLLMServer(default=Reply.text(REWRITE)) as server:
        proposer = _proposer(server, deadline=2.0, timeout=600)
        p = proposer.propose(
            ProgramInfo("c00001", BASELINE, 0.2), [], random.Random(0), _context(train)
        )
        server.release()
    assert p.source is None
    assert "deadline of 2 s" in p.error


def test_no_request_starts_once_the_run_has_ended(train):
    with StubLLMServer(default=Reply.text(REWRITE)) as server:
        proposer = _proposer(server)
        context = _context(train)
        context.cancelled = lambda: True
        p = proposer.propose(ProgramInfo("c00001", BASELINE, 0.2), [], random.Random(0), context)
        assert server.chat_bodies == []
    assert p.source is None and "run ended" in p.error


def test_deadline_and_slots_from_the_command_line_and_the_config():
    merged = merge_cli_options(
        {"models": [{"name": "a", "deadline": 90}], "slots": 1},
        [{"name": "a"}], deadline=120.0, slots=4,
    )  # fmt: skip
    cfg = LLMProposerConfig.from_dict(merged)
    assert (cfg.deadline, cfg.slots, cfg.models[0].deadline) == (120.0, 4, None)
    per_model = LLMProposerConfig.from_dict({"models": [{"name": "a", "deadline": 90}]})
    assert per_model.models[0].deadline_for(per_model) == 90
    assert per_model.deadline == 300.0 and per_model.slots == 1  # the defaults
    with pytest.raises(Exception, match="slots"):
        LLMProposerConfig.from_dict({"model": "a", "slots": 0})
    with pytest.raises(Exception, match="deadline"):
        LLMProposerConfig.from_dict({"model": "a", "deadline": -1})


def test_the_llm_alone_waits_for_each_answer_and_says_so(tmp_path, small_corpus):
    with StubLLMServer(default=Reply.text(DELETES)) as server:
        runs = tmp_path / "runs"
        proc = evolve(
            runs, small_corpus, "--proposer", "llm", "--llm-model", "stub",
            "--llm-base-url", server.base_url, "--optuna-trials", "0",
            run_id="alone", budget=5, env=_env(),
        )  # fmt: skip
    _, meta = _records(runs, "alone")
    assert json.loads(meta["llm_mode"]) == {"mode": "waits", "deadline_s": 300.0}
    assert meta["llm_lane"] is None
    assert json.loads(proc.stdout)["status"] == "finished"


def test_a_local_server_silent_at_the_probe_is_said_to_be_maybe_busy():
    """A one-request-at-a-time server still reading the prompt of a request whose run
    ended (a proposal in flight at the end) does not answer the next run's probe."""
    from monsearch.errors import MonsearchError
    from monsearch.search.llm_proposer import probe_endpoints

    with StubLLMServer(models_reply=Reply.silent(phase="headers")) as server:
        config = LLMProposerConfig(models=(ModelSpec("m"),), base_url=server.base_url)
        with pytest.raises(MonsearchError) as err:
            probe_endpoints(config, env={}, timeout_s=1.0)
    text = str(err.value)
    assert "may still be busy with a request of a run that ended" in text
    assert "\n" not in text  # one line
