"""The run configuration: TOML files, overrides, validation, and the documented examples."""

from __future__ import annotations

import re

import pytest
from paths import REPO

from monsearch.search.config import ConfigError, EvolveConfig, load_config_file, parse_proposers
from monsearch.search.llm_proposer import LLMProposerConfig

LLM_DOC = REPO / "docs" / "local-llm.md"  # the LLM run's example config


def test_the_documented_llm_config_loads(tmp_path):
    text = re.search(r"```toml\n(.*?)```", LLM_DOC.read_text(), re.S).group(1)
    path = tmp_path / "monsearch.toml"
    path.write_text(text)
    cfg = load_config_file(path).validate()
    assert [(p.name, p.weight) for p in cfg.proposers] == [("offline", 0.7), ("llm", 0.3)]
    assert cfg.max_usd == 5.0 and cfg.budget == 300
    llm = LLMProposerConfig.from_dict(cfg.llm)
    assert [m.weight for m in llm.models] == [0.8, 0.2]


def test_overrides_reach_sub_configs_and_roundtrip():
    cfg = EvolveConfig().with_overrides(
        budget=7, seed=None, **{"evaluation.rho": 0.1, "search.islands": 2}
    )
    assert cfg.budget == 7 and cfg.seed == 0
    assert cfg.evaluation.rho == 0.1 and cfg.search.islands == 2
    assert EvolveConfig.from_dict(cfg.to_dict()) == cfg


@pytest.mark.parametrize(
    "text, message",
    [
        ("budgett = 3\n", "unknown key"),
        ("[search]\nislandz = 2\n", "unknown key"),
        ("budget = [\n", "not valid TOML"),
        ("proposers = \"offline\"\n", "list of tables"),
    ],
)
def test_bad_config_files_name_the_problem(tmp_path, text, message):
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config_file(path)


def test_validation():
    with pytest.raises(ConfigError, match="budget range"):
        EvolveConfig().with_overrides(**{"evaluation.b_lo": 0.2}).validate()
    with pytest.raises(ConfigError, match="proposer 'magic'"):
        EvolveConfig(proposers=parse_proposers("magic")).validate()
    with pytest.raises(ConfigError, match="--scheduler"):
        EvolveConfig(backend="dask").validate()
    with pytest.raises(ConfigError, match="weight"):
        parse_proposers("offline:lots")
