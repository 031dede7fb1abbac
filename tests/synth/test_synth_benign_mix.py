"""Benign habit profiles and ``--benign-mix`` (synth/habits.py, corpora/benign_mix.py).

Shares are checked with binomial bands: ``n`` runs drawn at ``p`` land within
:data:`Z` standard errors of ``p`` but for a chance of about 6e-5 per check.
Independence from the mode and the label is a chi-square test at the 0.1 % level.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path

import pytest
from scipy.stats import chi2, chi2_contingency

from monsearch.corpora.benign_mix import (
    AXES,
    PRESETS,
    SHIFT,
    BenignMix,
    BenignMixError,
    all_profiles,
    parse_benign_mix,
)
from monsearch.corpora.store import read_manifest
from monsearch.synth.generate import (
    SynthError,
    build_trajectory,
    default_corpus_path,
    generate,
    plan,
    resolve_mix,
    synthesize_corpus,
)
from monsearch.synth.habits import (
    CLEAN_WANDER,
    NATURAL,
    PERSONA_SHARES,
    PROBE_SHARE,
    WANDER,
    HabitPlan,
    _coupled,
    retry_share,
)
from monsearch.synth.personas import PERSONAS
from monsearch.synth.rates import RatesError, load_rates_file
from monsearch.synth.scenario import LISTENER_CHECK, REGISTRY
from monsearch.synth.style import STYLES

Z = 4.0
SEED = 11
#: Tasks whose runs draw a benign slip the retry habit moves (synth/habits.slips).
RETRY_TASKS = {"staff-directory", "proxy-backoff", "project-board", "otel-collector"}
START = datetime(2026, 7, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def flat_runs() -> list:
    """2,400 runs drawn with every profile alike (the same mix for every persona)."""
    return generate(2400, SEED, benign_mix="flat")


@pytest.fixture(scope="module")
def paper_runs() -> list:
    return generate(1200, SEED + 1)


def within(count: int, n: int, p: float) -> bool:
    se = math.sqrt(max(p * (1 - p), 1e-12) / n)
    return abs(count / n - p) <= Z * se + 1e-12


# ---- the mix


def test_parse_presets_items_and_canonical_spec() -> None:
    assert parse_benign_mix(None) == BenignMix() and BenignMix().is_default
    assert parse_benign_mix("quiet").shares() == dict.fromkeys(AXES, pytest.approx(1 - SHIFT))
    mix = parse_benign_mix("noisy,patient:0.7,Retry-Happy:0.3")
    assert mix.shares() == {"recon": SHIFT, "retry": pytest.approx(0.3), "infra": SHIFT}
    assert parse_benign_mix(mix.spec) == mix  # the spec reads back as the same mix
    assert parse_benign_mix("probing:0.2").shares({"recon": 0.5, "retry": 0.4, "infra": 0.9}) == {
        "recon": 0.5, "retry": 0.4, "infra": 0.2,
    }  # fmt: skip
    assert mix.name_suffix == "-mix-noisy-retry_happy-0.3".replace("_", "-")
    assert BenignMix().name_suffix == ""
    assert len(all_profiles()) == 8 and len(set(all_profiles())) == 8


@pytest.mark.parametrize(
    ("spec", "part"),
    [
        ("", "empty item"),
        ("quiet,,noisy", "empty item"),
        ("patent:0.7", "did you mean 'patient'"),
        ("patient", "needs a share"),
        ("patient:lots", "must be a number"),
        ("patient:1.5", "not a share in [0, 1]"),
        ("patient:nan", "not a share in [0, 1]"),
        ("patient:0.7,retry_happy:0.4", "must sum to 1"),
        ("patient:0.7,patient:0.6", "given twice"),
        ("patient:0.7,quiet", "may only come first"),
    ],
)
def test_bad_mix_values_are_one_line_errors(spec: str, part: str) -> None:
    with pytest.raises(BenignMixError) as err:
        parse_benign_mix(spec)
    assert part in str(err.value) and "\n" not in str(err.value)


def test_persona_shares_cover_every_persona_and_pool_to_the_natural_shares() -> None:
    assert set(PERSONA_SHARES) == {p.generator for p in PERSONAS}
    total = sum(p.n for p in PERSONAS)
    for axis, natural in (*NATURAL.items(), ("retry", 0.5)):
        pooled = sum(p.n * PERSONA_SHARES[p.generator][axis] for p in PERSONAS) / total
        assert abs(pooled - natural) < 0.01, axis
    # Careful personas are more often patient than the two most reckless ones.
    careful = ("nvidia/nemotron-3-ultra", "arcee-ai/trinity-large-thinking")
    reckless = ("moonshotai/kimi-k3", "z-ai/glm-5.2")
    assert max(PERSONA_SHARES[g]["retry"] for g in careful) < min(
        PERSONA_SHARES[g]["retry"] for g in reckless
    )


def test_every_task_listener_check_fits_within_the_probing_share() -> None:
    assert max(LISTENER_CHECK.values()) <= PROBE_SHARE


# ---- drawing profiles


def test_coupling_gives_the_target_and_keeps_the_natural_level_where_it_can() -> None:
    grid = [(k + 0.5) / 20_000 for k in range(20_000)]  # u over [0, 1)
    for q in (NATURAL["recon"], 0.5):
        for target in (0.0, 0.1, q, 0.7, 1.0):
            noisy = sum(_coupled(True, q, target, u) for u in grid) / len(grid)
            quiet = sum(_coupled(False, q, target, u) for u in grid) / len(grid)
            assert q * noisy + (1 - q) * quiet == pytest.approx(target, abs=1e-4)
            kept = q * noisy + (1 - q) * (1 - quiet)
            assert kept == pytest.approx(1 - abs(target - q), abs=1e-4)  # a maximal coupling


def test_retry_share_moves_each_slip_and_keeps_its_mean_half_and_half() -> None:
    for p in (0.02, 0.12, 0.25, 0.35, 0.5, 0.75, 0.98):
        lo, hi = retry_share(p, -1.0), retry_share(p, 1.0)
        assert 0.0 < lo < p < hi < 1.0
        assert (lo + hi) / 2 == pytest.approx(p)
    assert retry_share(0.35, 0.0) == 0.35


def _episode(task: str, mode: str, k: int, habits: HabitPlan | None):
    return REGISTRY[task].build(
        mode, STYLES["mixed_pragmatic"], random.Random(k), START, habits=habits
    )


def test_natural_shares_play_the_habits_of_runs_without_a_profile() -> None:
    """At the shares the older draws give, wandering and listener checks are exactly
    those of a run without a profile: in every task whose runs draw no retry slip, the
    steps are the same, for every mode."""
    natural = {**NATURAL, "retry": 0.5}
    checked = 0
    for task in sorted(set(REGISTRY) - RETRY_TASKS):
        for i, m in enumerate(REGISTRY[task].modes):
            for k in range(3):
                seed = 1000 * i + k
                plan = HabitPlan(natural, random.Random(seed + 7), "natural")
                a, b = _episode(task, m.name, seed, None), _episode(task, m.name, seed, plan)
                assert [s.text for s in a.steps] == [s.text for s in b.steps], (task, m.name)
                assert [s.observation for s in a.steps] == [s.observation for s in b.steps]
                assert a.habits is None and b.habits is not None
                checked += 1
    assert checked > 200


def test_profiles_record_levels_values_and_source_probabilities(paper_runs: list) -> None:
    for t in paper_runs:
        h = t.meta["habits"]
        shares = PERSONA_SHARES[t.generator]
        assert h["profile"] == "/".join(h[a] for a in AXES)
        assert h["mix"] == "paper"
        for axis, (quiet, noisy) in AXES.items():
            assert h[axis] in (quiet, noisy)
            p = shares[axis] if h[axis] == noisy else 1 - shares[axis]
            assert h["p"][axis] == pytest.approx(p)
        assert (h["wander"] in WANDER[:CLEAN_WANDER]) is (h["recon"] == "clean")
        assert not h["listener_check"] or h["infra"] == "probing"
        assert h["retry_shift"] == (0.9 if h["retry"] == "retry_happy" else -0.9)


def test_paper_shares_per_persona(paper_runs: list) -> None:
    by: dict = defaultdict(Counter)
    for t in paper_runs:
        for axis, (_, noisy) in AXES.items():
            by[(t.generator, axis)][t.meta["habits"][axis] == noisy] += 1
    for (gen, axis), c in by.items():
        n = c[True] + c[False]
        assert within(c[True], n, PERSONA_SHARES[gen][axis]), (gen, axis, c)


def test_profile_shares_match_the_mix(flat_runs: list) -> None:
    counts = Counter(t.meta["habits"]["profile"] for t in flat_runs)
    n = len(flat_runs)
    assert set(counts) == set(all_profiles())
    for profile in all_profiles():
        assert within(counts[profile], n, 1 / 8), (profile, counts)
    quiet = generate(400, SEED, benign_mix="quiet,probing:0.5")
    for axis, (_, noisy) in AXES.items():
        k = sum(t.meta["habits"][axis] == noisy for t in quiet)
        assert within(k, len(quiet), 0.5 if axis == "infra" else 1 - SHIFT), axis


def test_profiles_are_independent_of_mode_and_label(flat_runs: list) -> None:
    """Under one mix for every persona, the profile tells nothing of the label or the
    kind of mode (chi-square at 0.1 %)."""
    profiles = all_profiles()
    kinds = ("stealthy", "reckless", "unsolved", "unsolved_reckless")
    by_label = [[0] * len(profiles) for _ in range(2)]
    by_kind = [[0] * len(profiles) for _ in kinds]
    for t in flat_runs:
        j = profiles.index(t.meta["habits"]["profile"])
        by_label[int(t.label.is_failure)][j] += 1
        kind = next(m.kind for m in REGISTRY[t.task].modes if m.name == t.meta["mode"])
        by_kind[kinds.index(kind)][j] += 1
    assert chi2_contingency(by_label).pvalue > 1e-3
    assert chi2_contingency([row for row in by_kind if sum(row)]).pvalue > 1e-3


def test_paper_profiles_are_independent_of_the_label_within_each_persona(paper_runs: list) -> None:
    """The paper mix differs between personas (and so do their failure rates): within
    each persona the levels are independent of the label (chi-square summed over
    personas, one degree of freedom per persona and axis)."""
    for axis, (_, noisy) in AXES.items():
        stat, df = 0.0, 0
        for gen in PERSONA_SHARES:
            table = [[0, 0], [0, 0]]
            for t in paper_runs:
                if t.generator == gen:
                    table[int(t.label.is_failure)][int(t.meta["habits"][axis] == noisy)] += 1
            if min(min(r) for r in table) < 5:
                continue
            stat += chi2_contingency(table, correction=False).statistic
            df += 1
        assert df >= 5 and chi2.sf(stat, df) > 1e-3, axis


def test_retry_habit_moves_benign_slips() -> None:
    """A stealthy staff-directory run slips into the limit (and backs off) far more
    often when retry-happy than when patient."""
    saw = {}
    for share in (0.0, 1.0):
        seen = 0
        for k in range(150):
            plan = HabitPlan({"recon": 0.5, "retry": share, "infra": 0.5}, random.Random(k), "t")
            ep = _episode("staff-directory", "stealthy", k, plan)
            seen += any("429" in s.observation for s in ep.steps)
        saw[share] = seen / 150
    # retry_share(0.75, -1) = 0.525, retry_share(0.75, +1) = 0.975 (a slip shows its 429
    # in all but a few runs)
    assert saw[0.0] < 0.65 and saw[1.0] > 0.85, saw


def test_build_trajectory_draws_the_profile_on_its_own_stream() -> None:
    """Only the habit stream differs between mixes: persona, style, mode and start are
    the same for the same (seed, n)."""
    gen, task = plan(100, SEED)[5]
    a = build_trajectory(SEED, 5, gen, task)
    b = build_trajectory(SEED, 5, gen, task, benign_mix="noisy")
    assert a.id == b.id and a.panel == b.panel
    for key in ("persona", "style", "mode", "family"):
        assert a.meta[key] == b.meta[key]
    assert b.meta["habits"]["mix"] == "noisy" and a.meta["habits"]["mix"] == "paper"


# ---- corpora, rates files


def test_manifest_records_the_mix_and_the_name_says_it(tmp_path: Path) -> None:
    res = synthesize_corpus(tmp_path / "c", seed=SEED, size=120, benign_mix="noisy,patient:1")
    manifest = read_manifest(tmp_path / "c")
    assert manifest.name == "synth-s11-n120-mix-noisy-retry-happy-0"
    rec = manifest.split_info["generator"]["benign_mix"]
    assert rec["spec"] == "noisy,retry_happy:0" and rec["base"] == "noisy"
    assert set(rec["noisy_share"]) == set(PERSONA_SHARES)
    assert all(v == {"recon": SHIFT, "retry": 0.0, "infra": SHIFT} for v in rec["noisy_share"].values())
    assert res.content_hash
    default = synthesize_corpus(tmp_path / "d", seed=SEED, size=120)
    rec = read_manifest(tmp_path / "d").split_info["generator"]["benign_mix"]
    assert read_manifest(tmp_path / "d").name == "synth-s11-n120"
    assert rec["spec"] == "paper" and rec["noisy_share"] == {
        g: {a: round(v, 6) for a, v in s.items()} for g, s in PERSONA_SHARES.items()
    }
    assert default.content_hash != res.content_hash


def test_default_cache_key_includes_the_mix(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MONSEARCH_CACHE", str(tmp_path))
    paper = default_corpus_path(0, 100)
    assert default_corpus_path(0, 100, "paper") == paper
    assert default_corpus_path(0, 100, "quiet") != paper
    assert default_corpus_path(0, 100, "quiet").name.endswith("-mix-quiet")
    assert "-h" in paper.name and not paper.name.endswith("-mix-paper")


RATES_WITH_MIX = """\
benign_mix = "quiet,probing:0.5"

[rates]
default = 0.3
"""

RATES_WITH_TABLE = """\
[rates]
default = 0.3

[benign_mix]
preset = "noisy"
patient = 0.9
"""


def test_rates_file_sets_the_mix(tmp_path: Path) -> None:
    f = tmp_path / "r.toml"
    f.write_text(RATES_WITH_MIX)
    rates = load_rates_file(f)
    assert rates.benign_mix == "quiet,probing:0.5"
    assert resolve_mix(None, rates) == parse_benign_mix("quiet,probing:0.5")
    assert resolve_mix("quiet,probing:0.5", rates) == parse_benign_mix(rates.benign_mix)
    with pytest.raises(SynthError, match="disagree"):
        resolve_mix("noisy", rates)
    g = tmp_path / "t.toml"
    g.write_text(RATES_WITH_TABLE)
    assert load_rates_file(g).benign_mix == "noisy,retry_happy:0.1"
    j = tmp_path / "r.json"
    j.write_text(json.dumps({"rates": {"default": 0.3}, "benign_mix": {"probing": 0.1}}))
    assert load_rates_file(j).benign_mix == "paper,probing:0.1"
    runs = generate(40, SEED, rates=rates)
    assert {t.meta["habits"]["mix"] for t in runs} == {"quiet,probing:0.5"}


@pytest.mark.parametrize(
    ("text", "part"),
    [
        ('benign_mix = "calm"\n[rates]\ndefault = 0.3\n', "r.toml: benign_mix 'calm'"),
        ("benign_mix = 3\n[rates]\ndefault = 0.3\n", "r.toml: benign_mix: expected"),
        ('[rates]\ndefault = 0.3\n[benign_mix]\npreset = "loud"\n', "r.toml: benign_mix.preset"),
        ("[rates]\ndefault = 0.3\n[benign_mix]\npatient = 2\n", "r.toml: benign_mix: patient"),
    ],
)
def test_bad_benign_mix_in_a_rates_file_names_file_and_key(
    text: str, part: str, tmp_path: Path
) -> None:
    f = tmp_path / "r.toml"
    f.write_text(text)
    with pytest.raises(RatesError) as err:
        load_rates_file(f)
    assert part in str(err.value) and "\n" not in str(err.value)


def test_presets_are_what_the_docs_say() -> None:
    assert PRESETS["flat"] == dict.fromkeys(AXES, 0.5)
    assert PRESETS["paper"] is None
    assert PRESETS["noisy"] == dict.fromkeys(AXES, SHIFT)
