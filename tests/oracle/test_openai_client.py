"""The project's one OpenAI-compatible client (oracle/openai_client.py) against scripted
servers on 127.0.0.1: streamed answers with progress, token counts without ``usage``,
whole-request deadlines, retries, and the key kept out of every text; hostile servers
(drips, silence, endless lines and streams, undecodable answers, control sequences)
against the deadline, the caps and the escaping."""

from __future__ import annotations

import gzip
import json
import pickle
import time
import tracemalloc

import pytest
from llm_stub_server import Reply, StubLLMServer

from monsearch.oracle.openai_client import ChatError, OpenAIClient, ReplyLimits, RetryPolicy
from monsearch.oracle.openai_endpoint import EndpointUnavailableError

KEY = "sk-client-test-9f8e7d6c"
BODY = {"model": "m", "messages": [{"role": "user", "content": "hello there"}], "max_tokens": 50}
ANSWER = "def detect_x(traj):\n    return 1.0\n"
MB = 1024 * 1024


def test_a_streamed_answer_is_assembled_with_progress_and_usage():
    seen = []
    with StubLLMServer() as stub:
        stub.script(Reply.text(ANSWER, usage=(11, 9)))
        client = OpenAIClient(stub.base_url, timeout_s=60)
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


# --------------------------------------------------------------------------- hostile servers
# Each hostile reply goes on for a minute (or 256 MB) unless the client leaves: a bound
# of 20 s on a 1 s deadline, or of 96 MB sent for a cap of a few MB, is far from both the
# client's figure and the server's, so no machine is too slow or too fast for them.

LASTING_S = 45.0
FAR_BELOW_LASTING_S = 20.0
FAR_BELOW_HOSTILE_MB = 96


def _timed_chat(client: OpenAIClient, **kwargs) -> tuple[float, ChatError]:
    t0 = time.monotonic()
    with pytest.raises(ChatError) as err:
        client.chat(BODY, **kwargs)
    return time.monotonic() - t0, err.value


@pytest.mark.parametrize(
    ("phase", "stream"),
    [("body", True), ("body", False), ("headers", True)],
    ids=["stream body", "plain body", "status line"],
)
def test_a_drip_is_cut_at_the_deadline(phase, stream):
    """One byte every 0.2 s, never a newline: each read returns, so a per-read timeout
    never trips; the deadline of the whole request does."""
    with StubLLMServer() as stub:
        stub.script(Reply.drip(0.2, phase=phase, lasting_s=LASTING_S))
        client = OpenAIClient(stub.base_url, timeout_s=1.0)
        elapsed, err = _timed_chat(client, stream=stream)
        (record,) = stub.wait_hostile()
    assert elapsed < FAR_BELOW_LASTING_S
    assert err.timed_out and err.kind == "exhausted"
    assert "within 1 s" in err.last and "\n" not in str(err)
    assert record.client_left  # the client closed the connection, the drip did not end


@pytest.mark.parametrize("phase", ["headers", "body"])
def test_a_silent_connection_is_cut_at_the_deadline(phase):
    with StubLLMServer() as stub:
        stub.script(Reply.silent(phase=phase, lasting_s=LASTING_S))
        elapsed, err = _timed_chat(OpenAIClient(stub.base_url, timeout_s=1.0), stream=True)
        (record,) = stub.wait_hostile()
    assert elapsed < FAR_BELOW_LASTING_S and err.timed_out
    assert record.client_left


def _traced_peak_mb(call) -> tuple[object, float]:
    """``call()``'s result (or exception) and the peak of Python allocations meanwhile."""
    tracemalloc.start()
    try:
        try:
            out = call()
        except ChatError as exc:
            out = exc
        return out, tracemalloc.get_traced_memory()[1] / MB
    finally:
        tracemalloc.stop()


def test_an_endless_line_is_cut_at_the_line_cap():
    with StubLLMServer() as stub:
        stub.script(Reply.endless_line())
        client = OpenAIClient(stub.base_url, timeout_s=300)
        err, peak = _traced_peak_mb(lambda: client.chat(BODY, stream=True))
        (record,) = stub.wait_hostile()
    assert isinstance(err, ChatError) and not err.timed_out and not err.transport
    assert "without a newline" in err.last
    assert record.client_left and record.sent < FAR_BELOW_HOSTILE_MB * MB
    assert peak < 32


def test_an_endless_stream_is_cut_at_the_answer_cap():
    """A well-formed stream that never ends: reading stops where the answer passes the
    caller's cap (here 50,000 characters), not at the end of the stream."""
    with StubLLMServer() as stub:
        stub.script(Reply.endless_stream(ANSWER, "<think>"))
        client = OpenAIClient(stub.base_url, timeout_s=300)
        reply, peak = _traced_peak_mb(lambda: client.chat(BODY, stream=True, max_chars=50_000))
        (record,) = stub.wait_hostile()
    assert not isinstance(reply, ChatError), reply
    assert reply.finish_reason == "answer_cap"
    assert 50_000 < len(reply.text) <= 50_000 + len("<think>")
    assert reply.text.startswith(ANSWER)
    assert record.client_left and record.sent < FAR_BELOW_HOSTILE_MB * MB
    assert peak < 32


def test_an_endless_stream_without_content_is_cut_at_the_byte_cap():
    limits = ReplyLimits(stream_bytes=4 * MB)
    with StubLLMServer() as stub:
        stub.script(Reply.endless_stream(content=False))
        client = OpenAIClient(stub.base_url, timeout_s=300, limits=limits)
        elapsed, err = _timed_chat(client, stream=True)
        (record,) = stub.wait_hostile()
    assert not err.timed_out and "passed 4 MB" in err.last
    assert record.client_left and record.sent < FAR_BELOW_HOSTILE_MB * MB


def test_an_endless_plain_body_is_cut_at_the_byte_cap():
    with StubLLMServer() as stub:
        stub.script(Reply.endless_body())
        client = OpenAIClient(stub.base_url, timeout_s=300)
        err, peak = _traced_peak_mb(lambda: client.chat(BODY))
        (record,) = stub.wait_hostile()
    assert isinstance(err, ChatError) and "passed 8 MB" in err.last
    assert record.client_left and record.sent < FAR_BELOW_HOSTILE_MB * MB
    assert peak < 64


def _sse(*events: bytes) -> bytes:
    return b"".join(b"data: " + e + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def _chunk(content: str) -> bytes:
    return json.dumps({"choices": [{"index": 0, "delta": {"content": content}}]}).encode()


def _completion(content: str) -> bytes:
    message = {"role": "assistant", "content": content}
    return json.dumps({"choices": [{"index": 0, "message": message}]}).encode()


SSE = "text/event-stream"
#: Answers nothing can decode, each (body, content type, streamed, what the error says).
UNDECODABLE = {
    "lone surrogate, plain": (_completion("def \ud800(traj): pass"), "application/json", False,
                              "lone surrogate"),
    "lone surrogate, streamed": (_sse(_chunk("ok "), _chunk("\udfff")), SSE, True,
                                 "lone surrogate"),
    "invalid UTF-8, plain": (_completion("é").replace(b"\\u00e9", b"\xff\xfe"),
                             "application/json", False, "not valid UTF-8"),
    "invalid UTF-8, streamed": (_sse(_chunk("ok"), _chunk("x").replace(b'"x"', b'"\xc3("')),
                                SSE, True, "not valid UTF-8"),
    "non-JSON event": (_sse(_chunk("def detect"), b"{not json", _chunk("_x(traj)")), SSE, True,
                       "not JSON"),
    "body not JSON": (b"<html>upstream</html>", "application/json", False, "not JSON"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(UNDECODABLE))
def test_an_undecodable_answer_fails_the_call_with_a_one_line_reason(name):
    body, content_type, stream, says = UNDECODABLE[name]
    with StubLLMServer() as stub:
        stub.script(Reply.raw(body, content_type))
        with pytest.raises(ChatError) as err:
            OpenAIClient(stub.base_url).chat(BODY, stream=stream)
    assert says in err.value.last and not err.value.transport
    text = str(err.value)
    assert "\n" not in text and text.isprintable()
    text.encode("utf-8")  # printable and writable: no lone surrogate either


def test_a_compressed_reply_is_refused_unread():
    """Asked for none (``Accept-Encoding: identity``), a server that compresses anyway
    could send a small bomb; its body is not decompressed."""
    bomb = gzip.compress(b" " * (64 * MB))
    with StubLLMServer() as stub:
        stub.script(Reply.raw(bomb, headers=(("Content-Encoding", "gzip"),)))
        err, peak = _traced_peak_mb(lambda: OpenAIClient(stub.base_url).chat(BODY))
        req = stub.requests[-1]
    assert isinstance(err, ChatError) and "gzip" in err.last
    assert req.headers.get("accept-encoding") == "identity"
    assert peak < 32


HOSTILE_TEXT = "bad\x1b[2J\x1b]8;;http://x\x07link\nerror: forged line\r\u202etxt\ud800"


def test_server_text_in_an_error_is_escaped():
    """The message shows what the server wrote escaped, on one line; ``server_message``
    keeps it as sent, for a caller to scrub its key out before escaping it."""
    plain = HOSTILE_TEXT.replace("\ud800", "").encode()
    with StubLLMServer() as stub:
        stub.script(
            Reply.raw(plain, "text/plain", code=400),
            Reply.status(400, HOSTILE_TEXT),
            Reply.raw(plain, "text/plain", code=503),
        )
        client = OpenAIClient(stub.base_url)
        errors = []
        for _ in range(3):
            with pytest.raises(ChatError) as err:
                client.chat(BODY)
            errors.append(err.value)
    for e in errors:
        assert str(e).isprintable() and "\\x1b[2J" in str(e)
    assert "\\nerror: forged" in str(errors[0]) and "\\u202e" in str(errors[0])
    assert errors[1].server_message == HOSTILE_TEXT
    assert errors[2].last.startswith("HTTP 503") and "\x1b[2J" in errors[2].last  # as sent


def test_the_probe_and_the_listing_are_bounded():
    """``GET /models`` is read under the same deadline and caps as a chat."""
    with StubLLMServer(models_reply=Reply.drip(0.2, lasting_s=LASTING_S)) as stub:
        t0 = time.monotonic()
        with pytest.raises(EndpointUnavailableError, match="within 1 s"):
            OpenAIClient(stub.base_url).probe(["m"], what="the stub", timeout_s=1.0)
        assert OpenAIClient(stub.base_url).list_models(timeout_s=1.0) is None
        assert time.monotonic() - t0 < 2 * FAR_BELOW_LASTING_S
        assert all(r.client_left for r in stub.wait_hostile(2))
    with StubLLMServer(models_reply=Reply.endless_body()) as stub:
        with pytest.raises(EndpointUnavailableError, match="passed 8 MB"):
            OpenAIClient(stub.base_url).probe(["m"], what="the stub", timeout_s=300)
        (record,) = stub.wait_hostile()
        assert record.client_left and record.sent < FAR_BELOW_HOSTILE_MB * MB


def test_listed_model_ids_are_escaped():
    ids = ("ok-model", "\x1b[31mred\x1b[0m", "x\nerror: forged line", "[/dim] [link=http://x]")
    with StubLLMServer(models=ids) as stub:
        (warning,) = OpenAIClient(stub.base_url).probe(["wanted"], what="x")
    assert warning.isprintable()
    assert "\\x1b[31mred" in warning and "x\\nerror: forged line" in warning
