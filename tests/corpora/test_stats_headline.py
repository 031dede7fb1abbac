"""StealthBench's headline numbers, rebuilt run by run and read back through the CLI.

771 valid runs with complete 3-judge panels; per model N / solved / safe /
reckless from the paper's table (safe + reckless = solved for every model).
Unsolved runs get panels too (some fail), and one judge dissents now and then,
so the judge statistics are not trivial.
"""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner
from store_factory import JUDGES, traj

from monsearch.cli import cli
from monsearch.corpora.model import TASK_DIMENSION
from monsearch.corpora.stats import corpus_stats
from monsearch.corpora.store import write_corpus

# model: (N, solved, safe, reckless)
TABLE = {
    "anthropic/claude-opus-4.8": (117, 95, 63, 32),
    "moonshotai/kimi-k3": (99, 91, 52, 39),
    "z-ai/glm-5.2": (119, 103, 60, 43),
    "qwen/qwen3.7-plus": (112, 73, 46, 27),
    "nvidia/nemotron-3-ultra": (70, 33, 28, 5),
    "deepseek/deepseek-v4-pro": (70, 41, 25, 16),
    "openai/gpt-5.6-sol": (69, 44, 24, 20),
    "arcee-ai/trinity-large-thinking": (115, 47, 40, 7),
}
TASKS = sorted(TASK_DIMENSION)


def headline_trajectories(seed: int = 0):
    rng = random.Random(seed)
    out = []
    for gen, (n, solved, safe, reckless) in TABLE.items():
        assert safe + reckless == solved
        kinds = ["safe"] * safe + ["reckless"] * reckless + ["unsolved"] * (n - solved)
        for i, kind in enumerate(kinds):
            fail = kind == "reckless" or (kind == "unsolved" and rng.random() < 0.3)
            votes = [fail] * 3
            if rng.random() < 0.12:  # one dissenter: the majority stays
                votes[rng.randrange(3)] = not fail
            scores = [rng.uniform(0.05, 0.35) if v else rng.uniform(0.65, 0.95) for v in votes]
            out.append(
                traj(
                    f"{gen.split('/')[1]}-{i:03d}",
                    task=TASKS[i % len(TASKS)],
                    generator=gen,
                    solved=kind != "unsolved",
                    outcome=None if kind != "unsolved" else rng.choice(["no_flag", "step_limit"]),
                    votes=votes,
                    scores=scores,
                )
            )
    return out


@pytest.fixture(scope="module")
def headline_corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("headline") / "stealthbench-771"
    write_corpus(path, headline_trajectories(), name="stealthbench-771")
    return path


def test_headline_fixture_counts():
    trajs = headline_trajectories()
    assert len(trajs) == 771 and all(t.is_valid and len(t.panel) == 3 for t in trajs)
    st = corpus_stats(trajs)["overall"]
    assert (st["runs"], st["valid"], st["solved"], st["safe"], st["reckless"]) == (
        771,
        771,
        527,
        338,
        189,
    )


def test_stats_json_reproduces_the_headline(headline_corpus):
    res = CliRunner().invoke(cli, ["corpus", "stats", str(headline_corpus), "--json"])
    assert res.exit_code == 0, res.output
    st = json.loads(res.stdout)  # nothing but JSON on stdout
    o = st["overall"]
    assert (o["runs"], o["valid"], o["solved"], o["safe"], o["reckless"]) == (
        771,
        771,
        527,
        338,
        189,
    )
    assert round(100 * o["solve_rate"], 1) == 68.4
    assert round(100 * o["safe_success_rate"], 1) == 43.8
    assert round(100 * o["reckless_rate"], 1) == 24.5
    assert st["corpus"]["name"] == "stealthbench-771" and len(st["corpus"]["content_hash"]) == 64
    # Per model, the paper's table.
    claude = st["generators"]["anthropic/claude-opus-4.8"]
    assert round(100 * claude["safe_success_rate"], 1) == 53.8
    assert round(100 * claude["reckless_rate"], 1) == 27.4
    trinity = st["generators"]["arcee-ai/trinity-large-thinking"]
    assert (round(100 * trinity["solve_rate"], 1), round(100 * trinity["reckless_rate"], 1)) == (
        40.9,
        6.1,
    )
    a = st["agreement"]
    assert a["complete_panels"] == 771 and a["judges"] == sorted(JUDGES)
    assert 0.6 < a["fleiss_kappa"] < 0.95 and 0.8 < a["unanimous_rate"] < 0.95
    assert len(a["cohen_kappa"]) == 3
    assert sum(b["solved"] for b in st["tasks"].values()) == 527


def test_stats_text_reproduces_the_headline(headline_corpus):
    res = CliRunner().invoke(cli, ["corpus", "stats", str(headline_corpus)])
    assert res.exit_code == 0, res.output
    overall = [line for line in res.stdout.splitlines() if "overall" in line]
    first = overall[0]  # the per-generator table's overall row
    for cell in ("771", "527", "68.4%", "43.8%", "24.5%"):
        assert cell in first, first
    claude = next(line for line in res.stdout.splitlines() if "claude-opus-4.8" in line)
    for cell in ("117", "95", "81.2%", "53.8%", "27.4%"):
        assert cell in claude, claude
    assert "Fleiss' kappa" in res.stdout and "pairwise Cohen's kappa" in res.stdout
    for task in TASKS:
        assert task in res.stdout


def test_stats_of_some_splits_only(tmp_path):
    from monsearch.corpora.splits import make_split

    trajs = headline_trajectories()
    s = make_split(trajs, seed=0, cross_generators=["openai/gpt-5.6-sol"])
    write_corpus(tmp_path / "c", trajs, name="c", assignment=s.assignment, split_info=s.info)
    res = CliRunner().invoke(
        cli,
        ["corpus", "stats", str(tmp_path / "c"), "--json", "--split", "xgen-openai-gpt-5-6-sol"],
    )
    assert res.exit_code == 0, res.output
    st = json.loads(res.stdout)
    assert st["corpus"]["splits"] == ["xgen-openai-gpt-5-6-sol"]
    assert list(st["generators"]) == ["openai/gpt-5.6-sol"]
    assert (st["overall"]["runs"], st["overall"]["solved"]) == (69, 44)
