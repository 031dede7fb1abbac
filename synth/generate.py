"""Assemble the synthetic corpus: plan, draw, build, judge, split, write.

Determinism: the plan (which persona and task each trajectory ``n`` gets) is a
function of ``(seed, size)``; every trajectory then draws from its own
``random.Random`` seeded by sha256 of ``(seed, n, purpose)``, so the output does
not depend on chunking, worker count or order of completion, and the same seed
gives a byte-identical corpus (same content hash).
"""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from monsearch.corpora.benign_mix import BenignMix, parse_benign_mix
from monsearch.corpora.model import Trajectory
from monsearch.errors import MonsearchError
from monsearch.synth import family as fam
from monsearch.synth.calibration import BALANCES, Cell, PersonaTask, get_calibration
from monsearch.synth.habits import PERSONA_SHARES, HabitPlan, persona_shares
from monsearch.synth.judges import judge_trajectory
from monsearch.synth.personas import (
    DEFAULT_CROSS_GENERATORS,
    PERSONAS,
    Persona,
    persona_counts,
)
from monsearch.synth.rated import expected_label_shares, rated_calibration
from monsearch.synth.rates import Rates, parse_rates, preset
from monsearch.synth.scenario import REGISTRY
from monsearch.synth.style import in_image_style

#: Bump when the generator's output for a given seed changes on purpose (cache key).
GENERATOR_VERSION = "6"
#: Default corpus size. Five personas (67 % of runs) make train/val/test, less the 12 %
#: of their runs written in the held-out template family (``xgen-family``); about half
#: are benign, so a quarter for ``val`` gives over 1,000 benign runs there.
DEFAULT_SIZE = 15_000
DEFAULT_FRACTIONS = (0.5, 0.25, 0.25)
DEFAULT_SEED = 0
#: Runs start at random times over 60 days from here (timestamps are part of the data).
BASE_TIME = datetime(2026, 7, 1, tzinfo=UTC)
CHUNK = 250  # trajectories per parallel work unit (does not affect the output)

ProgressFn = Callable[[int, int], None]


class SynthError(MonsearchError):
    """Bad parameters for the synthetic generator."""


def _rng(seed: int, n: int, purpose: str) -> random.Random:
    digest = hashlib.sha256(f"monsearch-synth\x1f{seed}\x1f{n}\x1f{purpose}".encode()).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


def plan(size: int, seed: int) -> list[tuple[str, str]]:
    """(generator, task) for each trajectory index: persona counts proportional to the
    paper's N, tasks as even as possible within each persona, order shuffled by ``seed``."""
    if size < 1:
        raise SynthError(f"size must be at least 1, got {size}")
    tasks = sorted(REGISTRY)
    rng = _rng(seed, -1, "plan")
    items: list[tuple[str, str]] = []
    for gen, count in persona_counts(size, PERSONAS).items():
        full, rest = divmod(count, len(tasks))
        extra = rng.sample(tasks, rest)
        items.extend((gen, t) for t in tasks for _ in range(full))
        items.extend((gen, t) for t in sorted(extra))
    rng.shuffle(items)
    return items


def trajectory_id(task: str, seed: int, n: int) -> str:
    return f"syn-{task}-{seed}-{n:06d}"


def _pick_style(persona: Persona, rng: random.Random) -> str:
    if rng.random() < persona.main_style_share or not persona.alt_styles:
        return persona.main_style
    return rng.choice(persona.alt_styles)


#: Generator option (off by default): let personas use clients the StealthBench agent
#: image lacks (wget, httpie). Runs generated with it carry ``meta["out_of_image"]``.
OUT_OF_IMAGE_DEFAULT = False


def _pick_cell(pt: PersonaTask, rng: random.Random) -> Cell:
    solved = rng.random() < pt.p_solve
    failure = rng.random() < (pt.p_fail_solved if solved else pt.p_fail_unsolved)
    return (solved, failure)


#: Default per-task failure rates: the paper's (``"task"``: every task balanced).
#: ``balance`` is the older name of ``rates`` for these two (see :func:`resolve_rates`).
BALANCE_DEFAULT = "paper"


def resolve_rates(balance: str = BALANCE_DEFAULT, rates: Rates | str | None = None) -> Rates:
    """The rates a corpus is drawn for: ``rates`` (a :class:`Rates` or a ``--rates``
    value), else ``balance``, which names the ``paper`` or ``task`` rates and must
    agree with ``rates`` when both are given."""
    if balance not in BALANCES:
        raise SynthError(f"balance must be one of {', '.join(BALANCES)}, got {balance!r}")
    if rates is None:
        return preset(balance)
    chosen = parse_rates(rates)
    if balance != BALANCE_DEFAULT and chosen.kind != balance:
        raise SynthError(
            f"balance={balance!r} and rates={chosen.spec!r} disagree (balance names the "
            "paper or task rates; give one)"
        )
    return chosen


def resolve_mix(
    benign_mix: BenignMix | str | None = None, rates: Rates | str | None = None
) -> BenignMix:
    """The benign habit mix a corpus is drawn with: ``benign_mix`` (a :class:`BenignMix`
    or a ``--benign-mix`` value), else a rates file's ``benign_mix``, else ``paper``;
    given both ways, they must agree."""
    chosen = None if benign_mix is None else parse_benign_mix(benign_mix)
    from_rates = None
    if rates is not None:
        r = parse_rates(rates)
        from_rates = None if r.benign_mix is None else parse_benign_mix(r.benign_mix)
    if chosen is not None and from_rates is not None and chosen != from_rates:
        raise SynthError(
            f"benign_mix={chosen.spec!r} and the rates file's benign_mix "
            f"{from_rates.spec!r} disagree; give one"
        )
    return chosen or from_rates or BenignMix()


def build_trajectory(
    seed: int,
    n: int,
    generator: str,
    task: str,
    *,
    out_of_image: bool = OUT_OF_IMAGE_DEFAULT,
    balance: str = BALANCE_DEFAULT,
    rates: Rates | str | None = None,
    agent_class: type | None = None,
    benign_mix: BenignMix | str | None = None,
) -> Trajectory:
    """Trajectory ``n`` of the corpus for ``seed``: persona behaviour, episode, verdicts.

    ``out_of_image`` enables the labelled variant whose styles use wget / httpie;
    ``balance="task"`` draws behaviour from the per-task balanced calibration;
    ``rates`` (see :mod:`~monsearch.synth.rates`) from chosen label rates;
    ``agent_class``: the agent that plays the run (the live corpus's executes it);
    ``benign_mix``: the mix its benign habit profile is drawn from (``paper``, ``quiet``,
    ``noisy``, ``flat``, ``LEVEL:SHARE`` items, or a :class:`BenignMix`; default: a
    rates file's ``benign_mix``, else ``paper``), recorded in ``meta["habits"]``.
    """
    chosen = resolve_rates(balance, rates)
    mix = resolve_mix(benign_mix, chosen)
    rng = _rng(seed, n, "draw")
    outcome: str | None = None  # under chosen rates, the outcome the run must have
    if chosen.calibrated:
        cal = get_calibration(balance=chosen.kind)
        persona = next(p for p in cal.personas if p.generator == generator)
        pt = cal.cell(generator, task)
        style_name, style = in_image_style(_pick_style(persona, rng), out_of_image=out_of_image)
        mixture = pt.mixture[_pick_cell(pt, rng)]
    else:
        rc = rated_calibration(chosen).cell(generator, task)
        persona = next(p for p in PERSONAS if p.generator == generator)
        style_name, style = in_image_style(_pick_style(persona, rng), out_of_image=out_of_image)
        cell, outcome = rc.draw(rng)
        mixture = rc.mixture[cell]
    modes = [m for m, _ in mixture]
    mode = rng.choices(modes, weights=[w for _, w in mixture])[0]
    start = BASE_TIME + timedelta(
        seconds=rng.randrange(60 * 86400), microseconds=rng.randrange(10**6)
    )
    # The template family, drawn after (and independently of) the behaviour: only runs
    # of train/val/test personas are written in the held-out family (family.py).
    held_out = not persona.cross_generator and _rng(seed, n, "family").random() < fam.HELD_OUT_SHARE
    family = fam.HELD_OUT_FAMILY if held_out else fam.DEFAULT_FAMILY
    scenario = REGISTRY[task]
    # The habit profile has its own stream: no other draw of the run depends on it.
    habits = HabitPlan(persona_shares(mix, generator), _rng(seed, n, "habits"), mix.spec)
    episode = scenario.build(
        mode.name,
        style,
        _rng(seed, n, "episode"),
        start,
        family=family,
        long_haul=None if outcome is None else outcome == "step_limit",
        **({} if agent_class is None else {"agent_class": agent_class}),
        habits=habits,
    )
    if outcome is not None and episode.outcome != outcome:
        # The chosen rates are per outcome: a run that ends otherwise would miss them.
        raise RuntimeError(
            f"trajectory {n} ({task}, mode {mode.name}) ended {episode.outcome}, drawn {outcome}"
        )
    panel, oracle = judge_trajectory(task, mode, _rng(seed, n, "judges"))
    return scenario.trajectory(
        episode,
        trajectory_id(task, seed, n),
        generator,
        panel=panel,
        oracle=oracle,
        meta={
            "source_format": "synthetic",
            "persona": persona.name,
            "style": style_name,
            "mode": mode.name,
            "hard": mode.hard,
            "ground_truth_failure": mode.failure,
            "family": family,
            **({fam.HELD_OUT_META: fam.HELD_OUT_SPLIT} if held_out else {}),
            **({"out_of_image": True} if out_of_image else {}),
            **({"balance": chosen.kind} if chosen.kind == "task" else {}),
            **({"rates": chosen.spec} if not chosen.calibrated else {}),
            "habits": episode.habits,
        },
    )


def _build_chunk(
    seed: int,
    start: int,
    items: list[tuple[str, str]],
    out_of_image: bool = False,
    rates: Rates | None = None,
    benign_mix: BenignMix | None = None,
) -> list[Trajectory]:
    return [
        build_trajectory(
            seed, start + i, g, t, out_of_image=out_of_image, rates=rates, benign_mix=benign_mix
        )
        for i, (g, t) in enumerate(items)
    ]


def iter_trajectories(
    size: int,
    seed: int,
    *,
    n_jobs: int = 1,
    out_of_image: bool = OUT_OF_IMAGE_DEFAULT,
    balance: str = BALANCE_DEFAULT,
    rates: Rates | str | None = None,
    benign_mix: BenignMix | str | None = None,
) -> Iterator[list[Trajectory]]:
    """Chunks of the corpus in index order; ``n_jobs > 1`` builds chunks in worker processes."""
    chosen = resolve_rates(balance, rates)
    mix = resolve_mix(benign_mix, chosen)
    items = plan(size, seed)
    chunks = [(s, items[s : s + CHUNK]) for s in range(0, len(items), CHUNK)]
    # Fail early (and once) if the scenarios do not fit or a target is out of reach.
    if chosen.calibrated:
        get_calibration(balance=chosen.kind)
    else:
        rated_calibration(chosen)
    if n_jobs == 1 or len(chunks) < 2:
        for s, part in chunks:
            yield _build_chunk(seed, s, part, out_of_image, chosen, mix)
        return
    from joblib import Parallel, delayed

    runner = Parallel(n_jobs=n_jobs, return_as="generator", batch_size=1)
    yield from runner(
        delayed(_build_chunk)(seed, s, part, out_of_image, chosen, mix) for s, part in chunks
    )


def generate(
    size: int,
    seed: int,
    *,
    n_jobs: int = 1,
    progress: ProgressFn | None = None,
    out_of_image: bool = OUT_OF_IMAGE_DEFAULT,
    balance: str = BALANCE_DEFAULT,
    rates: Rates | str | None = None,
    benign_mix: BenignMix | str | None = None,
) -> list[Trajectory]:
    """The whole corpus as trajectories (index order). Same output for any ``n_jobs``.

    ``rates``: the label failure rates to draw for (``"paper"``, ``"task"``,
    ``"flat"``, ``"flat:0.25"``, a rates file, or a :class:`Rates`); ``balance`` is
    the older name of the first two. ``benign_mix``: the benign habit mix
    (:func:`build_trajectory`).
    """
    chosen = resolve_rates(balance, rates)
    mix = resolve_mix(benign_mix, chosen)
    out: list[Trajectory] = []
    for chunk in iter_trajectories(
        size, seed, n_jobs=n_jobs, out_of_image=out_of_image, rates=chosen, benign_mix=mix
    ):
        out.extend(chunk)
        if progress is not None:
            progress(len(out), size)
    return out


@dataclass(frozen=True)
class SynthResult:
    path: Path
    content_hash: str
    counts: dict[str, int]  # trajectories per split
    benign: dict[str, int]  # panel-pass trajectories per split


def rates_record(rates: Rates) -> dict:
    """What the manifest records of ``rates``: what they are, and the label failure
    shares per task and outcome they give (see :meth:`Rates.record`)."""
    return rates.record(*expected_label_shares(rates))


def mix_record(mix: BenignMix) -> dict:
    """What the manifest records of a benign habit mix: its spec and the shares each
    persona's runs are drawn with."""
    return mix.record({g: persona_shares(mix, g) for g in PERSONA_SHARES})


def synthesize_corpus(
    out: Path,
    *,
    seed: int = DEFAULT_SEED,
    size: int = DEFAULT_SIZE,
    cross_generators: Sequence[str] = DEFAULT_CROSS_GENERATORS,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    name: str | None = None,
    n_jobs: int = 1,
    progress: Callable[[str, int, int], None] | None = None,
    out_of_image: bool = OUT_OF_IMAGE_DEFAULT,
    balance: str = BALANCE_DEFAULT,
    rates: Rates | str | None = None,
    benign_mix: BenignMix | str | None = None,
) -> SynthResult:
    """Generate, split and write a synthetic corpus to ``out`` (atomically).

    ``rates``: the panel-label failure rates to draw for (see
    :mod:`~monsearch.synth.rates`): ``"paper"`` (the default), ``"task"``
    (every task at the same failure shares, the paper's per-model rates kept; also
    ``balance="task"``), ``"flat"`` / ``"flat:SHARE"`` (every task x outcome and
    every generator alike), or a rates file. The manifest records them, and the
    default name says them (``synth-s0-n15000-flat``).

    ``benign_mix``: the benign habit mix (``paper`` by default; see
    :mod:`~monsearch.corpora.benign_mix`); the manifest records it and the default
    name says it when it is not the default (``synth-s0-n15000-mix-quiet``).

    ``progress(phase, done, total)`` is called with phase ``"generate"`` then ``"write"``.
    """
    from monsearch.corpora.splits import make_split
    from monsearch.corpora.store import write_corpus

    def gen_progress(done: int, total: int) -> None:
        if progress is not None:
            progress("generate", done, total)

    def write_progress(done: int, total: int) -> None:
        if progress is not None:
            progress("write", done, total)

    chosen = resolve_rates(balance, rates)
    mix = resolve_mix(benign_mix, chosen)
    trajs = generate(
        size,
        seed,
        n_jobs=n_jobs,
        progress=gen_progress,
        out_of_image=out_of_image,
        rates=chosen,
        benign_mix=mix,
    )
    split = make_split(
        trajs, seed=seed, cross_generators=list(cross_generators), fractions=fractions
    )
    info = dict(split.info)
    info["generator"] = {
        "name": "monsearch-synth",
        "version": GENERATOR_VERSION,
        "seed": seed,
        "size": size,
        "out_of_image_clients": out_of_image,
        **({"balance": chosen.kind} if chosen.calibrated else {}),
        "rates": rates_record(chosen),
        "benign_mix": mix_record(mix),
    }
    manifest = write_corpus(
        Path(out),
        trajs,
        name=name or f"synth-s{seed}-n{size}{chosen.name_suffix}{mix.name_suffix}",
        assignment=split.assignment,
        split_info=info,
        progress=write_progress,
    )
    counts: dict[str, int] = {}
    benign: dict[str, int] = {}
    for t in trajs:
        s = split.assignment[t.id]
        counts[s] = counts.get(s, 0) + 1
        label = t.label
        if label is not None and not label.is_failure:
            benign[s] = benign.get(s, 0) + 1
    return SynthResult(Path(out), manifest.content_hash, counts, benign)


# ---- the embedded default corpus, built once and cached ----


#: What the generator is made of: its code and the tables it keeps as data (tables.py).
SOURCE_SUFFIXES = frozenset({".py", ".toml"})


def _source_fingerprint(root: Path | None = None) -> str:
    """sha256 over the generator's own source and data files (those below ``root``,
    by default this package), so an edited generator never reuses a stale cache."""
    root = root or Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.suffix in SOURCE_SUFFIXES and path.is_file():
            rel = path.relative_to(root).as_posix().encode()
            h.update(rel + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def cache_dir() -> Path:
    """``$MONSEARCH_CACHE``, else the platform's user cache dir for monsearch."""
    env = os.environ.get("MONSEARCH_CACHE")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_cache_path

    return user_cache_path("monsearch", appauthor=False)


def default_corpus_path(
    seed: int = DEFAULT_SEED, size: int = DEFAULT_SIZE, benign_mix: BenignMix | str | None = None
) -> Path:
    """Where the default corpus for ``seed`` (drawn with ``benign_mix``, by default
    ``paper``) lives in the cache (it may not exist yet). The key holds a digest of the
    shares every persona is drawn with, and the mix's name when it is not the default."""
    mix = parse_benign_mix(benign_mix)
    digest = mix_record(mix)["sha256"][:8]
    key = f"synth-v{GENERATOR_VERSION}-{_source_fingerprint()}-s{seed}-n{size}-h{digest}"
    return cache_dir() / "corpora" / (key + mix.name_suffix)


def ensure_default_corpus(
    seed: int = DEFAULT_SEED,
    size: int = DEFAULT_SIZE,
    *,
    n_jobs: int = 1,
    progress: Callable[[str, int, int], None] | None = None,
    benign_mix: BenignMix | str | None = None,
) -> Path:
    """The default synthetic corpus (drawn with ``benign_mix``, by default ``paper``),
    generated on first use and reused afterwards."""
    from monsearch.corpora.store import MANIFEST

    path = default_corpus_path(seed, size, benign_mix)
    if (path / MANIFEST).is_file():
        return path
    synthesize_corpus(
        path, seed=seed, size=size, n_jobs=n_jobs, progress=progress, benign_mix=benign_mix
    )
    return path
