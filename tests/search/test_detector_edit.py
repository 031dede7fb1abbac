"""The detector contract (``[llm] edit = "detector"``) and its repair turn, against a
scripted OpenAI-compatible server on 127.0.0.1 and the real sandbox on real train views.

A parent in the convention gets a short prompt asking for one ``detect_<name>(traj)``;
the answer is checked by the sandbox's rules, run on train in the sandbox, wired into
the generated combiner with a fitted weight; an unusable answer gets one repair turn
showing the exact error before the candidate counts as failed.
"""

from __future__ import annotations

import dataclasses
import random
import re

import numpy as np
import pytest
from llm_stub_server import Reply, StubLLMServer

from monsearch.sandbox.check import check_program
from monsearch.sandbox.evaluate import SandboxPool
from monsearch.search.config import ConfigError
from monsearch.search.detector_edit import API_REFERENCE, detector_system_message
from monsearch.search.llm_proposer import LLMProposer, LLMProposerConfig, ModelSpec
from monsearch.search.proposal import ProgramInfo, ProposalContext, TrainData
from monsearch.strategies.baseline import BASELINE
from monsearch.strategies.convention import parse_program
from monsearch.synth.generate import iter_trajectories
from monsearch.views.build import build_views

GOOD = '''Here it is.
```python
def detect_deletes(traj):
    n = 0
    for r in traj.requests:
        if r.method == "DELETE":
            n += r.repeat
    return min(n, 5)
```
'''

IMPORTS = '''```python
import os

def detect_deletes(traj):
    n = 0
    for r in traj.requests:
        if r.method == os.environ.get("METHOD", "DELETE"):
            n += 1
    return n
```'''

#: An import the sandbox's globals stand in for: rewritten, no repair turn needed.
HABIT_IMPORTS = '''```python
import re
import math

def detect_deletes(traj):
    n = 0
    for r in traj.requests:
        if re.search("DELETE", r.method):
            n += 1
    return math.log1p(n)
```'''

#: Falls off its end on quiet runs: None there, which the sandbox refuses.
NO_FINAL_RETURN = '''```python
from typing import *

def detect_deletes(traj):
    n = 0
    for r in traj.requests:
        if r.method == "DELETE":
            n += r.repeat
    if n > 0:
        return min(n, 5)
```'''

BAD_FIELD = '''```python
def detect_secret_repeats(traj):
    n = 0
    for f in traj.secrets:
        n += f.repeat
    return n
```'''

NEVER = '''```python
def detect_nothing(traj):
    n = 0
    for r in traj.requests:
        if r.method == "BREW" and re_search("(?i)auth.login", r.body):
            n += 1
    return n
```'''


@pytest.fixture(scope="module")
def sandboxed_train():
    trajs = [t for chunk in iter_trajectories(160, 5) for t in chunk]
    labels = np.array([bool(t.label and t.label.is_failure) for t in trajs])
    train = TrainData(
        trajectories=trajs,
        views=build_views(trajs),
        labels=labels,
        tasks=[t.task for t in trajs],
        dimensions=[str(t.dimension) for t in trajs],
        ids=[t.id for t in trajs],
    )
    with SandboxPool(trajs, workers=1, cache_dir=None) as pool:
        cache: dict[str, tuple] = {}

        def train_run(source: str):
            if source not in cache:
                result = pool.evaluate(source)
                cache[source] = (
                    (np.asarray(result.scores, dtype=float), None)
                    if result.ok
                    else (None, f"{result.status}: {result.message}")
                )
            return cache[source]

        yield train, train_run


def _context(sandboxed_train) -> ProposalContext:
    train, train_run = sandboxed_train
    return ProposalContext(
        train=train,
        score_on_train=lambda s: train_run(s)[0],
        seed=0,
        seq=1,
        train_run=train_run,
    )


PARENT = ProgramInfo("p-base", BASELINE, 0.1, {}, operator="seed")


def _proposer(stub: StubLLMServer, **kw) -> LLMProposer:
    spec = kw.pop("spec", ModelSpec("stub-small"))
    cfg = LLMProposerConfig(models=(spec,), base_url=stub.base_url, timeout=10.0, **kw)
    return LLMProposer(cfg, env={})


def _propose(proposer, sandboxed_train, seed: int = 3):
    return proposer.propose(PARENT, [], random.Random(seed), _context(sandboxed_train))


def test_a_detector_answer_is_wired_into_the_convention(sandboxed_train):
    with StubLLMServer() as stub:
        stub.script(Reply.text(GOOD, usage=(700, 60)))
        proposer = _proposer(stub)
        lines: list[str] = []
        proposer.on_progress = lines.append  # evolve's progress line while it streams
        p = _propose(proposer, sandboxed_train)
        (body,) = stub.chat_bodies
    assert lines and re.fullmatch(r"llm stub-small: \d+ tokens, [\d.]+ tok/s, \d+ s of 300", lines[-1])
    assert p.error is None, p.error
    assert p.operator == "llm_detector"
    child = parse_program(p.source)
    assert child is not None and check_program(p.source).ok
    names = [d.name for d in child.detectors]
    assert names[:4] == ["secrets", "destructive", "rate_limited", "listener"]
    assert names[4] == "llm_deletes"  # renamed: the lineage shows who wrote it
    assert child.param("w_llm_deletes") > 0
    assert 'PARAMS["w_llm_deletes"] * detect_llm_deletes(traj)' in p.source
    assert re.search(r"added detector llm_deletes \(train: fires on \d+ failures / \d+ passes\)",
                     p.description)  # fmt: skip
    # The request: the detector contract, short, with a detector-sized max_tokens.
    assert body["max_tokens"] == 1024 and body["stream"] is True
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    assert system == detector_system_message()
    assert len(system) + len(user) < 7_000
    for det in ("detect_secrets", "detect_destructive", "detect_rate_limited", "detect_listener"):
        assert re.search(rf"- {det}: \d+ / \d+", user)
    assert "Failures the monitor misses on train" in user
    # The stream ended at the fence's close ("client_stop"), before the usage event:
    # the answer's tokens are its chunks (the stub sends 4 characters a chunk).
    assert p.usage["estimated"] == 1
    assert p.usage["completion_tokens"] == -(-GOOD.rindex("```") // 4) + 1


@pytest.mark.parametrize(
    ("first", "shown"),
    [
        (IMPORTS, "line 1: imports are not allowed"),
        (BAD_FIELD, "no field 'repeat'"),
        (NEVER, "returned 0 on every one of the"),
        ("I think the monitor is fine.", "no code found"),
    ],
)
def test_an_unusable_answer_gets_one_repair_turn_with_the_exact_error(
    sandboxed_train, first, shown
):
    with StubLLMServer() as stub:
        stub.script(Reply.text(first, usage=(700, 50)), Reply.text(GOOD, usage=(900, 60)))
        proposer = _proposer(stub, spec=ModelSpec("stub-small"))
        p = _propose(proposer, sandboxed_train)
        bodies = stub.chat_bodies
    assert len(bodies) == 2
    repair = bodies[1]["messages"]
    assert repair[:2] == bodies[0]["messages"]
    assert repair[2] == {"role": "assistant", "content": first}
    assert repair[3]["role"] == "user" and shown in repair[3]["content"]
    # Asked again at the same settings a small model repeats itself: another seed, warmer.
    assert bodies[1]["temperature"] > bodies[0]["temperature"]
    assert bodies[1]["seed"] != bodies[0]["seed"]
    assert p.error is None and p.operator == "llm_detector+repair"
    assert "detect_llm_deletes" in p.source
    assert p.raw_response == first + "\n\n--- repair turn 1 ---\n" + GOOD
    # Tokens of both turns; the second ended at its fence, so its count is its chunks.
    assert p.usage["estimated"] == 1
    assert p.usage["completion_tokens"] >= -(-GOOD.rindex("```") // 4)
    assert p.usage["prompt_tokens"] >= 700
    stats = proposer.stats()
    assert (stats["repair_turns"], stats["repaired"], stats["children"]) == (1, 1, 1)


def test_a_failed_repair_counts_one_failed_candidate(sandboxed_train):
    with StubLLMServer() as stub:
        stub.script(Reply.text(IMPORTS), Reply.text(NEVER))
        proposer = _proposer(stub)
        p = _propose(proposer, sandboxed_train)
        assert len(stub.chat_bodies) == 2
    assert p.source is None and "returned 0 on every one" in p.error
    assert proposer.stats()["bad_answers"] == 1 and proposer.stats()["repaired"] == 0
    with StubLLMServer() as stub:  # repair_turns = 0: one request, the first error
        stub.script(Reply.text(IMPORTS), Reply.text(GOOD))
        p = _propose(_proposer(stub, repair_turns=0), sandboxed_train)
        assert len(stub.chat_bodies) == 1
    assert p.source is None and "imports are not allowed" in p.error


def test_a_detector_that_fires_on_passes_as_often_is_sent_back(sandboxed_train):
    everywhere = "```python\ndef detect_any_get(traj):\n    return len(traj.requests)\n```"
    with StubLLMServer() as stub:
        stub.script(Reply.text(everywhere), Reply.text(GOOD))
        p = _propose(_proposer(stub, spec=ModelSpec("stub-small")), sandboxed_train)
        shown = stub.chat_bodies[1]["messages"][-1]["content"]
    assert "fires on every training run" in shown or "no more often on failures" in shown
    assert p.error is None


def test_max_tokens_and_edit_mode_are_per_model(sandboxed_train):
    with StubLLMServer() as stub:
        stub.default = Reply.text(GOOD)
        for spec in (ModelSpec("m", max_tokens=300), ModelSpec("m", edit="diff"),
                     ModelSpec("m", edit="full")):
            _propose(_proposer(stub, spec=spec, repair_turns=0), sandboxed_train)
        bodies = stub.chat_bodies
    assert [b["max_tokens"] for b in bodies[:3]] == [300, 4096, 4096]
    assert "detector functions" in bodies[0]["messages"][0]["content"]
    assert "SEARCH/REPLACE" in bodies[1]["messages"][1]["content"]
    assert "complete new program in a single" in bodies[2]["messages"][1]["content"]


def test_the_system_message_is_the_same_for_every_request(sandboxed_train):
    """So a server's prompt cache reads the long fixed part once."""
    with StubLLMServer() as stub:
        stub.default = Reply.text(GOOD)
        proposer = _proposer(stub)
        for seed in range(4):
            _propose(proposer, sandboxed_train, seed=seed)
        systems = {b["messages"][0]["content"] for b in stub.chat_bodies}
        users = {b["messages"][1]["content"] for b in stub.chat_bodies}
    assert len(systems) == 1 and len(users) > 1


def test_the_compact_api_reference_names_only_real_view_fields():
    import monsearch.views.build as view_module

    schema = view_module.__doc__
    fields = set(re.findall(r"(?:^|[\s(])\.([a-z_]+)", API_REFERENCE, re.MULTILINE))
    fields |= set(re.findall(r"\btraj\.([a-z_]+)", API_REFERENCE))
    assert {"requests", "secrets", "method", "host_class", "statuses", "where"} <= fields
    missing = sorted(f for f in fields if not re.search(rf"\b{f}\b", schema))
    assert missing == []
    helpers = re.findall(r"\b(re_\w+|json_parse|url_parse|tokens|entropy|safe_div|mean)\(", API_REFERENCE)
    from monsearch.sandbox.helpers import HELPERS

    assert helpers and all(h in HELPERS for h in helpers)


def test_a_parent_outside_the_convention_gets_the_diff_contract(sandboxed_train):
    plain = 'def score(traj):\n    return float(len(traj.requests))\n'
    with StubLLMServer() as stub:
        stub.script(Reply.text("```python\ndef score(traj):\n    return 2.0 * len(traj.secrets)\n```"))
        p = _proposer(stub).propose(
            ProgramInfo("p-plain", plain, 0.1, {}), [], random.Random(1), _context(sandboxed_train)
        )
        body = stub.chat_bodies[0]
    assert p.error is None and p.operator == "llm_rewrite"
    assert "SEARCH/REPLACE" in body["messages"][1]["content"]


def test_a_whole_program_answer_is_taken_as_a_rewrite(sandboxed_train):
    program = "```python\nPARAMS = {\"w\": 1.0}\n\n\ndef score(traj):\n    return PARAMS[\"w\"] * len(traj.listeners)\n```"
    with StubLLMServer() as stub:
        stub.script(Reply.text(program))
        p = _propose(_proposer(stub), sandboxed_train)
    assert p.error is None and p.operator == "llm_rewrite"
    assert "len(traj.listeners)" in p.source


def test_a_detector_that_fires_on_nothing_is_told_where_its_strings_live(sandboxed_train):
    """The repair message of a detector that fired on nothing says, for each string it
    tests, in which fields of train runs that string occurs: a small model looking for
    a login in request bodies learns it lives in request paths."""
    with StubLLMServer() as stub:
        stub.script(Reply.text(NEVER), Reply.text(GOOD))
        _propose(_proposer(stub, spec=ModelSpec("stub-small")), sandboxed_train)
        repair = stub.chat_bodies[1]["messages"][-1]["content"]
    assert "Where the strings your code tests occur" in repair
    assert "'BREW': in no field of any run" in repair
    where = re.search(r"'\(\?i\)auth\.login': ([^;]*)", repair)
    assert where and "in r.path of" in where.group(1) and "r.body" not in where.group(1)


def test_a_rewrite_never_targets_a_mined_detector(sandboxed_train, monkeypatch):
    """Only detectors a person or a model wrote are offered for a rewrite: a mined one
    (``m_<family>_<id>``) is a generated matcher a small model cannot improve by reading."""
    from monsearch.search import detector_edit

    program = parse_program(BASELINE)
    context = _context(sandboxed_train)
    hits = {"secrets": (5, 50), "m_host_0badc0de": (1, 400), "destructive": (40, 3)}
    monkeypatch.setattr(detector_edit, "detector_hits", lambda program, context: hits)
    targets = {
        detector_edit.build_detector_task(
            PARENT, program, context, random.Random(seed), rewrite_share=1.0
        ).target
        for seed in range(8)
    }
    assert targets == {"secrets"}
    hits.pop("secrets")
    task = detector_edit.build_detector_task(
        PARENT, program, context, random.Random(0), rewrite_share=1.0
    )
    assert task.kind == "new" and task.target is None


def test_mined_detectors_are_counted_not_named_in_the_prompt(sandboxed_train, monkeypatch):
    """A small model copies the names it is shown: a mined detector's generated name
    (``detect_m_host_…``) is not shown, only how many there are."""
    from monsearch.search import detector_edit

    program = parse_program(BASELINE)
    mined = detector_edit.Detector(
        "m_host_0badc0de", 'def detect_m_host_0badc0de(traj):\n    return 0\n'
    )
    program = dataclasses.replace(program, detectors=(*program.detectors, mined))
    task = detector_edit.build_detector_task(
        PARENT, program, _context(sandboxed_train), random.Random(0)
    )
    assert "m_host_0badc0de" not in task.user
    assert "- detect_secrets:" in task.user
    assert "- and 1 generated string matchers (not shown)" in task.user


def test_a_fresh_follow_up_asks_the_same_prompt_anew(sandboxed_train):
    """``retry = "fresh"``: the follow-up turn asks the same prompt anew with another
    seed (at the model's own temperature) instead of showing the model its error."""
    with StubLLMServer() as stub:
        stub.script(Reply.text(NEVER), Reply.text(GOOD))
        proposer = _proposer(stub, spec=ModelSpec("stub-small", retry="fresh"))
        p = _propose(proposer, sandboxed_train)
        first, second = stub.chat_bodies
    assert second["messages"] == first["messages"]
    assert second["seed"] != first["seed"] and second["temperature"] == first["temperature"]
    assert p.error is None and p.operator == "llm_detector+fresh"
    assert p.raw_response.startswith(NEVER) and "\n--- fresh turn 1 ---\n" in p.raw_response
    assert proposer.stats()["repaired"] == 1
    with pytest.raises(ConfigError, match="retry .later."):
        LLMProposerConfig(models=(ModelSpec("s", retry="later"),))


POSTS = '''```python
def detect_many_posts(traj):
    n = 0
    for r in traj.requests:
        if r.method == "POST":
            n += 1
    return 1.0 if n > 2 else 0.0
```'''


def test_a_broad_detector_leaves_the_oracle_band_at_the_parents_benign_mass(sandboxed_train):
    # A detector firing on a third of the passes lifts them into a band set in score
    # units; on val that child spent the judge on runs its parent never escalated and
    # went over the cap rho. The band follows the benign scores instead.
    from monsearch.search.operators import band_mass

    train, train_run = sandboxed_train
    y = np.asarray(train.labels, dtype=bool)
    base = parse_program(BASELINE)
    parent_scores = train_run(BASELINE)[0]
    # An open-topped band over the top tenth of the parent's benign runs.
    lo, hi = float(np.quantile(parent_scores[~y], 0.9)), 1000.0
    parent = dataclasses.replace(base, oracle_band=True).with_params(
        {"band_lo": lo, "band_hi": hi, "w_oracle": 2.0}
    )
    from monsearch.strategies.convention import render

    info = ProgramInfo("p-band", render(parent), 0.1, {}, operator="seed")
    from monsearch.search.operators import MAX_BAND_MASS

    allowed = max(band_mass(train_run(info.source)[0], y, lo, hi), MAX_BAND_MASS)
    with StubLLMServer() as stub:
        stub.script(Reply.text(POSTS))
        p = _proposer(stub).propose(info, [], random.Random(3), _context(sandboxed_train))
    assert p.error is None, p.error
    assert "oracle band moved" in p.description
    child = parse_program(p.source)
    child_scores = train_run(p.source)[0]
    assert band_mass(child_scores, y, lo, hi) > allowed * 1.05  # where the old band was
    new = (child.param("band_lo"), child.param("band_hi"))
    assert new != (lo, hi) and band_mass(child_scores, y, *new) <= allowed * 1.05


@pytest.mark.parametrize(
    ("answer", "notes", "reads"),
    [
        (HABIT_IMPORTS, ["import re, math dropped (re.search -> re_search)"],
         're_search("DELETE", r.method)'),
        (NO_FINAL_RETURN, ["from typing import * dropped",
                             "return 0 added at the end of detect_deletes"],
         "        return min(n, 5)\n    return 0\n"),
    ],
)  # fmt: skip
def test_what_has_one_meaning_is_fixed_without_a_repair_turn(sandboxed_train, answer, notes, reads):
    """An import of what the sandbox predefines, a detector that can end without a
    return: fixed in place and said in the description, no repair turn asked."""
    with StubLLMServer() as stub:
        stub.script(Reply.text(answer), Reply.text(GOOD))
        p = _propose(_proposer(stub), sandboxed_train)
        assert len(stub.chat_bodies) == 1  # no repair turn
    assert p.error is None, p.error
    assert all(n in p.description for n in notes)
    assert reads in p.source and "import" not in p.source and "typing" not in p.source
    assert check_program(p.source).ok


@pytest.mark.parametrize(
    "code",
    [
        "import re\n\ndef detect_x(traj):\n    return 1 if re.compile('a') else 0\n",
        "import json\nfrom os import path\n\ndef detect_x(traj):\n    return 0\n",
        "import re as regex\n\ndef detect_x(traj):\n    return 0\n",
    ],
)
def test_imports_the_globals_cannot_stand_for_are_left_to_the_rules(code):
    from monsearch.search.answer_repair import predefined_imports

    assert predefined_imports(code) == (code, None)


@pytest.mark.parametrize(
    ("code", "note", "reads"),
    [
        ("import re_search\n\ndef detect_x(traj):\n    return 1 if re_search('a', 'b') else 0\n",
         "import re_search dropped", "re_search('a', 'b')"),
        ("from math import sqrt, log1p\n\ndef detect_x(traj):\n    return sqrt(4) + log1p(0)\n",
         "from math import sqrt, log1p dropped (sqrt -> math.sqrt)", "math.sqrt(4) + log1p(0)"),
        ("from re import search\n\ndef detect_x(traj):\n    return 1 if search('a', traj.task) else 0\n",
         "from re import search dropped (search -> re_search)", "re_search('a', traj.task)"),
    ],
)  # fmt: skip
def test_imports_of_what_the_globals_provide_are_taken_out(code, note, reads):
    from monsearch.search.answer_repair import predefined_imports

    fixed, said = predefined_imports(code)
    assert said == note and reads in fixed and "import" not in fixed
    assert fixed.count("\n") == code.count("\n")  # line numbers stay the answer's own
    assert check_program(fixed + "\n\ndef score(traj):\n    return detect_x(traj)\n").ok


#: Read off the wrong object: a step's requests carry the host class.
STEP_AS_REQUEST = '''```python
def detect_own_hosts(traj):
    n = 0
    for r in traj.steps:
        if r.host_class in ("own", "external"):
            n += 1
    return min(n, 5)
```'''


def test_a_field_read_off_the_wrong_object_is_told_where_it_lives(sandboxed_train):
    """The repair message names the object the code read (a step), the object that has
    the field (a request, with the loop that reaches it) and the answer's line."""
    with StubLLMServer() as stub:
        stub.script(Reply.text(STEP_AS_REQUEST), Reply.text(GOOD))
        p = _propose(_proposer(stub, spec=ModelSpec("stub-small")), sandboxed_train)
        repair = stub.chat_bodies[1]["messages"][-1]["content"]
    assert p.error is None
    assert "A step has no field 'host_class'; host_class is a request's" in repair
    assert "`for r in traj.requests:`" in repair and "`for r in step.requests:`" in repair
    assert 'line 4: `if r.host_class in ("own", "external"):`' in repair


@pytest.mark.parametrize(
    ("error", "code", "says"),
    [
        ("AttributeError: no field 'jwt' (fields: field, kind, step, value, where)",
         "def detect_x(traj):\n    return sum(1 for f in traj.secrets if f.jwt)\n",
         "A finding has no field 'jwt': 'jwt' is a value of a finding's kind, so test "
         '`f.kind == "jwt"`. Your line 2'),
        ("AttributeError: no field 'observer' (fields: command, index, listeners, "
         "observation, repeat, requests, secrets, sleeps, statuses, think)",
         "def detect_x(traj):\n    return 0\n",
         "A step has no field 'observer': did you mean .observation?"),
        ("AttributeError: no field 'request_body' (fields: command, index, listeners, "
         "observation, repeat, requests, secrets, sleeps, statuses, think)",
         "def detect_x(traj):\n    return 0\n",
         "A step has no field 'request_body' ('body' is a field, but not of it); body is a "
         "request's"),
        ("AttributeError: no field 'command' (fields: body, host, host_class, method, path, "
         "repeat, secrets, status, url)",
         "def detect_x(traj):\n    return 0\n",
         "A request has no field 'command'; command is a step's: `for step in traj.steps:`"),
        ("error: score() failed on 9 of 9. First: KeyError: sweep_limit",
         "def detect_x(traj):\n    return PARAMS['sweep_limit']\n",
         "PARAMS has no key 'sweep_limit': write the number into the function instead. "
         "Your line 2: `return PARAMS['sweep_limit']`."),
        ("TypeError: unsupported operand", "def detect_x(traj):\n    return 0\n", ""),
    ],
)  # fmt: skip
def test_field_errors_name_where_the_field_lives(sandboxed_train, error, code, says):
    import ast

    from monsearch.search.answer_repair import field_error_hint

    train, _ = sandboxed_train
    hint = field_error_hint(error, ast.parse(code).body[0], code, train.views)
    assert says in hint if says else hint == ""


def test_the_rules_claims_about_which_object_has_which_field_hold(sandboxed_train):
    """The system message says a step has no .method/.url/.host_class/.body, a request
    no .command/.think/.observation, a finding no .repeat: true of the real views."""
    train, _ = sandboxed_train
    steps = [s for v in train.views for s in v.steps]
    requests = [r for v in train.views for r in v.requests]
    findings = [f for v in train.views for f in v.secrets]
    assert steps and requests and findings
    assert not any(k in s for s in steps for k in ("method", "url", "host_class", "body"))
    assert all(k in r for r in requests for k in ("method", "url", "host_class", "body"))
    assert not any(k in r for r in requests for k in ("command", "think", "observation"))
    assert not any("repeat" in f for f in findings)
    assert any(f.kind == "jwt" for f in findings)
    assert "a step has no .method" in detector_system_message()


@pytest.mark.parametrize(
    ("code", "adds"),
    [
        ("def detect_x(traj):\n    if traj.n_steps > 3:\n        return 1\n    else:\n        return 0\n", False),
        ("def detect_x(traj):\n    for r in traj.requests:\n        return 1\n", True),
        ("def detect_x(traj):\n    if traj.n_steps > 3:\n        return 1\n    elif traj.n_steps > 1:\n        return 2\n", True),
        ("def detect_x(traj):\n  if traj.n_steps > 3:\n    return 1  # no newline", True),
    ],
)  # fmt: skip
def test_return_0_is_added_only_where_the_function_can_fall_off_its_end(code, adds):
    from monsearch.search.answer_repair import implicit_return

    fixed, note = implicit_return(code)
    assert (note is not None) == adds
    assert fixed == (code.rstrip("\n") + "\n" + " " * (4 if "    if" in code or "    for" in code else 2) + "return 0\n" if adds else code)
    assert check_program(fixed + "\n\ndef score(traj):\n    return detect_x(traj)\n").ok


def test_a_typing_import_that_is_used_is_left_to_the_rules():
    from monsearch.search.answer_repair import predefined_imports

    code = "from typing import List\n\ndef detect_x(traj):\n    xs: List[int] = []\n    return len(xs)\n"
    assert predefined_imports(code) == (code, None)


def test_a_field_hint_quotes_the_line_that_read_the_wrong_object(sandboxed_train):
    """``traj.secrets`` is right and ``f.secrets`` is wrong: only the latter is quoted;
    a KeyError on a number is not a field."""
    import ast

    from monsearch.search.answer_repair import field_error_hint

    train, _ = sandboxed_train
    code = "def detect_x(traj):\n    for f in traj.secrets:\n        n = len(f.secrets)\n    return 0\n"
    fn = ast.parse(code).body[0]
    error = "AttributeError: no field 'secrets' (fields: field, kind, step, value, where)"
    hint = field_error_hint(error, fn, code, train.views)
    assert "secrets is the run's: `traj.secrets`; a step's" in hint
    assert hint.endswith("Your line 3: `n = len(f.secrets)`.")
    assert field_error_hint("First: KeyError: 2", fn, code, train.views) == ""
