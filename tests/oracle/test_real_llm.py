"""The LLM proposer driven by a real model through llama.cpp's server, end to end.

Marked ``real_llm`` and skipped unless ``$MONSEARCH_TEST_LLM_MODEL`` names a GGUF file
and llama-cpp-python's server is importable by ``$MONSEARCH_LLAMA_PYTHON`` (else this
Python). The smallest catalogued model does (``monsearch llm fetch
qwen2.5-coder-0.5b``). Nothing here depends on the machine's speed: the timeouts are
hang guards, and a model's answer may be good or bad — the test checks that every
proposal is recorded either as a scored child or with the reason it failed.

    MONSEARCH_TEST_LLM_MODEL=model.gguf pytest -m real_llm tests/oracle/test_real_llm.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from run_fixtures import evolve

from monsearch.search.lineage import LineageStore

pytestmark = pytest.mark.real_llm


def _model() -> Path:
    value = os.environ.get("MONSEARCH_TEST_LLM_MODEL")
    if not value or not Path(value).is_file():
        pytest.skip("no local model: set MONSEARCH_TEST_LLM_MODEL to a GGUF file")
    python = os.environ.get("MONSEARCH_LLAMA_PYTHON") or sys.executable
    probe = subprocess.run(
        [python, "-c", "import llama_cpp.server"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        pytest.skip(f"llama-cpp-python's server is not importable by {python}")
    return Path(value)


@pytest.fixture(scope="module")
def server():
    from monsearch.local_llm.server import LocalServer

    model = _model()
    with LocalServer(model, "test-model", n_ctx=8192) as srv:
        yield srv


def test_a_streamed_answer_reports_progress(server):
    from monsearch.oracle.openai_client import OpenAIClient

    seen = []
    body = {
        "model": "test-model",
        "messages": [{"role": "user", "content": "Write the word hello five times."}],
        "max_tokens": 24,
        "temperature": 0,
    }
    reply = OpenAIClient(server.base_url, timeout_s=600).chat(
        body, stream=True, on_progress=seen.append
    )
    assert reply.text and reply.chunks and reply.chunks <= 24
    assert seen[-1].tokens == reply.chunks


def test_evolve_with_the_real_model_records_every_proposal(server, tmp_path, small_corpus):
    runs = tmp_path / "runs"
    out = evolve(
        runs, small_corpus, "--proposer", "llm", "--llm-base-url", server.base_url,
        "--llm-model", "test-model", "--optuna-trials", "0", "--batch", "1",
        run_id="real", budget=5, timeout=3600,
    )  # fmt: skip
    outcome = json.loads(out.stdout)
    assert outcome["status"] == "finished"
    assert outcome["spend"]["llm"]["completion_tokens"] > 0
    with LineageStore(runs / "real" / "lineage.sqlite", readonly=True) as store:
        records = store.records()
    llm = [r for r in records if r.proposer == "llm"]
    assert len(llm) == 3
    for r in llm:
        assert r.operator.startswith("llm_")
        if r.status == "proposal_error":
            assert r.artifacts["proposal_error"] and r.source is None
        else:
            assert r.source and r.sandbox_status is not None


def test_serve_prints_the_options_and_stops_cleanly(tmp_path):
    import signal

    import httpx

    model = _model()
    env = dict(os.environ)
    proc = subprocess.Popen(
        [sys.executable, "-m", "monsearch", "llm", "serve", "--model", str(model),
         "--alias", "served-model", "--log", str(tmp_path / "server.log")]
        + (["--python", env["MONSEARCH_LLAMA_PYTHON"]] if env.get("MONSEARCH_LLAMA_PYTHON") else []),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        first = proc.stdout.readline()  # blocks until the server answers (or it fails)
        use = proc.stdout.readline()
        assert first.startswith("serving served-model at http://127.0.0.1:"), first
        url = first.split(" at ", 1)[1].split(" ", 1)[0]
        assert use.strip() == (
            "use: monsearch evolve --proposer offline:0.7,llm:0.3 "
            f"--llm-base-url {url} --llm-model served-model"
        )
        listed = httpx.get(f"{url}/models", timeout=30).json()
        assert [m["id"] for m in listed["data"]] == ["served-model"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)
    assert proc.returncode == 0
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{url}/models", timeout=5)
