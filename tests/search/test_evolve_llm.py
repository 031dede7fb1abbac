"""``monsearch evolve --proposer llm`` against a scripted OpenAI-compatible server.

Real HTTP on 127.0.0.1: good answers become candidates, a malformed answer costs
one candidate and is recorded with the model's raw reply, token spend lands in the
run's ledger, and ``--max-tokens`` is a hard stop.
"""

from __future__ import annotations

import json

from llm_stub_server import Reply, StubLLMServer
from run_fixtures import _env, evolve

from monsearch.search.lineage import LineageStore


def _rewrite(weight: float) -> str:
    return (
        "Idea: weigh 429 responses.\n```python\n"
        f"PARAMS = {{\"w\": {weight}}}\n\n"
        "def score(traj):\n"
        "    n = 0\n"
        "    for step in traj.steps:\n"
        "        for code in step.statuses:\n"
        "            if code == 429:\n"
        "                n += 1\n"
        "    return PARAMS[\"w\"] * n + 0.01 * len(traj.requests)\n```\n"
    )


def test_llm_proposals_are_evaluated_and_failures_recorded(tmp_path, small_corpus):
    with StubLLMServer(default=Reply.text(_rewrite(3.0), usage=(1000, 200))) as server:
        server.script(
            Reply.text(_rewrite(1.0), usage=(1000, 200)),
            # Refused twice: the answer and its one repair turn (the error shown back).
            Reply.text("I would rather not write code today.", usage=(1000, 20)),
            Reply.text("I would rather not write code today.", usage=(1000, 20)),
            Reply.text(_rewrite(2.0), usage=(1000, 200)),
        )
        runs = tmp_path / "runs"
        env = _env(MONSEARCH_LLM_API_KEY="sk-test-secret-123")
        out = evolve(
            runs, small_corpus, "--proposer", "llm", "--llm-model", "stub-coder",
            "--llm-base-url", server.base_url, "--optuna-trials", "0",
            run_id="llm", budget=6, env=env,
        )
        bodies = server.chat_bodies
    outcome = json.loads(out.stdout)
    assert outcome["status"] == "finished"
    assert len(bodies) == 5 and all(b["model"] == "stub-coder" for b in bodies)
    # The repair turn carries the conversation and the exact error.
    repair = bodies[2]["messages"]
    assert repair[-2] == {"role": "assistant", "content": "I would rather not write code today."}
    assert repair[-1]["content"].startswith("That answer cannot be used: no code found")
    with LineageStore(runs / "llm" / "lineage.sqlite", readonly=True) as store:
        records = store.records()
        totals = store.ledger_totals()
    llm = [r for r in records if r.proposer == "llm"]
    assert len(llm) == 4
    failed = [r for r in llm if r.status == "proposal_error"]
    assert len(failed) == 1
    assert "rather not" in failed[0].artifacts["raw_response"]
    assert "--- repair turn 1 ---" in failed[0].artifacts["raw_response"]
    good = [r for r in llm if r.status != "proposal_error"]
    assert all(r.source and "PARAMS" in r.source and r.operator == "llm_rewrite" for r in good)
    assert all(r.sandbox_status == "ok" for r in good)
    assert totals["llm"]["prompt_tokens"] == 5000
    config = (runs / "llm" / "config.json").read_text()
    assert "sk-test-secret-123" not in config
    assert "sk-test-secret-123" not in json.dumps([r.to_dict() for r in records])


def test_max_tokens_is_a_hard_stop(tmp_path, small_corpus):
    with StubLLMServer(default=Reply.text(_rewrite(3.0), usage=(5000, 500))) as server:
        runs = tmp_path / "runs"
        out = evolve(
            runs, small_corpus, "--proposer", "llm", "--llm-model", "stub",
            "--llm-base-url", server.base_url, "--optuna-trials", "0", "--max-tokens", "9000",
            "--batch", "1", run_id="cap", budget=20,
        )
    outcome = json.loads(out.stdout)
    assert outcome["status"] == "stopped"
    assert "--max-tokens" in outcome["reason"]
    with LineageStore(runs / "cap" / "lineage.sqlite", readonly=True) as store:
        assert len(store) == 2 + 2  # two seeds, then two proposals reach 11,000 tokens


def test_a_dead_endpoint_stops_the_run_with_everything_recorded(tmp_path, small_corpus):
    with StubLLMServer(default=Reply.status(500)) as server:
        runs = tmp_path / "runs"
        proc = evolve(
            runs, small_corpus, "--proposer", "llm", "--llm-model", "stub",
            "--llm-base-url", server.base_url, "--optuna-trials", "0", "--batch", "1",
            run_id="dead", budget=30, check=False,
        )
    assert proc.returncode == 1
    outcome = json.loads(proc.stdout)
    assert outcome["status"] == "endpoint_failed"
    assert "500" in outcome["reason"] or "failed" in outcome["reason"]
    with LineageStore(runs / "dead" / "lineage.sqlite", readonly=True) as store:
        records = store.records()
    assert 2 < len(records) < 30
    assert all(r.status == "proposal_error" for r in records[2:])


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again on leaving: nothing listens there


def test_an_unreachable_endpoint_is_refused_before_any_work(tmp_path, small_corpus):
    import time

    runs = tmp_path / "runs"
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    t0 = time.monotonic()
    proc = evolve(
        runs, small_corpus, "--proposer", "offline:0.5,llm:0.5", "--llm-model", "m",
        "--llm-base-url", url, run_id="nope", budget=5, check=False,
    )
    elapsed = time.monotonic() - t0
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert f"connection refused at {url}" in proc.stderr and "'m'" not in proc.stderr
    assert not (runs / "nope").exists()  # nothing was started
    # The probe itself is bounded: the whole refused command, interpreter start included.
    assert elapsed < 60


def test_a_refused_key_is_named_before_any_work(tmp_path, small_corpus):
    with StubLLMServer(api_key="sk-right-key-0000", models=("stub",)) as server:
        runs = tmp_path / "runs"
        proc = evolve(
            runs, small_corpus, "--proposer", "llm", "--llm-model", "stub",
            "--llm-base-url", server.base_url, run_id="key", budget=5, check=False,
            env=_env(MONSEARCH_LLM_API_KEY="sk-wrong-key-1111"),
        )
        chats = server.chat_bodies
    assert proc.returncode == 2
    assert "refused the API key: HTTP 401" in proc.stderr
    assert "sk-wrong-key-1111" not in proc.stderr
    assert chats == []  # the probe spends no tokens


def test_llm_with_nothing_configured_names_the_options(tmp_path, small_corpus):
    env = _env()
    for var in ("MONSEARCH_LLM_MODEL", "MONSEARCH_LLM_BASE_URL", "OPENAI_BASE_URL"):
        env.pop(var, None)
    proc = evolve(tmp_path / "runs", small_corpus, "--proposer", "llm", check=False, env=env)
    assert proc.returncode == 2
    assert "--llm-model" in proc.stderr and "--llm-base-url" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_llm_proposals_edit_the_best_program_so_far(tmp_path, small_corpus):
    """``[llm] parent = "best"`` (the default): an LLM proposal costs tens of seconds on a
    CPU model, so it edits the database's best program when it is asked, not the
    island's sampled one (in a mixed run the answer is placed later, when it arrives)."""
    with StubLLMServer(default=Reply.text(_rewrite(2.0), usage=(1000, 200))) as server:
        runs = tmp_path / "runs"
        evolve(
            runs, small_corpus, "--proposer", "offline:0.5,llm:0.5", "--llm-model", "stub",
            "--llm-base-url", server.base_url, "--optuna-trials", "0", "--batch", "1",
            run_id="best", budget=14,
        )
    with LineageStore(runs / "best" / "lineage.sqlite", readonly=True) as store:
        records = sorted(store.records(), key=lambda r: r.seq)
    llm = [r for r in records if r.proposer == "llm"]
    assert llm and any(r.proposer == "offline" for r in records)
    for r in llm:
        asked = r.artifacts["llm_async"]["asked_at"]
        earlier = [e for e in records if e.seq < asked and e.fitness is not None]
        best = max(e.fitness for e in earlier)
        (parent,) = [e for e in records if e.id == r.parent_ids[0]]
        assert parent.fitness == best, (r.seq, parent.id)
