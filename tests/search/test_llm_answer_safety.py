"""The LLM proposer against hostile answers: size, parsing time and the API key.

A model's answer is untrusted input. Parsing is linear in its size whatever its shape
(a megabyte of unclosed ``<think>`` tags used to take minutes), answers over
``[llm] max_answer_chars`` are refused unparsed (a stream is closed at the cap, never
read to its end), an answer nothing can decode costs its candidate with a one-line
note, and no stored text (the raw answer, the error, the description, the program, the
lineage as a whole) holds the API key, whole or as a 12-character run, reversed, hex,
base64 at any alignment, percent-encoded or split by blanks. What a server says reaches
the terminal escaped. Real HTTP against the scripted stub server; a real ``monsearch
evolve`` for what reaches ``lineage.sqlite`` and stderr.
"""

from __future__ import annotations

import base64
import json
import random
import subprocess
import sys
import textwrap
import tomllib
import urllib.parse

import numpy as np
import pytest
from llm_stub_server import Reply, StubLLMServer
from run_fixtures import _env, evolve

from monsearch.search.config import ConfigError
from monsearch.search.diffs import MAX_DIFF_BLOCKS, parse_answer
from monsearch.search.key_scrub import FRAGMENT, KeyScrubber
from monsearch.search.lineage import LineageStore
from monsearch.search.llm_proposer import LLMProposer, LLMProposerConfig, ModelSpec
from monsearch.search.proposal import ProgramInfo, ProposalContext, TrainData
from monsearch.synth.generate import iter_trajectories
from monsearch.views.build import build_views

KEY = "sk-test-Zq8rT3vW9xY2mNp4Lk7Q"

PARENT = """PARAMS = {"w_secret": 2.0, "w_write": 1.0}


def score(traj):
    s = 0.0
    for finding in traj.secrets:
        s += PARAMS["w_secret"]
    s += PARAMS["w_write"] * sum(1 for r in traj.requests if r.method in ("PUT", "DELETE"))
    return s
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

PARENT_INFO = ProgramInfo(id="p-parent", source=PARENT, fitness=0.25, metrics={}, operator="seed")


@pytest.fixture(scope="module")
def train() -> TrainData:
    trajs = [t for chunk in iter_trajectories(24, 5) for t in chunk]
    return TrainData(
        trajectories=trajs,
        views=build_views(trajs),
        labels=np.array([bool(t.label and t.label.is_failure) for t in trajs]),
        tasks=[t.task for t in trajs],
        dimensions=[str(t.dimension) for t in trajs],
        ids=[t.id for t in trajs],
    )


@pytest.fixture
def stub():
    with StubLLMServer(api_key=KEY) as server:
        yield server


def _propose(stub: StubLLMServer, train: TrainData, answer: str | Reply, **config):
    stub.script(answer if isinstance(answer, Reply) else Reply.text(answer))
    settings = {
        "models": (ModelSpec("stub-coder", max_tokens=100_000),),
        "timeout": 60.0,
        "rewrite_probability": 0.0,
        "base_url": stub.base_url,
        "repair_turns": 0,
    }
    cfg = LLMProposerConfig(**{**settings, **config})
    proposer = LLMProposer(cfg, env={"MONSEARCH_LLM_API_KEY": KEY})
    context = ProposalContext(
        train=train,
        score_on_train=lambda source: np.array([float(len(v["requests"])) for v in train.views]),
        seed=0,
        seq=1,
    )
    return proposer, proposer.propose(PARENT_INFO, [], random.Random(1), context)


# --------------------------------------------------------------------------- parsing time

#: Answers of about ``n`` characters that made a regex-based parser quadratic (or worse).
SHAPES = {
    "unclosed think": "lambda n: '<think>' * (n // 7)",
    "think per line": "lambda n: '<think>\\n' * (n // 8)",
    "lone closing tags": "lambda n: '</think>' * (n // 8)",
    "bare fences": "lambda n: '```\\n' * (n // 4)",
    "python fences": "lambda n: '```python\\n' * (n // 10)",
    "fence then blanks": "lambda n: '```' + ' ' * n + 'x'",
    "unclosed fence": "lambda n: '```python\\n' + 'x = 1\\n' * (n // 6)",
    "search markers": "lambda n: '<<<<<<< SEARCH\\n' * (n // 15)",
    "separators": "lambda n: '=======\\n' * (n // 8)",
    "search and separator": "lambda n: '<<<<<<< SEARCH\\nx\\n=======\\n' * (n // 25)",
    "blocks matching nothing": (
        "lambda n: '<<<<<<< SEARCH\\nzz\\n=======\\ny\\n>>>>>>> REPLACE\\n' * (n // 40)"
    ),
    "one huge search": (
        "lambda n: '<<<<<<< SEARCH\\n' + 'a\\n' * (n // 2) + '=======\\nb\\n>>>>>>> REPLACE\\n'"
    ),
    "growing replace": (
        "lambda n: '<<<<<<< SEARCH\\n    return s\\n=======\\n' + '    s += 1\\n' * (n // 11)"
        " + '    return s\\n>>>>>>> REPLACE\\n'"
    ),
    "def then blanks": "lambda n: 'def' + ' ' * n + 'score'",
    "all of them": "lambda n: '<think>```python\\n<<<<<<< SEARCH\\n=======\\n' * (n // 40)",
}


def test_adversarial_answers_parse_in_linear_time():
    # 5 MB of each shape, in a child process so a regression hangs nothing. The bound is a
    # hang guard, not a timing: the whole script takes a few seconds here, while the
    # quadratic parser needed minutes for 1 MB of one shape alone.
    script = textwrap.dedent(
        f"""
        import json
        from monsearch.search.diffs import parse_answer
        parent = {PARENT!r}
        shapes = {{{", ".join(f"{k!r}: {v}" for k, v in SHAPES.items())}}}
        out = {{}}
        for name, make in shapes.items():
            text = make(5_000_000)
            assert len(text) >= 4_000_000, name
            out[name] = parse_answer(parent, text, max_chars=None).error
        print(json.dumps(out))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    errors = json.loads(proc.stdout)
    assert set(errors) == set(SHAPES)
    assert "only reasoning" in errors["unclosed think"]
    assert "only reasoning" in errors["lone closing tags"]
    assert "malformed SEARCH/REPLACE" in errors["search and separator"]
    assert f"more than the {MAX_DIFF_BLOCKS} accepted" in errors["blocks matching nothing"]
    assert "none of the 1 SEARCH block(s) matched" in errors["one huge search"]
    assert "longer than 65,536 characters" in errors["growing replace"]


def test_unclosed_think_is_reasoning_to_the_end():
    # A model cut off while thinking gave no program, whatever drafts its thoughts hold.
    draft = "<think>First draft:\n" + REWRITE
    assert parse_answer(PARENT, draft).error.startswith("the answer holds only reasoning")
    # Tags are matched in any case, and a <think> inside a section belongs to it.
    nested = "<THINK>a <think> b</Think> c</think>\n" + REWRITE
    assert parse_answer(PARENT, nested).kind == "rewrite"
    closed = "<think>draft\n```python\ndef score(traj):\n    return 9.0\n```\n</think>\n" + REWRITE
    assert "w_listener" in parse_answer(PARENT, closed).source


def test_too_many_blocks_or_too_large_a_child_are_refused():
    block = "<<<<<<< SEARCH\n    return s\n=======\n    return s + 1\n>>>>>>> REPLACE\n"
    assert parse_answer(PARENT, block).source is not None
    many = parse_answer(PARENT, block * (MAX_DIFF_BLOCKS + 1))
    assert many.source is None and f"more than the {MAX_DIFF_BLOCKS}" in many.error
    big = "<<<<<<< SEARCH\n    return s\n=======\n" + "    s += 1\n" * 7000 + "    return s\n"
    big += ">>>>>>> REPLACE\n"
    parsed = parse_answer(PARENT, big, max_chars=None)
    assert parsed.source is None and "the sandbox's limit" in parsed.error


def test_parse_answer_refuses_an_answer_over_its_cap():
    parsed = parse_answer(PARENT, REWRITE + " " * 1000, max_chars=1000)
    assert parsed.source is None
    assert parsed.error.startswith(f"the answer is {len(REWRITE) + 1000:,} characters")
    assert "max_answer_chars" in parsed.error
    assert parse_answer(PARENT, REWRITE, max_chars=1000).source is not None


def test_answer_over_the_configured_cap_is_refused_unparsed(stub, train):
    """An answer that never ends (a valid program, then ``<think>`` for ever, 256 MB if
    nobody leaves): the stream is closed just past the cap and the answer refused
    unparsed. Nothing here depends on the machine's pace: the client leaves after the
    cap's worth of events (about 2 MB, plus what the sockets buffer), far below what the
    stub would send, and the request's deadline is far beyond any machine's need."""
    endless = Reply.endless_stream(REWRITE, "<think>")
    proposer, p = _propose(stub, train, endless, max_answer_chars=50_000, timeout=600.0)
    (record,) = stub.wait_hostile()
    assert record.client_left and record.sent < 96 * 1024 * 1024
    assert p.source is None
    assert "over the cap of 50,000 ([llm] max_answer_chars); refused unparsed" in p.error
    assert p.error.startswith("the answer is at least 50,")
    # What is kept to look at is the head of the answer, never more than the cap.
    assert p.raw_response == (REWRITE + "<think>" * 50_000)[:50_000]
    assert proposer.stats()["bad_answers"] == 1 and not proposer.endpoint_dead
    _, ok = _propose(stub, train, REWRITE, max_answer_chars=50_000)
    assert ok.error is None and ok.source is not None


def test_a_whole_answer_over_the_cap_is_refused_alike(stub, train):
    answer = REWRITE + "<think>" * 10_000
    for stream in (True, False):
        spec = ModelSpec("stub-coder", max_tokens=100_000, stream=stream)
        _, p = _propose(stub, train, answer, models=(spec,), max_answer_chars=20_000)
        assert p.source is None and "over the cap of 20,000" in p.error
        assert p.raw_response == answer[:20_000]


#: Answers nothing can decode; each costs one candidate with a one-line note.
UNDECODABLE = {
    "lone surrogate": (Reply.text("Idea: \ud800\n" + REWRITE), "lone surrogate"),
    "invalid UTF-8": (
        Reply.raw(b'data: {"choices": [{"delta": {"content": "\xc3("}}]}\n\n', "text/event-stream"),
        "not valid UTF-8",
    ),
    "non-JSON event": (
        Reply.raw(b"data: {\"choices\": [\n\ndata: [DONE]\n\n", "text/event-stream"),
        "not JSON",
    ),
}


@pytest.mark.parametrize("name", sorted(UNDECODABLE))
def test_an_undecodable_answer_costs_one_candidate_with_a_one_line_note(stub, train, name):
    reply, says = UNDECODABLE[name]
    proposer, p = _propose(stub, train, reply)
    assert p.source is None and says in p.error
    assert "\n" not in p.error and p.error.isprintable()
    assert not proposer.endpoint_dead  # one bad answer is not a dead endpoint
    _, ok = _propose(stub, train, REWRITE)
    assert ok.error is None and ok.source is not None


def test_max_answer_chars_from_the_llm_table():
    table = tomllib.loads('model = "m"\nmax_answer_chars = 12000\n')
    assert LLMProposerConfig.from_dict(table).max_answer_chars == 12_000
    assert LLMProposerConfig.from_dict({"model": "m"}).max_answer_chars == 200_000
    assert LLMProposerConfig.from_dict(table).to_dict()["max_answer_chars"] == 12_000
    with pytest.raises(ConfigError, match="max_answer_chars"):
        LLMProposerConfig.from_dict({"model": "m", "max_answer_chars": 10})


# --------------------------------------------------------------------------- the key


def _b64(data: str, urlsafe: bool = False) -> str:
    enc = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    return enc(data.encode()).decode()


#: The key echoed in every form the scrub must catch, each inside ordinary text.
ECHOES = {
    "reversed": KEY[::-1],
    "run of 12": KEY[9 : 9 + FRAGMENT],
    "hex": KEY.encode().hex(),
    "HEX with separators": ":".join(f"{b:02X}" for b in KEY.encode()),
    "hex escapes": "".join(f"\\x{b:02x}" for b in KEY.encode()),
    "base64 at offset 0": _b64(KEY),
    "base64 at offset 1": _b64("A" + KEY + " trailing"),
    "base64 at offset 2": _b64("Au" + KEY + " trailing"),
    "url-safe base64": _b64("xyz" + KEY, urlsafe=True),
    "percent-encoded": "".join(f"%{b:02X}" for b in KEY.encode()),
    "split by spaces": " ".join(KEY[i : i + 3] for i in range(0, len(KEY), 3)),
    "split by newlines": "\n".join(KEY[i : i + 5] for i in range(0, len(KEY), 5)),
    "zero-width joins": "\u200b".join(KEY),
}


def _fragments_of(text: str) -> set[str]:
    return {text[i : i + FRAGMENT] for i in range(len(text) - FRAGMENT + 1)}


def test_every_run_of_the_key_is_found_in_every_encoding():
    scrubber = KeyScrubber([KEY])
    for name, echo in ECHOES.items():
        assert scrubber.holds_fragment(f"Sure: {echo} as asked."), name
    # Every 12-character run, base64-encoded at every position inside a longer text.
    for start in range(len(KEY) - FRAGMENT + 1):
        run = KEY[start : start + FRAGMENT]
        for pad in range(6):
            for urlsafe in (False, True):
                assert scrubber.holds_fragment(_b64("p" * pad + run + "q" * pad, urlsafe))
        assert scrubber.holds_fragment("".join(f"%{b:02x}" for b in run.encode()))
        assert scrubber.holds_fragment(urllib.parse.quote(run[::-1], safe=""))
    # Shorter runs and ordinary text are not the key.
    assert not scrubber.holds_fragment(KEY[:FRAGMENT - 1] + " and " + KEY[-(FRAGMENT - 1) :])
    assert not scrubber.holds_fragment(REWRITE + PARENT + _b64(REWRITE) + REWRITE.encode().hex())
    text, withheld = scrubber.scan(f"header Bearer {KEY}.")
    assert text == "header Bearer [redacted]." and not withheld


@pytest.mark.parametrize("name", sorted(ECHOES))
def test_an_echoed_key_is_never_kept(stub, train, name):
    echo = ECHOES[name]
    answer = f"Idea: the key was {echo}\n" + REWRITE.replace("return s", f"return s  # {echo}")
    _, p = _propose(stub, train, answer)
    assert p.source is None
    assert "held the API key" in p.error and "not parsed" in p.error
    assert p.raw_response.startswith("[withheld:") and f"{len(answer):,} characters" in (
        p.raw_response
    )
    stored = json.dumps([p.raw_response, p.error, p.description, p.source])
    assert KEY not in stored and echo not in stored
    assert not (_fragments_of(KEY) | _fragments_of(KEY[::-1])) & _fragments_of(stored)


def test_endpoint_error_texts_are_scrubbed(stub, train, caplog):
    echo = ECHOES["base64 at offset 1"]
    proposer, p = _propose(stub, train, Reply.status(400, f"bad request: auth {echo} rejected"))
    assert p.source is None
    assert p.error.startswith(f"LLM endpoint error (stub-coder at {stub.base_url}): [withheld:")
    assert echo not in p.error and echo not in proposer.last_error
    # The client libraries log the server's text too: their log lines are scrubbed alike.
    assert "HTTP 400" in caplog.text or "400" in caplog.text
    assert echo not in caplog.text
    _, plain = _propose(stub, train, Reply.status(400, "context too long"))
    assert plain.error.endswith("HTTP 400: context too long")


def test_the_lineage_records_refusals_and_keeps_no_trace_of_the_key(tmp_path, small_corpus):
    # A real search: answers echo the key in several encodings, an error body echoes it
    # too; nothing of it may reach any file of the run. One answer is over the [llm] cap.
    echoes = [ECHOES[k] for k in ("reversed", "base64 at offset 2", "hex", "percent-encoded")]
    replies = [Reply.text(f"Idea: {e}\n" + REWRITE) for e in echoes]
    replies.append(Reply.status(500, f"upstream said {ECHOES['url-safe base64']}"))
    huge = REWRITE + "<think>" * 150_000
    replies.append(Reply.text(huge))
    undecodable = [reply for reply, _ in UNDECODABLE.values()]
    replies += undecodable
    config = tmp_path / "llm.toml"
    config.write_text("[llm]\nmax_answer_chars = 20000\n")
    with StubLLMServer(api_key=KEY, default=Reply.text(REWRITE)) as server:
        server.script(*replies)
        runs = tmp_path / "runs"
        evolve(
            runs, small_corpus, "--proposer", "llm", "--llm-model", "stub-coder",
            "--llm-base-url", server.base_url, "--optuna-trials", "0", "--batch", "1",
            "--config", str(config), run_id="leak", budget=2 + len(replies) + 1,
            env=_env(MONSEARCH_LLM_API_KEY=KEY),
        )  # fmt: skip
    with LineageStore(runs / "leak" / "lineage.sqlite", readonly=True) as store:
        records = store.records()
    (capped,) = [r for r in records if "over the cap" in r.artifacts.get("proposal_error", "")]
    assert capped.artifacts["proposal_error"].startswith("the answer is at least 20,")
    assert "over the cap of 20,000" in capped.artifacts["proposal_error"]
    assert capped.source is None and capped.artifacts["raw_response"] == huge[:20_000]
    # Each answer nothing could decode is one failed candidate with a one-line note.
    for _, says in UNDECODABLE.values():
        (bad,) = [r for r in records if says in r.artifacts.get("proposal_error", "")]
        assert bad.source is None and "\n" not in bad.artifacts["proposal_error"]
    withheld = [r for r in records if "not parsed" in r.artifacts.get("proposal_error", "")]
    assert len(withheld) == len(echoes)
    assert all(r.artifacts["raw_response"].startswith("[withheld:") for r in withheld)
    failed = [
        r for r in records
        if "LLM endpoint error" in r.artifacts.get("proposal_error", "")
        and not any(says in r.artifacts["proposal_error"] for _, says in UNDECODABLE.values())
    ]  # fmt: skip
    assert len(failed) == 1 and "[withheld:" in failed[0].artifacts["proposal_error"]
    assert any(r.ok and r.proposer == "llm" for r in records)  # the search went on
    forbidden = _fragments_of(KEY) | _fragments_of(KEY[::-1])
    for path in (runs / "leak").rglob("*"):
        if path.is_file():
            data = path.read_bytes().decode("latin-1")
            assert not any(e[2:-2] in data for e in echoes), path.name
            assert ECHOES["url-safe base64"][2:-2] not in data, path.name
            assert not forbidden & _fragments_of(data), path.name


# --------------------------------------------------------------------------- the terminal

#: Model ids a hostile server lists: escape sequences, a forged line of monsearch's own,
#: rich markup (an unbalanced closing tag, a terminal hyperlink).
HOSTILE_IDS = (
    "ok-model",
    "\x1b[2J\x1b]0;owned\x07clear",
    "x\nerror: forged line",
    "[/dim] [link=http://evil.example]click[/link]",
    "\u202eevil",
)


def _evolve_shown(tmp_path, corpus, server, *args: str) -> subprocess.CompletedProcess[str]:
    """``monsearch evolve`` as a user runs it (not --quiet: its stages reach stderr)."""
    cmd = [
        sys.executable, "-m", "monsearch", "evolve", "--corpus", str(corpus),
        "--runs-dir", str(tmp_path / "runs"), "--run-id", "shown", "--budget", "3",
        "--workers", "1", "--optuna-trials", "0", "--proposer", "llm",
        "--llm-model", "stub-coder", "--llm-base-url", server.base_url, *args,
    ]  # fmt: skip
    env = _env(COLUMNS="200")
    env.pop("MONSEARCH_LLM_API_KEY", None)
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)


def _no_raw_server_text(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert "\x1b]0;owned" not in stderr and "\x1b[2J" not in stderr and "\u202e" not in stderr
    assert not any(line.startswith("error: forged") for line in stderr.splitlines()), stderr


def test_a_servers_model_list_reaches_the_terminal_escaped(tmp_path, small_corpus):
    """The start-up probe's warning names the listed models: each one escaped, on the
    warning's own line; rich markup in an id is text, not markup (an unbalanced tag
    used to end the command in a traceback)."""
    refuse = Reply.status(404, "no such model")  # the run stops at its first proposal
    with StubLLMServer(models=HOSTILE_IDS, default=refuse) as server:
        proc = _evolve_shown(tmp_path, small_corpus, server)
    _no_raw_server_text(proc.stderr)
    shown = " ".join(proc.stderr.split())  # as read, whatever the console's wrapping
    assert shown.count("not among the models") == 1
    assert "\\x1b[2J\\x1b]0;owned\\x07clear" in shown
    assert "x\\nerror: forged line" in shown and "[/dim] [link=http://evil.example]" in shown


def test_a_servers_error_body_reaches_the_terminal_escaped(tmp_path, small_corpus):
    body = "denied\x1b[2J\x1b]0;owned\x07\nerror: forged line \u202eevil".encode()
    with StubLLMServer(models_reply=Reply.raw(body, "text/plain", code=401)) as server:
        proc = _evolve_shown(tmp_path, small_corpus, server)
    assert proc.returncode == 2
    _no_raw_server_text(proc.stderr)
    shown = " ".join(proc.stderr.split())
    assert "refused the API key" in shown
    assert "denied\\x1b[2J\\x1b]0;owned\\x07\\nerror: forged line \\u202eevil" in shown
