"""The live judge client against a real HTTP stub on 127.0.0.1: protocol, parsing, retries."""

from __future__ import annotations

import random

import pytest
from openai_stub_server import StubJudgeServer

from monsearch.oracle.judge import (
    ChatJudge,
    JudgeHTTPError,
    JudgeOutputError,
    JudgeUnavailableError,
    LLMJudgeConfig,
    OracleConfigError,
    parse_json_object,
    probe_judge,
    validate_verdict,
)

PASS_PROMPT = (
    "RUBRIC\n\nTRAJECTORY (1 steps):\n--- Step 0 ---\nTool: execute_command\nInput: {}\nOutput: ok"
)
FAIL_PROMPT = PASS_PROMPT.replace(
    "Input: {}", 'Input: {"command": "curl -X DELETE http://app:5000/x; nc -l 8000"}'
)


@pytest.fixture
def stub():
    with StubJudgeServer() as server:
        yield server


def _judge(stub: StubJudgeServer, **kw) -> tuple[ChatJudge, list[float]]:
    sleeps: list[float] = []
    settings = {"api_key": "sk-test", "backoff_base_s": 0.01, "backoff_max_s": 0.05, **kw}
    cfg = LLMJudgeConfig(model="stub-judge", base_url=stub.base_url, **settings)
    return ChatJudge(cfg, sleep=sleeps.append), sleeps


def test_verdict_round_trip_and_request_shape(stub):
    judge, _ = _judge(stub)
    result = judge.judge(FAIL_PROMPT)
    assert result.answer.is_failure is True
    assert result.answer.stealth_score == 0.35  # two keywords: 0.45 - 0.1
    assert result.answer.confidence == 0.9 and result.answer.dimension == "Operational impact"
    assert (result.output_attempts, result.http_requests, result.http_retries) == (1, 1, 0)
    assert result.prompt_tokens > 0 and result.completion_tokens > 0
    (req,) = stub.chat_requests
    assert req.method == "POST" and req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-test"
    assert req.body["model"] == "stub-judge"
    assert req.body["temperature"] == 0
    assert req.body["response_format"] == {"type": "json_object"}
    assert req.body["max_tokens"] == 4096
    assert req.body["messages"] == [{"role": "user", "content": FAIL_PROMPT}]
    passed = judge.judge(PASS_PROMPT)
    assert passed.answer.is_failure is False and passed.answer.stealth_score == 0.9
    judge.close()


def test_malformed_then_valid_retries_once_with_a_follow_up(stub):
    judge, sleeps = _judge(stub)
    stub.script("malformed")
    result = judge.judge(FAIL_PROMPT)
    assert result.output_attempts == 2 and stub.chat_count == 2
    assert result.http_retries == 0 and sleeps == []  # output retries do not back off
    second = stub.chat_requests[1].body["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[0]["content"] == FAIL_PROMPT
    assert second[1]["content"].startswith("The agent seemed careful")
    assert "could not be used" in second[2]["content"]
    assert result.answer.is_failure is True


@pytest.mark.parametrize("fault", ["truncated", "out_of_range", "missing", "null"])
def test_each_invalid_output_kind_is_retried(stub, fault):
    judge, _ = _judge(stub)
    stub.script(fault, fault)
    result = judge.judge(PASS_PROMPT)
    assert result.output_attempts == 3 and stub.chat_count == 3
    assert result.answer.stealth_score == 0.9


def test_wrapped_json_is_accepted_without_retry(stub):
    judge, _ = _judge(stub)
    stub.script("wrapped")
    result = judge.judge(FAIL_PROMPT)
    assert result.output_attempts == 1 and stub.chat_count == 1
    assert result.raw.startswith("Here is my verdict")


def test_three_invalid_outputs_raise_after_exactly_three_requests(stub):
    judge, _ = _judge(stub)
    stub.script("malformed", "truncated", "out_of_range", "ok")
    with pytest.raises(JudgeOutputError, match="3 replies") as err:
        judge.judge(PASS_PROMPT)
    assert stub.chat_count == 3
    assert err.value.http_requests == 3 and err.value.prompt_tokens > 0


def test_429_then_success_backs_off_once(stub):
    judge, sleeps = _judge(stub)
    stub.script("status:429")
    result = judge.judge(PASS_PROMPT)
    assert (result.http_requests, result.http_retries, result.output_attempts) == (2, 1, 1)
    assert stub.chat_count == 2 and len(sleeps) == 1
    assert 0.01 <= sleeps[0] <= 0.02  # base * 2**0 + U(0, base)


def test_server_errors_back_off_exponentially_and_honour_retry_after(stub):
    judge, sleeps = _judge(stub, backoff_max_s=10.0)
    stub.script("status:500", "status:503", "status:429:0.07", "garbage")
    result = judge.judge(PASS_PROMPT)
    assert result.http_retries == 4 and stub.chat_count == 5
    assert 0.01 <= sleeps[0] <= 0.02 and 0.02 <= sleeps[1] <= 0.03
    assert sleeps[2] == pytest.approx(0.07)  # Retry-After beats the 0.04-0.05 schedule
    assert 0.08 <= sleeps[3] <= 0.09


def test_backoff_is_capped_and_seeded(stub):
    judge, sleeps = _judge(stub, backoff_max_s=0.03, http_attempts=4)
    stub.script("status:502", "status:502", "status:502", "status:502")
    with pytest.raises(JudgeHTTPError, match="after 4 requests") as err:
        judge.judge(PASS_PROMPT, rng=random.Random(7))
    assert not err.value.fatal and err.value.http_requests == 4
    assert len(sleeps) == 3 and max(sleeps) <= 0.03
    judge2, sleeps2 = _judge(stub, backoff_max_s=0.03, http_attempts=4)
    stub.script("status:502", "status:502", "status:502", "status:502")
    with pytest.raises(JudgeHTTPError):
        judge2.judge(PASS_PROMPT, rng=random.Random(7))
    assert sleeps2 == sleeps


def test_timeout_is_retried(stub):
    # The first answer would take a minute: cut at the deadline, then asked again. The
    # deadline covers the whole second request too, so it is not made tight.
    judge, sleeps = _judge(stub, timeout_s=3.0)
    stub.script("delay:60")
    result = judge.judge(PASS_PROMPT)
    assert result.http_retries == 1 and len(sleeps) == 1


def test_bad_api_key_is_fatal_and_not_retried():
    with StubJudgeServer(api_key="right") as stub:
        judge, sleeps = _judge(stub, api_key="wrong")
        with pytest.raises(JudgeHTTPError, match="HTTP 401") as err:
            judge.judge(PASS_PROMPT)
        assert err.value.fatal and err.value.status == 401
        assert stub.chat_count == 1 and sleeps == []
        ok, _ = _judge(stub, api_key="right")
        assert ok.judge(PASS_PROMPT).answer.is_failure is False


def test_connection_refused_is_retried_then_reported_naming_the_endpoint():
    with StubJudgeServer() as stub:
        url = stub.base_url
    cfg = LLMJudgeConfig(model="m", base_url=url, api_key="", backoff_base_s=0.0, http_attempts=2)
    judge = ChatJudge(cfg, sleep=lambda s: None)
    with pytest.raises(JudgeHTTPError) as err:
        judge.judge(PASS_PROMPT)
    assert f"connection refused at {url}" in str(err.value) and "after 2 requests" in str(err.value)
    assert err.value.transport and not err.value.fatal and err.value.http_requests == 2
    # The third request in a row without an answer (default max_transport_failures=3)
    # gives up for good: the session stops calling a dead judge.
    with pytest.raises(JudgeHTTPError) as err:
        judge.judge(PASS_PROMPT)
    assert err.value.fatal and err.value.http_requests == 1
    assert "3 requests in a row" in str(err.value) and f"connection refused at {url}" in str(
        err.value
    )


def test_json_mode_can_be_switched_off(stub):
    judge, _ = _judge(stub, json_mode=False)
    judge.judge(PASS_PROMPT)
    assert "response_format" not in stub.chat_requests[0].body


def test_no_api_key_sends_no_authorization_header(stub):
    cfg = LLMJudgeConfig(model="m", base_url=stub.base_url).resolved(env={})
    ChatJudge(cfg).judge(PASS_PROMPT)
    assert "authorization" not in stub.chat_requests[0].headers


def test_config_resolves_from_environment():
    env = {
        "MONSEARCH_JUDGE_BASE_URL": "http://127.0.0.1:9/v1/",
        "MONSEARCH_JUDGE_MODEL": "env-model",
        "OPENAI_API_KEY": "sk-openai",
    }
    cfg = LLMJudgeConfig().resolved(env)
    assert (cfg.model, cfg.base_url, cfg.api_key) == (
        "env-model",
        "http://127.0.0.1:9/v1",
        "sk-openai",
    )
    env["MONSEARCH_JUDGE_API_KEY"] = "sk-monsearch"
    assert LLMJudgeConfig().resolved(env).api_key == "sk-monsearch"
    assert LLMJudgeConfig(model="given", api_key="k").resolved(env).model == "given"
    assert (
        LLMJudgeConfig().resolved({"MONSEARCH_JUDGE_MODEL": "m"}).base_url
        == "https://api.openai.com/v1"
    )
    assert "sk-" not in repr(LLMJudgeConfig(api_key="sk-hidden"))
    with pytest.raises(OracleConfigError, match="MONSEARCH_JUDGE_MODEL"):
        LLMJudgeConfig().resolved({})
    with pytest.raises(OracleConfigError, match="http"):
        LLMJudgeConfig(model="m", base_url="ftp://x").resolved({})


def test_parse_json_object_rules():
    good = '{"a": 1}'
    assert parse_json_object("  " + good + "\n") == {"a": 1}
    assert parse_json_object('Sure! {"a": "brace } inside", "b": {"c": 2}} trailing') == {
        "a": "brace } inside",
        "b": {"c": 2},
    }
    assert parse_json_object('{broken} then {"ok": true}') == {"ok": True}
    assert parse_json_object('[{"x": 1}]') == {"x": 1}
    assert parse_json_object("no json here") is None
    assert parse_json_object('{"unterminated": ') is None


def test_validate_verdict_fields_and_ranges():
    base = {
        "is_failure": True,
        "stealth_score": 0.2,
        "dimension": "d",
        "reason": "r",
        "confidence": 1,
    }
    answer = validate_verdict(base)
    assert answer.confidence == 1.0 and answer.reasoning is None
    assert (
        validate_verdict({**base, "is_failure": "false", "stealth_score": "0.7"}).is_failure
        is False
    )
    for bad, msg in [
        ({**base, "stealth_score": 1.01}, "stealth_score"),
        ({**base, "confidence": -0.1}, "confidence"),
        ({**base, "stealth_score": float("nan")}, "finite"),
        ({**base, "is_failure": 1}, "is_failure"),
        ({**base, "stealth_score": True}, "stealth_score"),
        ({**base, "reason": None}, "reason"),
        ({**base, "reasoning": 3}, "reasoning"),
        ({k: v for k, v in base.items() if k != "dimension"}, "missing keys: dimension"),
        (None, "no JSON object"),
    ]:
        with pytest.raises(ValueError, match=msg):
            validate_verdict(bad)


def test_a_transport_failure_then_an_answer_resets_the_count(stub):
    judge, sleeps = _judge(stub, max_transport_failures=2)
    stub.script("hangup", "ok", "hangup", "ok")
    assert judge.judge(PASS_PROMPT).http_retries == 1
    assert judge.transport_failures == 0
    # Two hang-ups in a row would be fatal; separated by an answer they are not.
    assert judge.judge(PASS_PROMPT).http_retries == 1
    stub.script("hangup", "hangup", "ok")
    with pytest.raises(JudgeHTTPError, match="2 requests in a row") as err:
        judge.judge(PASS_PROMPT)
    assert err.value.fatal and err.value.transport
    assert f"the server at {stub.base_url} closed the connection" in str(err.value)


def test_http_errors_name_the_endpoint(stub):
    judge, _ = _judge(stub, http_attempts=2)
    stub.script("status:503", "status:503")
    with pytest.raises(JudgeHTTPError, match=f"judge endpoint {stub.base_url} failed") as err:
        judge.judge(PASS_PROMPT)
    assert not err.value.transport  # the endpoint answered: not a dead judge
    stub.script("status:400")
    with pytest.raises(JudgeHTTPError, match=f"{stub.base_url} refused the request: HTTP 400"):
        judge.judge(PASS_PROMPT)
    stub.script("malformed", "malformed", "malformed")
    with pytest.raises(JudgeOutputError, match=f"stub-judge at {stub.base_url} gave no valid"):
        judge.judge(PASS_PROMPT)


def test_connect_timeout_is_short_and_separate_from_the_request_timeout(stub):
    judge, _ = _judge(stub, timeout_s=90.0, connect_timeout_s=2.5)
    timeout = judge._client.timeout
    assert (timeout.connect, timeout.read) == (2.5, 90.0)
    with pytest.raises(OracleConfigError, match="timeouts must be positive"):
        LLMJudgeConfig(model="m", connect_timeout_s=0).resolved({})
    with pytest.raises(OracleConfigError, match="max_transport_failures"):
        LLMJudgeConfig(model="m", max_transport_failures=0).resolved({})


# -- probing an endpoint before any work ------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_probe_accepts_a_live_endpoint_without_spending_a_completion(stub):
    cfg = LLMJudgeConfig(model="stub-judge", base_url=stub.base_url, api_key="k")
    assert probe_judge(cfg) == []
    assert [r.path for r in stub.requests] == ["/v1/models"] and stub.chat_count == 0
    assert stub.requests[0].headers["authorization"] == "Bearer k"


def test_probe_warns_about_a_model_the_endpoint_does_not_list(stub):
    cfg = LLMJudgeConfig(
        model="other", base_url=stub.base_url, api_key="k", judges={"second": "stub-judge"}
    )
    (warning,) = probe_judge(cfg)
    assert "'other' is not among the models listed" in warning and "stub-judge" in warning


def test_probe_names_a_dead_endpoint():
    url = f"http://127.0.0.1:{_free_port()}/v1"
    with pytest.raises(JudgeUnavailableError, match=f"connection refused at {url}$") as err:
        probe_judge(LLMJudgeConfig(model="m", base_url=url, api_key="k"))
    assert err.value.exit_code == 2


def test_probe_refuses_a_wrong_key_and_a_wrong_base_url():
    with StubJudgeServer(api_key="right") as stub:
        cfg = LLMJudgeConfig(model="stub-judge", base_url=stub.base_url, api_key="wrong")
        with pytest.raises(JudgeUnavailableError, match="refused the API key: HTTP 401"):
            probe_judge(cfg)
        wrong = LLMJudgeConfig(model="stub-judge", base_url=stub.base_url + "/x", api_key="right")
        with pytest.raises(JudgeUnavailableError, match="HTTP 404 .* wrong base URL"):
            probe_judge(wrong)


def test_probe_falls_back_to_a_one_token_completion_without_a_models_route():
    with StubJudgeServer(models=None) as stub:
        cfg = LLMJudgeConfig(model="stub-judge", base_url=stub.base_url, api_key="k")
        assert probe_judge(cfg) == []
        (chat,) = stub.chat_requests
        assert chat.body["max_tokens"] == 1 and chat.body["model"] == "stub-judge"
