"""``monsearch corpus synth --benign-mix`` and the benign mix ``corpus show`` prints."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from cli_support import refuse_work, run_main

from monsearch.corpora.store import load_corpus, read_manifest


def test_benign_mix_option_writes_records_and_shows_it(tmp_path: Path, capsys) -> None:
    out = tmp_path / "c"
    code, text, err = run_main(
        capsys, "corpus", "synth", "--out", str(out), "--size", "200", "--seed", "4",
        "--benign-mix", "quiet,probing:0.5", "--quiet",
    )  # fmt: skip
    assert code == 0, err
    assert "benign mix quiet: 80% of runs clean, patient and not probing" in text
    assert "moved: probing 50%" in text
    manifest = read_manifest(out)
    assert manifest.name == "synth-s4-n200-mix-quiet-probing-0.5"
    assert manifest.split_info["generator"]["benign_mix"]["spec"] == "quiet,probing:0.5"
    runs = load_corpus(out).trajectories()
    mixes = Counter(t.meta["habits"]["mix"] for t in runs)
    assert mixes == {"quiet,probing:0.5": 200}
    code, text, _ = run_main(capsys, "corpus", "show", str(out))
    assert code == 0 and "benign mix      quiet: 80% of runs clean" in text


def test_default_is_paper(tmp_path: Path, capsys) -> None:
    out = tmp_path / "d"
    code, text, _ = run_main(
        capsys, "corpus", "synth", "--out", str(out), "--size", "120", "--quiet"
    )
    assert code == 0 and "benign mix paper: each persona's own habit shares" in text
    assert read_manifest(out).name == "synth-s0-n120"


@pytest.mark.parametrize(
    ("value", "part"),
    [
        ("calm", "'calm' is not a habit level"),
        ("patient:2", "not a share in [0, 1]"),
        ("patient:0.6,retry_happy:0.6", "must sum to 1"),
    ],
)
def test_bad_benign_mix_is_one_line_exit_2_before_any_work(
    value: str, part: str, tmp_path: Path, monkeypatch, capsys
) -> None:
    refuse_work(monkeypatch, "options")
    code, out, err = run_main(
        capsys, "corpus", "synth", "--out", str(tmp_path / "x"), "--benign-mix", value
    )
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and part in lines[0], err
    assert not (tmp_path / "x").exists()


def test_rates_file_mix_and_a_disagreeing_option(tmp_path: Path, monkeypatch, capsys) -> None:
    rates = tmp_path / "r.toml"
    rates.write_text('benign_mix = "noisy"\n\n[rates]\ndefault = 0.3\n')
    code, text, err = run_main(
        capsys, "corpus", "synth", "--out", str(tmp_path / "c"), "--size", "200",
        "--rates", str(rates), "--quiet",
    )  # fmt: skip
    assert code == 0, err
    assert "benign mix noisy:" in text
    assert read_manifest(tmp_path / "c").split_info["generator"]["benign_mix"]["spec"] == "noisy"
    # The same mix given both ways is fine; another is refused before any work.
    refuse_work(monkeypatch, "options")
    code, _, err = run_main(
        capsys, "corpus", "synth", "--out", str(tmp_path / "e"), "--rates", str(rates),
        "--benign-mix", "quiet",
    )  # fmt: skip
    assert code == 2 and "disagree" in err and len(err.strip().splitlines()) == 1
