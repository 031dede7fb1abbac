"""The project's one OpenAI-compatible client (oracle/openai_client.py) against scripted
servers on 127.0.0.1: streamed answers with progress, token counts without ``usage``,
whole-request deadlines, retries, and the key kept out of every text."""

from __future__ import annotations

import pickle

import pytest
from llm_stub_server import Reply, StubLLMServer

from monsearch.oracle.openai_client import ChatError, OpenAIClient, RetryPolicy

KEY = "sk-client-test-9f8e7d6c"
BODY = {"model": "m", "messages": [{"role": "user", "content": "hello there"}], "max_tokens": 50}
ANSWER = "def detect_x(traj):\n    return 1.0\n"


def test_a_streamed_answer_is_assembled_with_progress_and_usage():
    seen = []
    with StubLLMServer() as stub:
        stub.script(Reply.text(ANSWER, usage=(11, 9)))
        client = OpenAIClient(stub.base_url, timeout_s=5)
        reply = client.chat(BODY, stream=True, on_progress=seen.append)
        (req,) = stub.chat_bodies
    assert reply.text == ANSWER and reply.finish_reason == "stop"
    assert reply.usage == {"prompt_tokens": 11, "completion_tokens": 9}
    assert reply.chunks == -(-len(ANSWER) // 4)  # the stub sends 4 characters a chunk
    assert req["stream"] is True and req["stream_options"] == {"include_usage": True}
    assert seen and seen[-1].tokens == reply.chunks and seen[-1].tokens_per_s >= 0
    assert client.totals == {"calls": 1, "requests": 1, "prompt_tokens": 11, "completion_tokens": 9}


def test_a_stream_without_usage_counts_its_chunks():
    with StubLLMServer() as stub:
        stub.script(Reply.text(ANSWER, usage=False))
        reply = OpenAIClient(stub.base_url).chat(BODY, stream=True)
    assert reply.usage is None and reply.chunks == -(-len(ANSWER) // 4)


def test_a_stream_ends_where_the_caller_has_what_it_needs():
    """``stop_when`` ends the stream at the chunk that completes the answer (here a
    closed fence with a detector, as the detector contract asks): the explanation small
    models add after it is never waited for."""
    from monsearch.search.detector_edit import answer_complete

    fenced = "```python\n" + ANSWER + "```\n"
    with StubLLMServer() as stub:
        stub.script(Reply.text(fenced + "This detector counts things. " * 40, usage=(11, 300)))
        reply = OpenAIClient(stub.base_url).chat(BODY, stream=True, stop_when=answer_complete)
    assert reply.finish_reason == "client_stop"
    assert reply.text.startswith(fenced[:-1]) and len(reply.text) < len(fenced) + 8
    assert reply.chunks == -(-len(reply.text) // 4) and reply.usage is None
    assert answer_complete(fenced) and not answer_complete(fenced[:-5])


def test_plain_and_streamed_replies_agree():
    with StubLLMServer() as stub:
        stub.default = Reply.text(ANSWER, usage=(5, 6))
        client = OpenAIClient(stub.base_url)
        plain, streamed = client.chat(BODY), client.chat(BODY, stream=True)
    assert plain.text == streamed.text == ANSWER
    assert plain.usage == streamed.usage and plain.chunks is None


def test_the_deadline_covers_the_whole_request_and_is_a_timeout():
    with StubLLMServer() as stub:
        stub.script(Reply.delay(3.0, ANSWER))
        client = OpenAIClient(stub.base_url, timeout_s=0.4)
        with pytest.raises(ChatError) as err:
            client.chat(BODY, stream=True)
    assert err.value.timed_out and err.value.transport and err.value.kind == "exhausted"


def test_retries_back_off_and_stop_at_a_client_error():
    sleeps: list[float] = []
    with StubLLMServer() as stub:
        stub.script(Reply.status(503), Reply.status(429), Reply.text(ANSWER))
        client = OpenAIClient(
            stub.base_url, retry=RetryPolicy(attempts=3, backoff_base_s=0.01), sleep=sleeps.append
        )
        reply = client.chat(BODY, stream=True)
        assert (reply.requests, reply.retries, len(sleeps)) == (3, 2, 2)
        stub.script(Reply.status(400, "context too long"), Reply.text(ANSWER))
        with pytest.raises(ChatError) as err:
            client.chat(BODY)
    assert err.value.kind == "status" and err.value.status == 400 and not err.value.fatal
    assert err.value.server_message == "context too long" and err.value.requests == 1


def test_the_key_is_a_bearer_token_and_in_no_text():
    with StubLLMServer(api_key=KEY) as stub:
        stub.script(Reply.status(400, f"bad key {KEY} given"))
        client = OpenAIClient(stub.base_url, KEY)
        with pytest.raises(ChatError) as err:
            client.chat(BODY)
        assert stub.requests[-1].headers["authorization"] == f"Bearer {KEY}"
        wrong = OpenAIClient(stub.base_url, "sk-wrong-000000")
        with pytest.raises(ChatError) as refused:
            wrong.chat(BODY, stream=True)
    assert KEY not in str(err.value) and KEY not in err.value.server_message
    assert "[redacted]" in str(err.value)
    assert refused.value.status == 401 and refused.value.fatal
    assert KEY not in repr(client) and KEY not in repr(client.__dict__.get("retry"))
    clone = pickle.loads(pickle.dumps(client))  # a copy opens its own connections
    assert clone.base_url == client.base_url


def test_models_are_listed():
    with StubLLMServer(models=("a", "b")) as stub:
        assert OpenAIClient(stub.base_url).list_models() == ["a", "b"]
        assert OpenAIClient(stub.base_url).probe(["c"], what="x") == [
            f"model 'c' is not among the models listed at {stub.base_url}/models (a, b); "
            "calls may fail"
        ]
