"""``--llm-model`` and the other LLM options merge into the config's ``[llm]`` table:
a model's settings (max_tokens, timeout, edit...) are never dropped by naming it on
the command line, and the per-request timeout and max_tokens reach the server."""

from __future__ import annotations

import json

import pytest
from llm_stub_server import Reply, StubLLMServer
from run_fixtures import evolve

from monsearch.commands.evolve import _model_spec
from monsearch.search.config import ConfigError
from monsearch.search.llm_proposer import LLMProposerConfig, merge_cli_options


def test_naming_the_configured_model_keeps_its_settings():
    table = {"model": "coder", "max_tokens": 600, "temperature": 0.2, "timeout": 900}
    merged = merge_cli_options(table, [_model_spec("coder")])
    cfg = LLMProposerConfig.from_dict(merged)
    (m,) = cfg.models
    assert (m.name, m.max_tokens, m.temperature, m.weight) == ("coder", 600, 0.2, 1.0)
    assert cfg.timeout == 900


def test_another_model_on_the_command_line_inherits_the_model_defaults():
    table = {"model": "coder", "max_tokens": 600, "edit": "diff"}
    cfg = LLMProposerConfig.from_dict(merge_cli_options(table, [_model_spec("other:2")]))
    (m,) = cfg.models
    assert (m.name, m.weight, m.max_tokens, m.edit) == ("other", 2.0, 600, "diff")


def test_a_model_list_is_selected_from_not_replaced():
    table = {
        "timeout": 300,
        "models": [
            {"name": "big", "weight": 0.2, "edit": "full", "max_tokens": 3000},
            {"name": "small", "weight": 0.8, "max_tokens": 500, "timeout": 120},
        ],
    }
    cfg = LLMProposerConfig.from_dict(
        merge_cli_options(table, [_model_spec("small"), _model_spec("qwen2.5-coder:7b")])
    )
    assert [(m.name, m.weight, m.max_tokens) for m in cfg.models] == [
        ("small", 0.8, 500),
        ("qwen2.5-coder:7b", 1.0, None),
    ]
    assert cfg.models[0].timeout == 120 and cfg.timeout == 300
    # The command line's own settings apply to every model and win.
    cfg = LLMProposerConfig.from_dict(
        merge_cli_options(table, (), timeout=45, max_tokens=256, edit="detector",
                          base_url="http://127.0.0.1:9/v1")
    )  # fmt: skip
    assert cfg.timeout == 45 and cfg.base_url == "http://127.0.0.1:9/v1"
    assert [(m.max_tokens, m.edit, m.timeout) for m in cfg.models] == [
        (256, "detector", None),
        (256, "detector", None),
    ]


def test_nothing_configured_still_names_the_options():
    with pytest.raises(ConfigError, match="--llm-model"):
        LLMProposerConfig.from_dict(merge_cli_options({}, (), timeout=30))
    with pytest.raises(ConfigError, match="edit 'tiny'"):
        LLMProposerConfig.from_dict(merge_cli_options({"model": "m"}, (), edit="tiny"))


def test_the_command_line_and_config_reach_the_server(tmp_path, small_corpus):
    config = tmp_path / "llm.toml"
    config.write_text('[llm]\nmodel = "stub-coder"\nmax_tokens = 333\ntemperature = 0.1\n')
    rewrite = "```python\ndef score(traj):\n    return 0.5 * len(traj.secrets) + 0.01 * len(traj.requests)\n```"
    with StubLLMServer(default=Reply.text(rewrite)) as server:
        runs = tmp_path / "runs"
        evolve(
            runs, small_corpus, "--proposer", "llm", "--config", str(config),
            "--llm-model", "stub-coder", "--llm-base-url", server.base_url,
            "--llm-timeout", "77", "--optuna-trials", "0", "--batch", "1",
            run_id="merge", budget=3,
        )  # fmt: skip
        body = server.chat_bodies[0]
    assert body["max_tokens"] == 333 and body["temperature"] == 0.1
    recorded = json.loads((runs / "merge" / "config.json").read_text())["llm"]
    assert recorded["timeout"] == 77
    assert recorded["models"] == [
        {"name": "stub-coder", "max_tokens": 333, "temperature": 0.1}
    ]
