"""The LLM proposer against a real OpenAI-compatible HTTP stub on 127.0.0.1.

Covers: diffs and full rewrites applied; malformed answers, children failing the
sandbox check and endpoint failures (HTTP errors, refused connections, timeouts)
returned as error proposals, quickly, with the raw answer kept; the failure
streak the loop reads; weighted model choice reproducible from the rng; usage and
spend; what the prompt contains (and what it must not); the API key sent as a
Bearer token and never kept.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import socket
import time
import tomllib

import numpy as np
import pytest
from llm_stub_server import Reply, StubLLMServer

from monsearch.sandbox.check import check_program
from monsearch.search.config import ConfigError
from monsearch.search.diffs import parse_answer
from monsearch.search.llm_proposer import LLMProposer, LLMProposerConfig, ModelSpec
from monsearch.search.prompts import build_prompt
from monsearch.search.proposal import ProgramInfo, ProposalContext, TrainData
from monsearch.synth.generate import iter_trajectories
from monsearch.views.build import build_views

KEY = "sk-test-Zq8rT3vW9xY2"

PARENT = """PARAMS = {"w_secret": 2.0, "w_write": 1.0}


def score(traj):
    s = 0.0
    for finding in traj.secrets:
        if finding.where in ("body", "file_content"):
            s += PARAMS["w_secret"]
    s += PARAMS["w_write"] * sum(1 for r in traj.requests if r.method in ("PUT", "DELETE"))
    return s
"""

DIFF = """Idea: weigh destructive writes more.
<<<<<<< SEARCH
PARAMS = {"w_secret": 2.0, "w_write": 1.0}
=======
PARAMS = {"w_secret": 2.0, "w_write": 1.75}
>>>>>>> REPLACE
"""

REWRITE = """Idea: count listeners too.

```python
PARAMS = {"w_secret": 2.0, "w_listener": 3.0}


def score(traj):
    s = PARAMS["w_listener"] * len(traj.listeners)
    for finding in traj.secrets:
        s += PARAMS["w_secret"]
    return s
```
"""

METRICS = {
    "fitness": 0.4321,
    "status": "ok",
    "reason": None,
    "split": "val",
    "fitness_low": None,
    "metrics": {
        "n": 400,
        "n_benign": 300,
        "n_failures": 100,
        "bauc": {
            "aggregate": 0.4321,
            "worst": 0.0123,
            "worst_dimension": "telemetry_injection",
            "by_dimension": {"credential_opsec": 0.8765, "telemetry_injection": 0.0123},
            "n_failures": {"credential_opsec": 60, "telemetry_injection": 40},
            "absent": [],
            "b_lo": 0.01,
            "b_hi": 0.1,
        },
        "bauc_pooled": 0.5,
        "chance_bauc": 0.039,
        "recall_at": {"0.01": 0.11, "0.02": 0.22, "0.05": 0.33, "0.1": 0.44},
        "auroc": 0.81,
    },
    "metrics_true": None,
    "oracle": {"calls": 0, "rho": 0.0},
}


@pytest.fixture(scope="module")
def train() -> TrainData:
    trajs = [t for chunk in iter_trajectories(48, 11) for t in chunk]
    views = build_views(trajs)
    labels = np.array([bool(t.label and t.label.is_failure) for t in trajs])
    assert labels.any() and (~labels).any()
    return TrainData(
        trajectories=trajs,
        views=views,
        labels=labels,
        tasks=[t.task for t in trajs],
        dimensions=[str(t.dimension) for t in trajs],
        ids=[t.id for t in trajs],
    )


def _context(train: TrainData, scorer=None) -> ProposalContext:
    def score_on_train(source: str):
        # A host-side stand-in for the sandbox: requests per run (cheap, deterministic).
        return np.array([float(len(v["requests"])) for v in train.views])

    return ProposalContext(train=train, score_on_train=scorer or score_on_train, seed=0, seq=1)


PARENT_INFO = ProgramInfo(
    id="p-parent", source=PARENT, fitness=0.4321, metrics=METRICS, operator="seed"
)


@pytest.fixture
def stub():
    with StubLLMServer(api_key=KEY) as server:
        yield server


def _config(stub: StubLLMServer | None, **kw) -> LLMProposerConfig:
    models = kw.pop(
        "models",
        (
            ModelSpec(
                "stub-coder",
                price_input_per_mtok=2.0,
                price_output_per_mtok=8.0,
                max_tokens=2000,
            ),
        ),
    )
    # One turn per proposal: these tests read how a single answer is handled (the
    # repair turn has its own tests in test_llm_repair.py).
    settings = {"timeout": 2.0, "retries": 0, "rewrite_probability": 0.0, "repair_turns": 0, **kw}
    if stub is not None:
        settings.setdefault("base_url", stub.base_url)
    return LLMProposerConfig(models=tuple(models), **settings)


def _proposer(stub: StubLLMServer | None, **kw) -> LLMProposer:
    return LLMProposer(_config(stub, **kw), env={"MONSEARCH_LLM_API_KEY": KEY})


def _propose(proposer: LLMProposer, train: TrainData, seed: int = 1, inspirations=()):
    return proposer.propose(PARENT_INFO, list(inspirations), random.Random(seed), _context(train))


def test_parent_passes_the_check():
    assert check_program(PARENT).ok


# --------------------------------------------------------------------------- answers


def test_diff_is_applied_with_usage_and_cost(stub, train):
    stub.script(Reply.text(DIFF, usage=(1000, 250)))
    p = _propose(_proposer(stub), train)
    assert p.error is None, p.error
    assert '"w_write": 1.75' in p.source and "def score(traj)" in p.source
    assert p.operator == "llm_diff"
    assert p.parent_ids == ("p-parent",)
    assert p.raw_response == DIFF
    assert p.model == "stub-coder"
    assert p.usage == {"prompt_tokens": 1000, "completion_tokens": 250}
    assert p.cost_usd == pytest.approx((1000 * 2.0 + 250 * 8.0) / 1e6)
    assert "weigh destructive writes more" in p.description
    assert check_program(p.source).ok


def test_full_rewrite_is_applied(stub, train):
    stub.script(Reply.text(REWRITE))
    p = _propose(_proposer(stub), train)
    assert p.error is None, p.error
    assert p.operator == "llm_rewrite"
    assert "w_listener" in p.source and "```" not in p.source
    assert p.usage["prompt_tokens"] > 0 and p.usage["completion_tokens"] > 0


def test_rewrite_mode_asks_for_a_full_program(stub, train):
    stub.script(Reply.text(REWRITE))
    p = _propose(_proposer(stub, rewrite_probability=1.0), train)
    assert p.error is None and p.operator == "llm_rewrite"
    user = stub.chat_bodies[-1]["messages"][-1]["content"]
    assert "complete new program in a single" in user


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        ("I looked at it and the monitor is fine as it is.", "malformed answer"),
        (
            '<<<<<<< SEARCH\nPARAMS = {}\n=======\nPARAMS = {"a": 1.0}\n>>>>>>> REPLACE\n',
            "none of the 1 SEARCH block(s) matched",
        ),
        (
            '<<<<<<< SEARCH\nPARAMS = {"w_secret": 2.0, "w_write": 1.0}\n=======\nx\n=======\n'
            "y\n>>>>>>> REPLACE\n",
            "malformed SEARCH/REPLACE",
        ),
        ("<<<<<<< SEARCH\nonly a start marker\n", "malformed SEARCH/REPLACE"),
        ("```python\n" + PARENT + "```", "identical to the parent"),
        ("```python\n```", "fenced program is empty"),
    ],
)
def test_unusable_answer_costs_one_candidate(stub, train, answer, fragment):
    stub.script(Reply.text(answer))
    proposer = _proposer(stub)
    p = _propose(proposer, train)
    assert p.source is None
    assert fragment in p.error
    assert p.raw_response == answer
    assert p.usage["completion_tokens"] >= 0 and p.usage["prompt_tokens"] > 0
    # An answer arrived: the endpoint is alive.
    assert proposer.consecutive_failures == 0 and not proposer.endpoint_dead
    assert proposer.stats()["bad_answers"] == 1


@pytest.mark.parametrize(
    ("program", "fragment"),
    [
        ("import os\n\ndef score(traj):\n    return 1.0\n", "import"),
        ("def helper(traj):\n    return traj.__class__\n\ndef score(traj):\n    return 0.0\n", "_"),
        ('PARAMS = {"w": 1.0}\n\ndef scorer(traj):\n    return PARAMS["w"]\n', "score"),
        ("def score(traj:\n    return 1\n", "line"),
    ],
)
def test_child_failing_the_sandbox_check_is_an_error(stub, train, program, fragment):
    answer = f"Idea: x\n```python\n{program}```\n"
    stub.script(Reply.text(answer))
    p = _propose(_proposer(stub), train)
    assert p.source is None
    assert p.error.startswith("the child fails the sandbox check")
    assert fragment in p.error
    assert p.raw_response == answer


def test_null_content_is_an_error(stub, train):
    stub.script(Reply.null())
    p = _propose(_proposer(stub), train)
    assert p.source is None and "empty answer" in p.error


def test_cut_off_answer_is_named(stub, train):
    stub.script(Reply.text("<<<<<<< SEARCH\nPARAMS = {", usage=(10, 2000)))
    p = _propose(_proposer(stub), train)
    assert p.source is None and "max_tokens" in p.error


def test_missing_usage_is_estimated(stub, train):
    stub.script(Reply.text(DIFF, usage=False))
    p = _propose(_proposer(stub), train)
    assert p.error is None
    assert p.usage["estimated"] == 1
    assert p.usage["prompt_tokens"] > 1000 and p.usage["completion_tokens"] == -(-len(DIFF) // 4)
    assert p.cost_usd > 0


# --------------------------------------------------------------------------- endpoint failures


def test_http_500_is_an_error_proposal_and_counted(stub, train):
    stub.script(Reply.status(500), Reply.status(503))
    proposer = _proposer(stub, max_consecutive_failures=2)
    t0 = time.monotonic()
    p1 = _propose(proposer, train)
    p2 = _propose(proposer, train)
    assert time.monotonic() - t0 < 5
    assert p1.source is None and "HTTP 500" in p1.error and "stub-coder" in p1.error
    assert stub.base_url in p1.error
    assert p1.raw_response is None and p1.cost_usd == 0.0
    assert "HTTP 503" in p2.error
    assert proposer.consecutive_failures == 2 and proposer.endpoint_dead
    assert len(stub.chat_bodies) == 2  # no hidden SDK retries
    # One answer (even an unusable one) ends the streak.
    stub.script(Reply.text(DIFF))
    assert _propose(proposer, train).error is None
    assert proposer.consecutive_failures == 0 and not proposer.endpoint_dead


def test_retries_are_exactly_those_configured(stub, train):
    stub.script(Reply.status(502), Reply.text(DIFF))
    proposer = _proposer(stub, retries=1, retry_delay=0.0)
    p = _propose(proposer, train)
    assert p.error is None
    assert len(stub.chat_bodies) == 2
    assert proposer.consecutive_failures == 0


def test_connection_refused_is_quick_and_marks_the_endpoint_dead(train):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proposer = _proposer(None, base_url=f"http://127.0.0.1:{port}/v1", max_consecutive_failures=3)
    t0 = time.monotonic()
    errors = [_propose(proposer, train, seed=i).error for i in range(3)]
    assert time.monotonic() - t0 < 6
    assert all(e and "connection failed" in e for e in errors)
    assert proposer.consecutive_failures == 3 and proposer.endpoint_dead
    assert proposer.stats()["endpoint_failures"] == 3
    assert proposer.last_error == errors[-1]
    proposer.reset_failures()
    assert not proposer.endpoint_dead


def test_slow_answer_times_out(stub, train):
    # The answer would come after a minute; the 0.5 s deadline ends the request long
    # before (the bound leaves any machine room for building the prompt).
    stub.script(Reply.delay(60.0, DIFF))
    proposer = _proposer(stub, timeout=0.5)
    t0 = time.monotonic()
    p = _propose(proposer, train)
    assert time.monotonic() - t0 < 30
    assert p.source is None and "timeout" in p.error
    assert proposer.consecutive_failures == 1


@pytest.mark.parametrize("reply", [Reply.garbage(), Reply.hangup()])
def test_broken_transport_is_an_error_proposal(stub, train, reply):
    stub.script(reply)
    proposer = _proposer(stub)
    p = _propose(proposer, train)
    assert p.source is None and p.error.startswith("LLM endpoint error")
    assert proposer.consecutive_failures == 1


def test_wrong_key_is_fatal_and_never_shown(stub, train):
    proposer = LLMProposer(_config(stub), env={"MONSEARCH_LLM_API_KEY": "sk-wrong-key-123456"})
    p = _propose(proposer, train)
    assert p.source is None and "refused the API key" in p.error
    assert "sk-wrong-key-123456" not in p.error
    assert proposer.endpoint_dead and proposer.consecutive_failures == 1


# --------------------------------------------------------------------------- ensembles, seeds


def test_ensemble_choice_follows_weights_and_the_rng(stub, train):
    models = (
        ModelSpec("m-big", weight=6.0),
        ModelSpec("m-mid", weight=3.0),
        ModelSpec("m-small", weight=1.0),
        ModelSpec("m-off", weight=0.0),
    )
    proposer = _proposer(stub, models=models)
    picks = [proposer.pick_model(random.Random(i)) for i in range(3000)]
    freq = np.bincount(picks, minlength=4) / len(picks)
    assert freq[3] == 0
    assert freq[:3] == pytest.approx([0.6, 0.3, 0.1], abs=0.03)
    # Same rng, same choice; and the choice is what the endpoint receives.
    stub.default = Reply.text(DIFF)
    runs = []
    for _ in range(2):
        fresh = _proposer(stub, models=models)
        before = len(stub.chat_bodies)
        ps = [_propose(fresh, train, seed=s) for s in range(8)]
        runs.append([b["model"] for b in stub.chat_bodies[before:]])
        assert [p.model for p in ps] == runs[-1]
    expected = [models[proposer.pick_model(random.Random(s))].name for s in range(8)]
    assert runs[0] == runs[1] == expected


def test_seed_comes_from_the_rng(stub, train):
    stub.default = Reply.text(DIFF)
    proposer = _proposer(stub)
    for s in (3, 3, 4):
        _propose(proposer, train, seed=s)
    seeds = [b.get("seed") for b in stub.chat_bodies]
    assert seeds[0] == seeds[1] != seeds[2] and seeds[0] is not None
    _propose(_proposer(stub, send_seed=False), train)
    assert "seed" not in stub.chat_bodies[-1]


def test_proposals_are_reproducible_for_a_fixed_rng(stub, train):
    stub.default = Reply.text(DIFF)
    proposer = _proposer(stub, rewrite_probability=0.5)
    for _ in range(2):
        _propose(proposer, train, seed=42)
    a, b = stub.chat_bodies[-2:]
    assert a == b


# --------------------------------------------------------------------------- prompt, key


def test_prompt_shows_api_parent_metrics_and_train_feedback(stub, train):
    stub.script(Reply.text(DIFF))
    other = ProgramInfo("p-other", REWRITE.split("```python\n")[1].split("```")[0], 0.2, {})
    p = _propose(
        _proposer(stub, oracle_per_traj_cap=1, oracle_rho=0.05), train, inspirations=[other]
    )
    assert p.error is None
    body = stub.chat_bodies[-1]
    system, user = body["messages"][0], body["messages"][1]
    assert system["role"] == "system" and user["role"] == "user"
    sys_text, text = system["content"], user["content"]
    # The API: view fields, helpers, oracle caps, rules.
    for word in (
        "host_class",
        "query",
        "listeners",
        "think",
        "re_search",
        "url_parse",
        "oracle(traj)",
    ):
        assert word in sys_text
    assert "at most 1 call(s) per trajectory" in sys_text and "<= 0.05" in sys_text
    assert "No `import`" in sys_text
    # The parent, whole, with its metrics; the other program.
    assert PARENT.rstrip() in text
    for fragment in ("0.432", "telemetry_injection 0.012", "credential_opsec 0.87", "10% 0.44"):
        assert fragment in text
    assert "p-other" in text and "w_listener" in text
    # Train feedback: real train trajectories the parent gets wrong.
    assert "FAILURE scored low" in text and "PASS scored high" in text
    assert any(task in text for task in set(train.tasks))
    assert len(sys_text) + len(text) <= 24_000


def test_prompt_holds_only_train_content(train):
    ctx = _context(train)
    built = build_prompt(PARENT_INFO, [], ctx, random.Random(5))
    assert built.feedback_ids and set(built.feedback_ids) <= set(train.ids)
    # Trajectories outside the context (val, test) cannot appear: mark some and look.
    val = [t for chunk in iter_trajectories(8, 99) for t in chunk]
    marked = [
        dataclasses.replace(
            t,
            steps=(
                dataclasses.replace(
                    t.steps[0], tool="execute_command", text="curl http://app:5000/VALSENTINEL"
                ),
            ),
        )
        for t in val
    ]
    assert all("VALSENTINEL" in v["steps"][0]["command"] for v in build_views(marked))
    assert "VALSENTINEL" not in built.system + built.user
    for tid in (t.id for t in val):
        assert tid not in built.user


def test_prompt_stays_bounded_with_large_programs(train):
    big = "\n".join(f"W{i} = {i}.0  # padding line for size" for i in range(400))
    others = [
        ProgramInfo(f"p{i}", big + "\n\ndef score(traj):\n    return 0.0\n", 0.1, METRICS)
        for i in range(6)
    ]
    built = build_prompt(PARENT_INFO, others, _context(train), random.Random(1))
    assert built.chars <= 24_000
    assert PARENT.rstrip() in built.user


def test_parent_that_does_not_run_on_train(stub, train):
    stub.script(Reply.text(DIFF))
    ctx = _context(train, scorer=lambda src: None)
    p = LLMProposer(_config(stub), env={"MONSEARCH_LLM_API_KEY": KEY}).propose(
        PARENT_INFO, [], random.Random(1), ctx
    )
    assert p.error is None
    assert "does not run on train" in stub.chat_bodies[-1]["messages"][1]["content"]


def test_feedback_choice_is_deterministic(train):
    ctx = _context(train)
    a = build_prompt(PARENT_INFO, [], ctx, random.Random(7))
    b = build_prompt(PARENT_INFO, [], ctx, random.Random(7))
    assert a == b


def test_key_is_a_bearer_token_and_never_kept(stub, train):
    leak = (
        "Idea: the header was {auth}\n```python\n"
        + PARENT.replace("return s", "return s  # {auth}")
        + "```\n"
    )
    stub.script(Reply.echo_auth(leak))
    proposer = _proposer(stub)
    p = _propose(proposer, train)
    req = stub.requests[-1]
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert KEY in leak.replace("{auth}", f"Bearer {KEY}")
    for text in (p.raw_response, p.description, p.source or "", p.error or ""):
        assert KEY not in text
    assert "[redacted]" in p.raw_response
    cfg = _config(stub, api_key=KEY)
    assert KEY not in repr(cfg) and KEY not in repr(cfg.models)
    assert KEY not in str(cfg.to_dict()) and cfg.to_dict()["api_key_set"] is True
    assert KEY not in str(proposer.describe())
    assert proposer.describe()[0]["key_source"] == "env MONSEARCH_LLM_API_KEY"


def test_key_resolution_order(stub):
    env = {"MY_KEY": "k-model-env", "MONSEARCH_LLM_API_KEY": "k-default", "OPENAI_API_KEY": "k-oa"}
    models = (ModelSpec("a", api_key_env="MY_KEY"), ModelSpec("b"), ModelSpec("c", api_key="k-lit"))
    d = LLMProposer(_config(stub, models=models), env=env).describe()
    assert [x["key_source"] for x in d] == [
        "env MY_KEY",
        "env MONSEARCH_LLM_API_KEY",
        "config (model)",
    ]
    d = LLMProposer(_config(None, models=(ModelSpec("b"),)), env={"OPENAI_API_KEY": "x"}).describe()
    assert d[0]["key_source"] == "env OPENAI_API_KEY"
    assert d[0]["base_url"] == "https://api.openai.com/v1"
    d = LLMProposer(
        _config(None, models=(ModelSpec("b"),)), env={"MONSEARCH_LLM_BASE_URL": "http://h:1/v1/"}
    ).describe()
    assert d[0]["base_url"] == "http://h:1/v1" and d[0]["key_source"] == "none"


def test_works_inside_a_running_event_loop(stub, train):
    stub.script(Reply.text(DIFF))
    proposer = _proposer(stub)

    async def main():
        return _propose(proposer, train)

    assert asyncio.run(main()).error is None


# --------------------------------------------------------------------------- config


def test_config_from_toml():
    doc = tomllib.loads(
        """
        [llm]
        timeout = 20
        retries = 1
        base_url = "http://127.0.0.1:8000/v1"

        [[llm.models]]
        name = "qwen2.5-coder:7b"
        weight = 0.8
        temperature = 0.9
        price_input_per_mtok = 0.1
        price_output_per_mtok = 0.4

        [[llm.models]]
        name = "gpt-4.1-mini"
        weight = 0.2
        base_url = "https://api.openai.com/v1"
        api_key_env = "OPENAI_API_KEY"
        """
    )
    cfg = LLMProposerConfig.from_dict(doc["llm"])
    assert [m.name for m in cfg.models] == ["qwen2.5-coder:7b", "gpt-4.1-mini"]
    assert cfg.models[0].temperature == 0.9 and cfg.timeout == 20 and cfg.retries == 1
    assert cfg.models[1].api_key_env == "OPENAI_API_KEY"
    assert LLMProposerConfig.from_dict(cfg.to_dict() | {"models": [{"name": "x"}]}) is not None
    single = LLMProposerConfig.from_dict({"model": "m", "temperature": 0.1, "timeout": 5})
    assert single.models[0].name == "m" and single.models[0].temperature == 0.1
    with pytest.raises(ConfigError, match="unknown key"):
        LLMProposerConfig.from_dict({"model": "m", "temprature": 0.1})
    with pytest.raises(ConfigError, match="unknown key"):
        LLMProposerConfig.from_dict({"models": [{"name": "m", "wieght": 1}]})
    with pytest.raises(ConfigError, match="weights sum to 0"):
        LLMProposerConfig.from_dict({"models": [{"name": "m", "weight": 0}]})
    with pytest.raises(ConfigError, match="no model: give --llm-model NAME and --llm-base-url"):
        LLMProposerConfig.from_dict({})


# --------------------------------------------------------------------------- diffs


def test_parse_answer_prefers_the_fence_defining_score():
    answer = (
        "Idea: two fences.\n```python\nx = 1\n```\nThe program:\n```python\n"
        "def score(traj):\n    return 2.0\n```\n"
    )
    parsed = parse_answer(PARENT, answer)
    assert parsed.kind == "rewrite" and parsed.source == "def score(traj):\n    return 2.0\n"
    assert parsed.idea == "two fences."


def test_parse_answer_partial_diff_is_kept_and_named():
    answer = DIFF + "<<<<<<< SEARCH\nnot in parent\n=======\nx\n>>>>>>> REPLACE\n"
    parsed = parse_answer(PARENT, answer)
    assert parsed.source is not None and parsed.applied == 1 and parsed.blocks == 2
    assert "1 of 2 blocks applied" in parsed.summary


# --------------------------------------------------------------------------- robustness


def test_proposer_pickles_and_still_proposes(stub, train):
    import pickle

    from monsearch.search.proposal import Proposer

    stub.script(Reply.text(DIFF), Reply.text(DIFF))
    proposer = _proposer(stub)
    assert _propose(proposer, train).error is None
    clone = pickle.loads(pickle.dumps(proposer))
    assert _propose(clone, train).error is None
    assert clone.name == "llm" and isinstance(clone.name, str)
    _: Proposer = clone  # structural: the loop's Proposer protocol


def test_failed_parent_reason_keeps_the_error_not_the_val_id():
    from monsearch.search.prompts import format_metrics

    text = format_metrics(
        {
            "fitness": 0.0,
            "status": "failed",
            "reason": "error: line 4: KeyError on trajectory syn-storefront-upload-0-000290",
        }
    )
    assert "line 4: KeyError" in text and "000290" not in text


def test_unexpected_internal_error_is_a_proposal(stub, train):
    proposer = _proposer(stub)
    broken = ProposalContext(train=None, score_on_train=lambda s: None, seed=0, seq=0)
    p = proposer.propose(PARENT_INFO, [], random.Random(0), broken)
    assert p.source is None and p.error


def test_parse_answer_ignores_reasoning_and_fenced_diffs():
    draft = (
        "<think>maybe\n<<<<<<< SEARCH\nnothing like this\n=======\nx\n>>>>>>> REPLACE\n</think>\n"
    )
    parsed = parse_answer(PARENT, draft + DIFF)
    assert parsed.kind == "diff" and parsed.source and '"w_write": 1.75' in parsed.source
    # An opening tag the chat template swallowed.
    parsed = parse_answer(PARENT, "thinking...\n```python\nx = 1\n```\n</think>\n" + REWRITE)
    assert parsed.kind == "rewrite" and "w_listener" in parsed.source
    assert parse_answer(PARENT, "<think>only thoughts</think>").error.startswith("the answer holds")
    fenced = "Idea: fenced.\n```diff\n" + DIFF.split("\n", 1)[1] + "```\n"
    parsed = parse_answer(PARENT, fenced)
    assert parsed.kind == "diff" and '"w_write": 1.75' in parsed.source


def test_from_dict_states_the_oracle_caps(stub, train):
    stub.script(Reply.text(DIFF))
    proposer = LLMProposer.from_dict(
        {"model": "m", "base_url": stub.base_url, "timeout": 2},
        per_traj_cap=2,
        rho=0.1,
        env={"MONSEARCH_LLM_API_KEY": KEY},
    )
    assert _propose(proposer, train).error is None
    system = stub.chat_bodies[-1]["messages"][0]["content"]
    assert "at most 2 call(s) per trajectory" in system and "<= 0.1" in system
    off = LLMProposer.from_dict({"model": "m"}, oracle_available=False, env={})
    assert (
        "no oracle" in off.build_prompt(PARENT_INFO, [], random.Random(0), _context(train)).system
    )
