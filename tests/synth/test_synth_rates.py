"""Synthetic corpora at chosen label failure rates (``corpus synth --rates``).

The band for a sampled share is binomial: a cell of ``n`` labelled runs at target
``p`` has standard error ``sqrt(p (1 - p) / n)``. Each cell of at least
:data:`MIN_CELL` runs must lie within :data:`Z` standard errors of its target
(for one cell the chance of missing that by luck is 6e-5, about 0.3 % over the
42 cells), and the sum of squared z-scores must stay below the 99.9 % point of
the chi-square distribution with one degree of freedom per cell, which catches a
small bias shared by many cells that no single cell shows. The same checks on
the paper's corpus fail by far (tested), so they do measure the rates.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path

import pytest
from cli_support import refuse_work, run_main
from scipy.stats import chi2

from monsearch.corpora.store import content_hash, load_corpus, read_manifest
from monsearch.synth.calibration import get_calibration
from monsearch.synth.generate import (
    BALANCE_DEFAULT,
    SynthError,
    ensure_default_corpus,
    generate,
    synthesize_corpus,
)
from monsearch.synth.personas import PERSONAS
from monsearch.synth.rated import expected_label_shares, rated_calibration, reachable
from monsearch.synth.rates import (
    FLAT_SHARE,
    OUTCOMES,
    RatesError,
    load_rates_file,
    parse_rates,
)
from monsearch.synth.scenario import REGISTRY

SIZE = 2400
SEED = 3
Z = 4.0
MIN_CELL = 10

# Content hashes of small default corpora (generator version 6: the fidelity fixes the
# live corpus found, and the benign habit profiles). The default corpus must stay
# bit-for-bit the same: change these only with a deliberate generator change (and a
# GENERATOR_VERSION bump).
PAPER_300_SEED7 = "c4e854658aaf1debf6e8544c2b9c3049d87987309ada2d18e6b78d7854ad25d1"
TASK_300_SEED7 = "dc101017fdcedf135520bdf80bc3f2f70657a02fe0cbc4a6583e169151cefe42"

SKEWED_TOML = """\
# label failure shares per task and outcome
[rates]
default = { solved = 0.25, no_flag = 0.15, step_limit = 0.6 }
"callback-listener" = { solved = 0.8 }
"adtech-admin" = 0.12
"""


def label_shares(trajs, key) -> dict:
    """key(trajectory) -> [label failures, labelled runs]."""
    out: dict = defaultdict(lambda: [0, 0])
    for t in trajs:
        cell = out[key(t)]
        cell[0] += t.label.is_failure
        cell[1] += 1
    return out


def z_scores(shares: dict, target) -> dict:
    """Binomial z-score of every cell with at least MIN_CELL runs."""
    out = {}
    for k, (fail, n) in shares.items():
        if n < MIN_CELL:
            continue
        p = target(k)
        out[k] = (fail / n - p) / math.sqrt(p * (1 - p) / n)
    return out


def assert_on_target(shares: dict, target) -> None:
    z = z_scores(shares, target)
    far = {k: round(v, 2) for k, v in z.items() if abs(v) > Z}
    assert not far, far
    assert sum(v * v for v in z.values()) < chi2.ppf(0.999, len(z))


@pytest.fixture(scope="module")
def paper() -> list:
    return generate(SIZE, SEED)


@pytest.fixture(scope="module")
def flat() -> list:
    return generate(SIZE, SEED, rates="flat")


def by_cell(t) -> tuple[str, str]:
    return (t.task, t.outcome)


# --------------------------------------------------------------------------- the default


def test_default_corpus_is_bit_for_bit_unchanged() -> None:
    default = generate(300, 7)
    assert content_hash(default) == PAPER_300_SEED7
    assert generate(300, 7, rates="paper") == default
    assert BALANCE_DEFAULT == "paper"
    # --balance task is --rates task: the same corpus as before either way.
    task = generate(300, 7, balance="task")
    assert content_hash(task) == TASK_300_SEED7
    assert generate(300, 7, rates="task") == task
    assert generate(300, 7, balance="task", rates="task") == task
    with pytest.raises(SynthError, match="disagree"):
        generate(10, 7, balance="task", rates="flat")


def test_default_manifest_names_and_records_paper(tmp_path: Path, monkeypatch) -> None:
    res = synthesize_corpus(tmp_path / "c", seed=7, size=300)
    assert res.content_hash == PAPER_300_SEED7
    manifest = read_manifest(tmp_path / "c")
    assert manifest.name == "synth-s7-n300"
    gen = manifest.split_info["generator"]
    assert gen["balance"] == "paper"
    rates = gen["rates"]
    assert rates["kind"] == "paper" and rates["per_generator"] is False
    # The paper's per-task rates, as the calibration gives them pooled over generators.
    assert rates["targets"]["callback-listener"]["flag_found"] > 0.9
    assert rates["targets"]["ssrf-proxy"]["flag_found"] < 0.3
    assert rates["overall"]["flag_found"] == pytest.approx(24.5 / 68.4, abs=0.005)
    # The embedded default corpus is the paper corpus too.
    monkeypatch.setenv("MONSEARCH_CACHE", str(tmp_path / "cache"))
    path = ensure_default_corpus(seed=7, size=300)
    assert load_corpus(path).content_hash == PAPER_300_SEED7
    assert read_manifest(path).split_info["generator"]["rates"]["kind"] == "paper"


# --------------------------------------------------------------------------- flat


def test_flat_corpus_hits_its_share_in_every_cell(flat: list, paper: list) -> None:
    assert_on_target(label_shares(flat, by_cell), lambda k: FLAT_SHARE)
    # The same test on the paper's corpus fails by far: it measures the rates.
    with pytest.raises(AssertionError):
        assert_on_target(label_shares(paper, by_cell), lambda k: FLAT_SHARE)


def test_flat_corpus_has_no_generator_differences(flat: list, paper: list) -> None:
    assert_on_target(label_shares(flat, lambda t: t.generator), lambda k: FLAT_SHARE)
    with pytest.raises(AssertionError):  # the paper's models differ
        assert_on_target(label_shares(paper, lambda t: t.generator), lambda k: FLAT_SHARE)


def test_flat_keeps_solves_styles_and_personas(flat: list, paper: list) -> None:
    # The same seed draws the same plan, style and solve for every run: only failure
    # (and so the mode and what follows) moves.
    for a, b in zip(flat, paper, strict=True):
        assert (a.id, a.generator, a.task) == (b.id, b.generator, b.task)
        assert a.meta["style"] == b.meta["style"]
        assert a.is_solved == b.is_solved
        assert a.meta["rates"] == "flat" and "rates" not in b.meta
    moved = sum(a.label.is_failure != b.label.is_failure for a, b in zip(flat, paper, strict=True))
    assert moved > SIZE / 10


def test_flat_expectation_is_exact() -> None:
    rates = parse_rates("flat:0.25")
    cal = rated_calibration(rates)
    for cell in cal.cells.values():
        for outcome in OUTCOMES:
            assert cell.label_fail(outcome) == pytest.approx(0.25, abs=1e-9)
    per_task, overall = expected_label_shares(rates)
    assert all(v == pytest.approx(0.25) for row in per_task.values() for v in row.values())
    assert all(v == pytest.approx(0.25) for v in overall.values())


# --------------------------------------------------------------------------- files


def test_rates_file_honours_skewed_targets(tmp_path: Path) -> None:
    path = tmp_path / "skewed.toml"
    path.write_text(SKEWED_TOML)
    rates = load_rates_file(path)
    trajs = generate(SIZE, SEED, rates=str(path))
    assert_on_target(label_shares(trajs, by_cell), lambda k: rates.target(*k))
    # The skew is real: these cells are far apart and each on its own target.
    pooled = label_shares(trajs, lambda t: t.outcome)
    share = {k: f / n for k, (f, n) in pooled.items()}
    assert share["step_limit"] > share["no_flag"] + 0.3
    cb = label_shares([t for t in trajs if t.task == "callback-listener"], lambda t: t.outcome)
    assert cb["flag_found"][0] / cb["flag_found"][1] > 0.7
    assert rates.target("adtech-admin", "step_limit") == 0.12


def test_rates_file_corpus_records_and_names_its_rates(tmp_path: Path) -> None:
    path = tmp_path / "My Rates.toml"
    path.write_text(SKEWED_TOML)
    synthesize_corpus(tmp_path / "c", seed=1, size=120, rates=str(path))
    manifest = read_manifest(tmp_path / "c")
    rates = parse_rates(str(path))
    assert manifest.name == f"synth-s1-n120-my-rates-{rates.digest[:8]}"
    rec = manifest.split_info["generator"]["rates"]
    assert rec["kind"] == "file" and rec["file"] == "My Rates.toml"
    assert rec["per_generator"] is True and "balance" not in manifest.split_info["generator"]
    assert rec["targets"]["callback-listener"] == {
        "flag_found": 0.8,
        "no_flag": 0.15,
        "step_limit": 0.6,
    }
    assert rec["targets_sha256"] == rates.digest


def test_json_file_reads_like_toml(tmp_path: Path) -> None:
    toml = tmp_path / "a.toml"
    toml.write_text(SKEWED_TOML)
    js = tmp_path / "a.json"
    js.write_text(
        json.dumps(
            {
                "rates": {
                    "default": {"flag_found": 0.25, "unsolved": 0.15, "step_limit": 0.6},
                    "callback-listener": {"solved": 0.8},
                    "adtech-admin": 0.12,
                }
            }
        )
    )
    a, b = load_rates_file(toml), load_rates_file(js)
    assert a.targets == b.targets and a.digest == b.digest
    assert len(a.targets) == len(REGISTRY)


def test_unsolved_sets_both_unless_one_is_given(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text('[rates]\ndefault = 0.3\n"ssrf-proxy" = { unsolved = 0.5, step_limit = 0.7 }\n')
    r = load_rates_file(path)
    assert [r.target("ssrf-proxy", o) for o in OUTCOMES] == [0.3, 0.5, 0.7]
    assert r.origin("ssrf-proxy", "step_limit").endswith("rates.ssrf-proxy.step_limit")
    assert r.origin("ssrf-proxy", "flag_found").endswith("rates.default")


BAD_FILES = [
    ('default = 0.3\n"callback-listner" = 0.5', "rates.callback-listner: unknown task"),
    ('default = 0.3\n"adtech-admin" = { solved = 1.2 }', "rates.adtech-admin.solved: 1.2 is not"),
    ("default = 0", "rates.default: 0 is not a share in (0, 1)"),
    ("default = 1", "rates.default: 1 is not a share in (0, 1)"),
    ('default = "a third"', "rates.default: expected a share in (0, 1)"),
    ("default = true", "rates.default: expected a share in (0, 1)"),
    ('default = 0.3\n"otel-collector" = { sovled = 0.3 }', "rates.otel-collector.sovled: unknown"),
    ('default = 0.3\n"otel-collector" = { error = 0.3 }', "rates.otel-collector.error: the synth"),
    ('"otel-collector" = 0.3', "rates.adtech-admin.flag_found: no share given"),
    ("default = { solved = 0.3, flag_found = 0.3 }", "rates.default: solved and flag_found"),
    ('default = 0.3\n"otel-collector" = 0.01', "rates.otel-collector: 0.01 is out of reach for"),
    (
        'default = 0.3\n"otel-collector" = { unsolved = 0.4, no_flag = 0.99 }',
        "rates.otel-collector.no_flag: 0.99 is out of reach for otel-collector no_flag runs",
    ),
]


def check_one_line_error(code: int, out: str, err: str, *parts: str) -> None:
    assert code == 2, (out, err)
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for part in parts:
        assert part in lines[0], lines[0]


@pytest.mark.parametrize(("body", "field"), BAD_FILES)
def test_bad_rates_file_is_one_line_naming_file_and_field(
    body: str, field: str, tmp_path: Path, monkeypatch, capsys
) -> None:
    refuse_work(monkeypatch, "rates file")
    path = tmp_path / "rates.toml"
    path.write_text(f"[rates]\n{body}\n")
    args = ["corpus", "synth", "--out", str(tmp_path / "c"), "--size", "20", "--rates", str(path)]
    code, out, err = run_main(capsys, *args)
    check_one_line_error(code, out, err, f"{path}: {field}")
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize(
    ("name", "text", "part"),
    [
        ("r.toml", "[rates\ndefault = 0.3\n", "r.toml: not valid TOML"),
        ("r.json", '{"rates": {"default": 0.3,}}', "r.json: not valid JSON"),
        ("r.toml", "[rate]\ndefault = 0.3\n", "r.toml: rate: unknown key (only [rates] and benign_mix are read)"),
        ("r.toml", "default = 0.3\n", "r.toml: default: unknown key"),
        ("r.json", "[0.3]", "r.json: expected a table with a [rates] section"),
        ("missing.toml", None, "missing.toml: no such rates file"),
    ],
)
def test_unreadable_rates_files(name, text, part, tmp_path: Path, monkeypatch, capsys) -> None:
    refuse_work(monkeypatch, "rates file")
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    args = ["corpus", "synth", "--out", str(tmp_path / "c"), "--rates", str(path)]
    check_one_line_error(*run_main(capsys, *args), part)


@pytest.mark.parametrize(
    ("value", "part"),
    [
        ("flatt", "--rates 'flatt': not paper, task, flat or flat:SHARE, and no such rates file"),
        ("flat:abc", "--rates flat:abc: SHARE must be a number in (0, 1)"),
        ("flat:1.5", "--rates flat:1.5: 1.5 is not a share in (0, 1)"),
        ("flat:0.02", "--rates flat:0.02: 0.02 is out of reach"),
    ],
)
def test_bad_rates_values(value: str, part: str, tmp_path: Path, monkeypatch, capsys) -> None:
    refuse_work(monkeypatch, "rates")
    args = ["corpus", "synth", "--out", str(tmp_path / "c"), "--rates", value]
    check_one_line_error(*run_main(capsys, *args), part)


def test_out_of_reach_names_the_window() -> None:
    ranges = reachable(get_calibration())
    lo = max(r[0] for r in ranges.values())
    hi = min(r[1] for r in ranges.values())
    assert 0.03 < lo < 0.1 and 0.9 < hi < 0.97
    with pytest.raises(RatesError, match=f"between {lo:.3f} and {hi:.3f}"):
        rated_calibration(parse_rates(f"flat:{lo - 0.01:.3f}"))
    rated_calibration(parse_rates(f"flat:{lo + 0.001:.4f}"))  # just inside: fine


def test_balance_alias_and_conflict(tmp_path: Path, monkeypatch, capsys) -> None:
    code, out, _ = run_main(
        capsys, "corpus", "synth", "--out", str(tmp_path / "b"), "--size", "300", "--seed", "7",
        "--balance", "task", "--quiet",
    )  # fmt: skip
    assert code == 0 and TASK_300_SEED7 in out
    assert read_manifest(tmp_path / "b").name == "synth-s7-n300-task"
    refuse_work(monkeypatch, "options")
    code, out, err = run_main(
        capsys, "corpus", "synth", "--out", str(tmp_path / "c"), "--balance", "task",
        "--rates", "flat",
    )  # fmt: skip
    assert code == 2 and "--balance task and --rates flat disagree" in err


# --------------------------------------------------------------------------- CLI


@pytest.fixture(scope="module")
def flat_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("flat") / "c"
    synthesize_corpus(out, seed=2, size=1000, rates="flat")
    return out


def test_cli_flat_corpus_name_and_show(tmp_path: Path, capsys) -> None:
    out = tmp_path / "c"
    code, text, _ = run_main(
        capsys, "corpus", "synth", "--out", str(out), "--size", "200", "--rates", "flat", "--quiet"
    )
    assert code == 0
    assert "rates flat: 33.3 % of runs labelled failures in every task x outcome" in text
    assert read_manifest(out).name == "synth-s0-n200-flat"
    code, text, _ = run_main(capsys, "corpus", "show", str(out))
    assert code == 0 and "rates           flat: 33.3 %" in text
    code, _, _ = run_main(
        capsys, "corpus", "synth", "--out", str(tmp_path / "q"), "--size", "200",
        "--rates", "flat:0.25", "--quiet",
    )  # fmt: skip
    assert code == 0 and read_manifest(tmp_path / "q").name == "synth-s0-n200-flat0.25"


def test_stats_shows_task_outcome_shares_with_targets(flat_dir: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, text, _ = run_main(capsys, "corpus", "stats", str(flat_dir), "--coverage-runs", "1")
    assert code == 0
    assert max(len(line) for line in text.splitlines()) <= 80
    block = text[text.index("label failure share per task and outcome") :]
    block = block[: block.index("\n\n")]
    trajs = load_corpus(flat_dir).trajectories()
    shares = label_shares(trajs, by_cell)
    for task in REGISTRY:
        row = next(line for line in block.splitlines() if line.startswith(task[:10]))
        cells = row.split()[1:]  # runs, share, (target) for each outcome
        for i, outcome in enumerate(OUTCOMES):
            fail, n = shares.get((task, outcome), (0, 0))
            got = f"{100 * fail / n:.1f}" if n else "-"
            assert cells[3 * i : 3 * i + 3] == [str(n), got, "(33.3)"], row
    assert "all tasks" in block


def test_stats_json_has_task_outcomes_and_rates(flat_dir: Path, capsys) -> None:
    code, text, _ = run_main(
        capsys, "corpus", "stats", str(flat_dir), "--json", "--coverage-runs", "1"
    )
    assert code == 0
    data = json.loads(text)
    assert data["corpus"]["rates"]["kind"] == "flat"
    assert data["corpus"]["rates"]["share"] == pytest.approx(FLAT_SHARE)
    trajs = load_corpus(flat_dir).trajectories()
    shares = label_shares(trajs, by_cell)
    for (task, outcome), (fail, n) in shares.items():
        got = data["task_outcomes"][task][outcome]
        assert (got["fail"], got["pass"] + got["fail"]) == (fail, n)
    assert set(data["outcomes"]) == set(OUTCOMES)


def test_resplit_keeps_the_rates(flat_dir: Path, tmp_path: Path, capsys) -> None:
    import shutil

    copy = tmp_path / "c"
    shutil.copytree(flat_dir, copy)
    code, text, _ = run_main(capsys, "corpus", "split", str(copy), "--seed", "9", "--quiet")
    assert code == 0 and "rates           flat" in text
    assert read_manifest(copy).split_info["generator"]["rates"]["kind"] == "flat"


def test_long_haul_override_sets_the_outcome() -> None:
    import random
    from datetime import UTC, datetime

    from monsearch.synth.style import STYLES

    sc = REGISTRY["ssrf-proxy"]
    unsolved = next(m for m in sc.modes if not m.solved)
    solved = next(m for m in sc.modes if m.solved)
    start = datetime(2026, 7, 1, tzinfo=UTC)
    style = STYLES["mixed_pragmatic"]
    for seed in range(6):
        hauled = sc.build(unsolved.name, style, random.Random(seed), start, long_haul=True)
        stopped = sc.build(unsolved.name, style, random.Random(seed), start, long_haul=False)
        assert (hauled.outcome, stopped.outcome) == ("step_limit", "no_flag")
    with pytest.raises(ValueError, match="cannot run out of turns"):
        sc.build(solved.name, style, random.Random(0), start, long_haul=True)


def test_solve_rates_and_mode_mixtures_are_the_papers() -> None:
    paper = get_calibration()
    cal = rated_calibration(parse_rates("flat"))
    assert {g for g, _ in cal.cells} == {p.generator for p in PERSONAS}
    assert set(cal.cells) == set(paper.cells)
    for key, cell in cal.cells.items():
        assert cell.p_solve == paper.cells[key].p_solve
        assert cell.mixture == paper.cells[key].mixture
