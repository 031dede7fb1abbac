"""A live corpus of two tasks, played for real against the checkout's apps."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys

import pytest
import yaml
from live_support import checkout, needs_live
from openai_stub_server import StubJudgeServer, rule_verdict

from monsearch.corpora.store import load_corpus
from monsearch.live.fidelity import read_records, summarise
from monsearch.live.generate import generate_live
from monsearch.oracle.judge import LLMJudgeConfig
from monsearch.oracle.prompt import build_judge_prompt
from monsearch.oracle.rubrics import load_rubric
from monsearch.oracle.session import OracleConfig

pytestmark = needs_live
TASKS = ["staff-directory", "proxy-backoff"]
#: What the stub judge calls a failure: a rate-limit answer in the transcript.
KEYWORDS = ("429",)


@pytest.fixture(scope="module")
def judge(tmp_path_factory):
    """A real HTTP judge (the stub's keyword rule) whose second call fails with a 400."""
    with StubJudgeServer(keywords=KEYWORDS) as stub:
        stub.script("ok", "status:400")
        llm = LLMJudgeConfig(model="stub-judge", base_url=stub.base_url, api_key="sk-test")
        config = OracleConfig(
            backend="llm", llm=llm, cache_dir=tmp_path_factory.mktemp("oracle-cache"),
            rubric_dir=checkout() / "tasks",
        )  # fmt: skip
        yield stub, config


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, judge):
    out = tmp_path_factory.mktemp("live") / "corpus"
    result = generate_live(checkout(), out, size=28, seed=3, workers=2, tasks=TASKS, oracle=judge[1])
    return out, result


def test_every_run_is_one_of_the_tasks_and_carries_its_live_record(corpus):
    out, result = corpus
    c = load_corpus(out, None)
    trajs = c.trajectories()
    assert len(trajs) == result.report["kept"] >= 20
    assert {t.task for t in trajs} == set(TASKS)
    for t in trajs:
        assert t.id.startswith("live-") and t.meta["source_format"] == "live"
        assert t.meta["live"]["label_holds"] and t.label is not None


def test_every_solved_run_wrote_the_apps_real_flag(corpus):
    out, _ = corpus
    c = load_corpus(out, None)
    solved = [t for t in c.trajectories() if t.solved]
    assert solved
    for t in solved:
        want = yaml.safe_load((checkout() / "tasks" / t.task / "task.yaml").read_text())
        flags = {f for s in t.steps for f in re.findall(r"FLAG\{[^}\s\"']*\}", s.observation)}
        assert len(flags) == 1, flags
        flag = flags.pop()
        assert hashlib.sha256(flag.encode()).hexdigest() == want["verification"]["hash"]
        # the app showed it before the run wrote it
        first = next(s.index for s in t.steps if flag in s.observation)
        wrote = next(s.index for s in t.steps if "/tmp/result.txt" in s.text and flag in s.text)
        assert first < wrote


def test_the_simulator_agrees_with_the_real_apps_on_status_codes(corpus):
    out, result = corpus
    summary = summarise(read_records(out))
    assert summary == result.report["fidelity"]
    for task in TASKS:
        assert summary["tasks"][task]["share"] >= 0.95, summary["tasks"][task]


def test_a_configured_judge_gives_the_oracle_verdicts_and_a_failed_call_is_counted(corpus, judge):
    out, result = corpus
    stub, _ = judge
    trajs = load_corpus(out, None).trajectories()
    judged = [t for t in trajs if t.meta["oracle_source"] == "judge"]
    kept_simulated = [t for t in trajs if t.meta["oracle_source"] == "simulated"]
    rep = result.report["oracle"]
    assert (rep["judged"], rep["failed"]) == (len(judged), len(kept_simulated)) == (len(trajs) - 1, 1)
    assert "400" in rep["first_error"] and rep["cost"]["fresh_calls"] == len(trajs)
    prompts = [r.body["messages"][0]["content"] for r in stub.chat_requests]
    for t in judged:
        (v,) = t.oracle
        assert v.judge == "stub-judge" and v.role == "oracle"
        # the judge saw this run's own transcript under the checkout's rubric for its task
        prompt = build_judge_prompt(t, load_rubric(t.task, checkout() / "tasks").text)
        assert prompt in prompts
        want = rule_verdict(prompt, KEYWORDS)
        assert (v.is_failure, v.stealth_score) == (want["is_failure"], want["stealth_score"])
    assert any(rule_verdict(p, KEYWORDS)["is_failure"] for p in prompts)
    assert any(not rule_verdict(p, KEYWORDS)["is_failure"] for p in prompts)
    info = load_corpus(out, None).manifest.split_info["generator"]["oracle"]
    assert info == {"judge": "stub-judge", "judged": len(judged), "failed": 1}
    # the same runs judged again come from the cache: no new call
    from monsearch.live.judged import judge_runs

    before = stub.chat_count
    again, summary = judge_runs(judged, judge[1])
    assert stub.chat_count == before and summary["cost"]["cached_calls"] == len(judged)
    assert [t.oracle for t in again] == [t.oracle for t in judged]


def test_the_cli_plays_and_refuses_a_folder_that_is_no_checkout(tmp_path):
    out = tmp_path / "c"
    cmd = [sys.executable, "-m", "monsearch", "corpus", "live", "--apps", str(checkout()),
           "--size", "14", "--tasks", TASKS[0], "--out", str(out), "--no-configure", "--json"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["counts"]
    bad = subprocess.run(
        [sys.executable, "-m", "monsearch", "corpus", "live", "--apps", str(tmp_path), "--out", str(tmp_path / "x")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "StealthBench checkout" in bad.stderr


def test_an_unreachable_judge_is_refused_before_any_run_is_played(tmp_path):
    out = tmp_path / "c"
    cmd = [sys.executable, "-m", "monsearch", "corpus", "live", "--apps", str(checkout()),
           "--tasks", TASKS[0], "--size", "14", "--out", str(out), "--no-configure",
           "--judge-model", "m", "--judge-base-url", "http://127.0.0.1:9/v1",
           "--oracle-cache", str(tmp_path / "cache")]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "127.0.0.1:9" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_the_cli_says_whose_oracle_verdicts_the_corpus_holds(tmp_path):
    with StubJudgeServer(keywords=KEYWORDS, api_key="sk-test") as stub:
        cmd = [sys.executable, "-m", "monsearch", "corpus", "live", "--apps", str(checkout()),
               "--tasks", TASKS[0], "--size", "14", "--out", str(tmp_path / "c"), "--no-configure",
               "--quiet", "--judge-model", "stub-judge", "--judge-base-url", stub.base_url,
               "--oracle-cache", str(tmp_path / "cache")]  # fmt: skip
        env = {**os.environ, "MONSEARCH_JUDGE_API_KEY": "sk-test"}
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
        calls = stub.chat_count
    assert done.returncode == 0, done.stderr
    n = len(load_corpus(tmp_path / "c", None).trajectories())
    assert calls == n
    line = next(x for x in done.stdout.splitlines() if x.startswith("oracle verdicts by"))
    assert line.startswith(f"oracle verdicts by stub-judge: {n} runs ({n} judge calls, 0 from the cache)")
    assert "agrees with the panel on" in line
