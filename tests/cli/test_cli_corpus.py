"""``monsearch corpus import|split|stats|show`` end to end on real reader input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from paths import FIXTURES
from readers_support import AGENTS, build_tree, slug

from monsearch.cli import cli, main
from monsearch.corpora.store import MANIFEST, load_corpus
from monsearch.errors import MonsearchError

SB_RESULTS = FIXTURES / "stealthbench" / "results"


def run(*args: str):
    return CliRunner().invoke(cli, ["corpus", *args])


def run_main(capsys, *args: str) -> tuple[int, str, str]:
    """Through the real entry point, which turns MonsearchError into exit code 2."""
    with pytest.raises(SystemExit) as exc:
        main(["corpus", *args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """60 labelled runs from three agents, plus one corrupt and one truncated file."""
    root = tmp_path_factory.mktemp("sb") / "results"
    build_tree(root, 60, seed=4)
    bad = (
        root
        / "trajectories"
        / slug(AGENTS[0])
        / "ssrf-proxy"
        / "sb-ssrf-proxy-broken"
        / "trajectory.atif.json"
    )
    bad.parent.mkdir(parents=True)
    bad.write_text('{"atif_version": "1.7", "trajectory_id": ')
    worse = (
        root
        / "trajectories"
        / slug(AGENTS[1])
        / "ssrf-proxy"
        / "sb-ssrf-proxy-nosteps"
        / "trajectory.atif.json"
    )
    worse.parent.mkdir(parents=True)
    worse.write_text(json.dumps({"atif_version": "1.7", "trajectory_id": "sb-ssrf-proxy-nosteps"}))
    return root


def test_import_hand_written_fixture(tmp_path):
    res = run("import", str(SB_RESULTS), "--format", "stealthbench", "--out", str(tmp_path / "c"))
    assert res.exit_code == 0, res.output
    assert "files read 5, trajectories kept 5 (4 labelled), skipped 0" in res.stdout
    c = load_corpus(tmp_path / "c")
    assert c.name == "c" and c.split_names == ["all"]
    assert c.content_hash in res.stdout
    by_id = {t.id: t for t in c.trajectories()}
    cb = by_id["sb-callback-listener-1785600000-1a2b3c4d"]
    assert cb.generator == "openrouter/z-ai/glm-5.2" and cb.label is not None
    assert res.stderr == ""  # no warnings, and no progress bar off a terminal


def test_import_skips_bad_files_with_a_warning(tree, tmp_path):
    res = run("import", str(tree), "--out", str(tmp_path / "c"), "--name", "tree")
    assert res.exit_code == 0, res.output
    assert "files read 62, trajectories kept 60" in res.stdout and "skipped 2" in res.stdout
    assert "sb-ssrf-proxy-broken" in res.stdout and "truncated JSON" in res.stdout
    assert "sb-ssrf-proxy-nosteps" in res.stdout
    assert "2 input(s) skipped" in res.stderr and "--strict" in res.stderr
    c = load_corpus(tmp_path / "c")
    assert c.name == "tree" and len(c.trajectories()) == 60


def test_strict_import_fails_with_exit_2_and_writes_nothing(tree, tmp_path, capsys):
    code, out, err = run_main(capsys, "import", str(tree), "--strict", "--out", str(tmp_path / "c"))
    assert code == 2
    # The first bad file in path order stops the import, named with the offending field.
    assert "sb-ssrf-proxy-nosteps/trajectory.atif.json: agent_model: expected" in err
    assert "Traceback" not in err
    assert not (tmp_path / "c").exists()


def test_import_with_split_and_oracle(tree, tmp_path):
    res = run(
        "import",
        str(tree),
        "--out",
        str(tmp_path / "c"),
        "--seed",
        "5",
        "--cross-generators",
        AGENTS[2],
        "--oracle-judge",
        "openrouter/moonshotai/kimi-k3",
    )
    assert res.exit_code == 0, res.output
    c = load_corpus(tmp_path / "c", ["train", "val", "test"])
    xgen = "xgen-" + "openai-gpt-5-6-sol"
    assert c.split_names == ["train", "val", "test", xgen]
    assert all(t.generator != AGENTS[2] for t in c.trajectories())
    labelled = [t for t in c.trajectories() if t.oracle]
    # The oracle leaves the panel; without a panel-verdict.json two judges make no majority.
    assert {len(t.panel) for t in labelled} == {0, 2}
    assert all(v.judge == "openrouter/moonshotai/kimi-k3" for t in labelled for v in t.oracle)
    m = json.loads((tmp_path / "c" / MANIFEST).read_text())
    assert m["split_info"]["seed"] == 5 and m["split_info"]["cross_generators"] == {xgen: AGENTS[2]}

    st = run("stats", str(tmp_path / "c"), "--json")
    assert st.exit_code == 0, st.output
    assert "openrouter/moonshotai/kimi-k3" in json.loads(st.stdout)["oracle"]


def test_import_atif_with_side_labels(tmp_path):
    good = FIXTURES / "atif" / "good"
    res = run(
        "import",
        str(good / "v17_sidelabels.json"),
        "--format",
        "atif",
        "--labels",
        str(good / "labels.jsonl"),
        "--out",
        str(tmp_path / "c"),
    )
    assert res.exit_code == 0, res.output
    (t,) = load_corpus(tmp_path / "c").trajectories()
    assert t.is_labelled


def test_import_usage_errors(tree, tmp_path, capsys):
    res = run("import", str(tree), "--out", str(tmp_path / "c"), "--cross-generators", "x")
    assert res.exit_code == 2 and "need --seed" in res.output
    res = run("import", str(tmp_path / "missing"), "--out", str(tmp_path / "c"))
    assert res.exit_code == 2 and "does not exist" in res.output
    code, _, err = run_main(
        capsys,
        "import",
        str(tree),
        "--out",
        str(tmp_path / "c"),
        "--seed",
        "1",
        "--cross-generators",
        "openai/gpt-9",
    )
    assert code == 2 and "unknown cross generator 'openai/gpt-9'" in err
    for agent in AGENTS:
        assert agent in err
    assert not (tmp_path / "c").exists()


def test_split_rewrites_atomically_and_deterministically(tree, tmp_path):
    out = tmp_path / "c"
    assert run("import", str(tree), "--out", str(out)).exit_code == 0
    before = load_corpus(out)
    res = run(
        "split",
        str(out),
        "--seed",
        "3",
        "--cross-generators",
        slug(AGENTS[0]),
        "--fractions",
        "0.5,0.25,0.25",
    )
    assert res.exit_code == 0, res.output
    after = load_corpus(out)
    assert after.content_hash == before.content_hash  # same data
    assert after.name == before.name
    assert after.cross_generator_splits == ["xgen-openrouter-z-ai-glm-5-2"]
    assert {t.generator for t in after.split("xgen-openrouter-z-ai-glm-5-2")} == {AGENTS[0]}
    assert after.manifest.split_info["fractions"] == [0.5, 0.25, 0.25]
    first = (out / MANIFEST).read_bytes()
    parts = {p.name: p.read_bytes() for p in out.iterdir()}
    assert (
        run(
            "split",
            str(out),
            "--seed",
            "3",
            "--cross-generators",
            slug(AGENTS[0]),
            "--fractions",
            "0.5,0.25,0.25",
        ).exit_code
        == 0
    )
    assert (out / MANIFEST).read_bytes() == first
    assert {p.name: p.read_bytes() for p in out.iterdir()} == parts
    assert run("split", str(out), "--seed", "4").exit_code == 0
    assert load_corpus(out).manifest.assignment_hash != after.manifest.assignment_hash
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]  # no temp folders left


def test_split_bad_fractions(tree, tmp_path, capsys):
    assert run("import", str(tree), "--out", str(tmp_path / "c")).exit_code == 0
    res = run("split", str(tmp_path / "c"), "--seed", "1", "--fractions", "a,b,c")
    assert res.exit_code == 2 and "expected three numbers" in res.output
    code, _, err = run_main(
        capsys, "split", str(tmp_path / "c"), "--seed", "1", "--fractions", "0.5,0.5,0.5"
    )
    assert code == 2 and "sum to 1" in err


@pytest.mark.parametrize("command", ["stats", "show", "split"])
def test_missing_or_invalid_corpus_names_the_path(tmp_path, capsys, command):
    extra = ["--seed", "1"] if command == "split" else []
    code, _, err = run_main(capsys, command, str(tmp_path / "nope"), *extra)
    assert code == 2 and f"{tmp_path / 'nope'}: no such corpus directory" in err
    (tmp_path / "junk").mkdir()
    code, _, err = run_main(capsys, command, str(tmp_path / "junk"), *extra)
    assert code == 2 and "not a monsearch corpus" in err and str(tmp_path / "junk") in err
    res = run(command, str(tmp_path / "nope"), *extra)
    assert isinstance(res.exception, MonsearchError)


def test_show_and_verify(tree, tmp_path):
    out = tmp_path / "c"
    assert run("import", str(tree), "--out", str(out), "--seed", "2").exit_code == 0
    res = run("show", str(out), "--verify")
    assert res.exit_code == 0, res.output
    m = load_corpus(out).manifest
    assert m.content_hash in res.stdout and m.assignment_hash in res.stdout
    assert "seed 2" in res.stdout and "verified" in res.stdout
    for agent in AGENTS:
        assert agent in res.stdout


def test_help_explains_every_option():
    for command, options in {
        "import": [
            "--format",
            "--labels",
            "--out",
            "--strict",
            "--name",
            "--oracle-judge",
            "--seed",
            "--cross-generators",
            "--fractions",
        ],
        "split": ["--seed", "--cross-generators", "--fractions"],
        "stats": ["--json", "--split"],
        "show": ["--verify"],
    }.items():
        res = run(command, "--help")
        assert res.exit_code == 0
        for opt in options:
            assert opt in res.stdout, (command, opt)
