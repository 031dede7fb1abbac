"""Every option of the corpus commands is checked before any work starts.

A bad value fails at once with exit code 2 and a message about the number the
user gave, never after generating or reading (the work is replaced by a
function that fails the test), and never by blaming an option the user did not
pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import SB_RESULTS, WorkStarted, refuse_work
from click.testing import CliRunner

from monsearch.cli import cli, main
from monsearch.corpora import store
from monsearch.synth.personas import DEFAULT_CROSS_GENERATORS, PERSONAS


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if a command generates, reads or loads anything."""
    refuse_work(monkeypatch, "options", load=True)


def run(*args: str):
    return CliRunner().invoke(cli, ["corpus", *args])


def assert_bad_option(res, option: str, *parts: str) -> None:
    assert res.exit_code == 2, res.output
    assert not isinstance(res.exception, WorkStarted), res.exception
    assert f"Invalid value for '{option}'" in res.output, res.output
    for part in parts:
        assert part in res.output, res.output
    assert "Traceback" not in res.output


# --------------------------------------------------------------------------- fractions


FRACTIONS_CASES = [
    ("0.9,0.9,0.9", ["0.9,0.9,0.9 sums to 2.7", "must sum to 1"]),
    ("0.5,0.5", ["'0.5,0.5' has 2 number(s)", "give three"]),
    ("0.5,0.25,0.25,0", ["has 4 number(s)"]),
    ("1.5,-0.25,-0.25", ["1.5 is not between 0 and 1"]),
    ("0.5,nan,0.5", ["nan is not between 0 and 1"]),
    ("a,b,c", ["expected three numbers", "'a,b,c'"]),
    ("", ["expected three numbers"]),
]


@pytest.mark.parametrize(("value", "parts"), FRACTIONS_CASES)
def test_synth_fractions_fail_before_generating(value, parts, tmp_path, no_work):
    res = run("synth", "--out", str(tmp_path / "c"), "--size", "20", "--fractions", value)
    assert_bad_option(res, "--fractions", *parts)
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize(("value", "parts"), FRACTIONS_CASES[:4])
def test_import_fractions_fail_before_reading(value, parts, tmp_path, no_work):
    res = run(
        "import", str(SB_RESULTS), "--out", str(tmp_path / "c"), "--seed", "1", "--fractions", value
    )
    assert_bad_option(res, "--fractions", *parts)
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize(("value", "parts"), FRACTIONS_CASES[:4])
def test_split_fractions_fail_before_loading(value, parts, tmp_path, no_work):
    (tmp_path / "c").mkdir()
    res = run("split", str(tmp_path / "c"), "--seed", "1", "--fractions", value)
    assert_bad_option(res, "--fractions", *parts)


def test_good_fractions_are_used(tmp_path):
    res = run("synth", "--out", str(tmp_path / "c"), "--size", "30", "--fractions", "0.6, 0.2, 0.2")
    assert res.exit_code == 0, res.output
    assert store.load_corpus(tmp_path / "c").manifest.split_info["fractions"] == [0.6, 0.2, 0.2]


# --------------------------------------------------------------------------- size and generators


def test_size_1_blames_the_size_not_a_generator_the_user_never_named(tmp_path, no_work):
    res = run("synth", "--out", str(tmp_path / "c"), "--size", "1")
    assert_bad_option(res, "--size", "1 is too small", "use --size 8 or more")
    assert "unknown cross generator" not in res.output
    for generator in DEFAULT_CROSS_GENERATORS:
        assert generator in res.output


@pytest.mark.parametrize("size", ["0", "-5", "ten"])
def test_size_not_a_positive_integer(size, tmp_path, no_work):
    res = run("synth", "--out", str(tmp_path / "c"), "--size", size)
    assert res.exit_code == 2 and "'--size'" in res.output


def test_the_size_the_message_suggests_really_works(tmp_path, no_work, monkeypatch):
    held = "openai-gpt-5-6-sol"  # a slug is accepted, as everywhere else
    res = run("synth", "--out", str(tmp_path / "c"), "--size", "5", "--cross-generators", held)
    assert_bad_option(res, "--size", "5 is too small", "openai/gpt-5.6-sol would get no trajectory")
    suggested = res.output.split("use --size ")[1].split()[0]
    monkeypatch.undo()  # let the generator run
    ok = run("synth", "--out", str(tmp_path / "c"), "--size", suggested, "--cross-generators", held)
    assert ok.exit_code == 0, ok.output
    assert store.load_corpus(tmp_path / "c").cross_generator_splits == ["xgen-openai-gpt-5-6-sol"]


def test_unknown_cross_generator_is_named_with_the_known_ones(tmp_path, no_work):
    res = run(
        "synth", "--out", str(tmp_path / "c"), "--size", "50", "--cross-generators", "nobody/x"
    )
    assert_bad_option(res, "--cross-generators", "'nobody/x' is not one of the synthetic")
    for persona in PERSONAS:
        assert persona.generator in res.output


def test_holding_out_every_generator_is_refused(tmp_path, no_work):
    every = ",".join(p.generator for p in PERSONAS)
    res = run("synth", "--out", str(tmp_path / "c"), "--size", "50", "--cross-generators", every)
    assert_bad_option(res, "--cross-generators", "every synthetic generator is held out")


def test_holding_out_none_is_fine_even_when_small(tmp_path):
    res = run("synth", "--out", str(tmp_path / "c"), "--size", "3", "--cross-generators", "")
    assert res.exit_code == 0, res.output
    assert store.load_corpus(tmp_path / "c").cross_generator_splits == []


# --------------------------------------------------------------------------- names and splits


@pytest.mark.parametrize("name", ["", "   "])
def test_empty_name_fails_before_work(name, tmp_path, no_work):
    res = run("synth", "--out", str(tmp_path / "c"), "--size", "20", "--name", name)
    assert_bad_option(res, "--name", "cannot be empty")
    res = run("import", str(SB_RESULTS), "--out", str(tmp_path / "c"), "--name", name)
    assert_bad_option(res, "--name", "cannot be empty")


@pytest.mark.parametrize(
    "args",
    [
        ["stats", "--split", "Bad Name"],
        ["stats", "--split", "train", "--split", "xgen-"],
        ["trajectory", "some-id", "--split", "../test"],
    ],
)
def test_bad_split_names_fail_before_a_corpus_is_built_or_loaded(
    args, tmp_path, no_work, monkeypatch
):
    monkeypatch.setenv("MONSEARCH_CACHE", str(tmp_path / "empty-cache"))
    res = run(*args)
    assert_bad_option(res, "--split", "is not a split name", "xgen-<generator>")
    assert not (tmp_path / "empty-cache").exists()


def test_cross_generators_without_seed_fail_before_reading(tmp_path, no_work):
    res = run("import", str(SB_RESULTS), "--out", str(tmp_path / "c"), "--fractions", "1,0,0")
    assert res.exit_code == 2 and "need --seed" in res.output
    assert not isinstance(res.exception, WorkStarted)


@pytest.fixture
def imported(tmp_path) -> Path:
    out = tmp_path / "imported"
    res = run("import", str(SB_RESULTS), "--out", str(out))
    assert res.exit_code == 0, res.output
    return out


@pytest.mark.parametrize(
    ("held", "message"),
    [
        ("nobody/model-x", "unknown cross generator 'nobody/model-x'; known generators:"),
        ("---", "has no letters or digits"),
    ],
)
def test_split_checks_cross_generators_against_the_manifest_before_loading(
    held, message, imported, monkeypatch, capsys
):
    c = store.load_corpus(imported)
    generators = sorted({t.generator for t in c.trajectories()})

    def refuse(*args, **kwargs):
        raise WorkStarted("loaded the corpus before checking --cross-generators")

    monkeypatch.setattr(store, "load_corpus", refuse)
    with pytest.raises(SystemExit) as exc:
        main(["corpus", "split", str(imported), "--seed", "1", "--cross-generators", held])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and message in err and err.count("\n") == 1
    if "unknown" in message:
        for g in generators:
            assert g in err


def test_split_refuses_to_hold_out_every_generator_before_loading(imported, monkeypatch, capsys):
    every = ",".join(sorted({t.generator for t in store.load_corpus(imported).trajectories()}))

    def refuse(*args, **kwargs):
        raise WorkStarted("loaded the corpus before checking --cross-generators")

    monkeypatch.setattr(store, "load_corpus", refuse)
    with pytest.raises(SystemExit) as exc:
        main(["corpus", "split", str(imported), "--seed", "1", "--cross-generators", every])
    assert exc.value.code == 2
    assert "every generator is held out" in capsys.readouterr().err


def test_out_of_image_clients_are_a_labelled_variant_off_by_default(tmp_path):
    from monsearch.corpora.store import load_corpus

    def styles_and_tools(out):
        corp = load_corpus(out)
        runs = [t for s in corp.split_names for t in corp.split(s)]
        tools = {word for t in runs for step in t.steps for word in step.text.split()[:1]}
        return runs, tools

    plain, with_tools = tmp_path / "plain", tmp_path / "variant"
    assert run("synth", "--out", str(plain), "--size", "300", "--quiet").exit_code == 0
    result = run(
        "synth", "--out", str(with_tools), "--size", "300", "--quiet", "--out-of-image-clients"
    )
    assert result.exit_code == 0, result.output
    runs, tools = styles_and_tools(plain)
    assert not {"wget", "http"} & tools
    assert not any(t.meta.get("out_of_image") for t in runs)
    runs, tools = styles_and_tools(with_tools)
    assert {"wget", "http"} & tools and any(t.meta.get("out_of_image") for t in runs)
