"""Generate the default synthetic corpus and check it against the paper's numbers.

Prints: generation / write / load time; per persona, target vs measured (and
the calibration's exact expectation) for solve %, safe success %, reckless %
and Stealth@Solve; the N-weighted overall; the tasks the paper reports;
Fleiss' kappa, % unanimous, pairwise Cohen's kappa; oracle agreement with the
panel majority beside each panel member's; benign counts per split.
Any number outside its band is marked ``OUT``.

    python bench/synth_corpus.py [--size N] [--seed S] [--jobs J] [--json]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from jsonmode import add_json_flag, run_reporting

from monsearch.corpora.splits import make_split
from monsearch.corpora.stats import corpus_stats
from monsearch.corpora.store import load_corpus, write_corpus
from monsearch.synth.calibration import get_calibration
from monsearch.synth.generate import DEFAULT_FRACTIONS, DEFAULT_SIZE, generate
from monsearch.synth.personas import (
    AGREEMENT_TARGET,
    DEFAULT_CROSS_GENERATORS,
    OVERALL_TARGET,
    PERSONAS,
    TASK_DIFFICULTY,
)

RATE_BAND = 4.0  # percentage points
SAS_BAND = 0.06
KAPPA_BAND = 0.04
UNANIMOUS_BAND = 4.0


#: Every number outside its band, for --json (the text marks them ``OUT``).
_OUT: list[bool] = []


def _mark(ok: bool) -> str:
    if not ok:
        _OUT.append(True)
    return "" if ok else "  OUT"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=DEFAULT_SIZE)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1)
    add_json_flag(ap)
    run_reporting(ap.parse_args(), _run)


def _run(args: argparse.Namespace, report: dict) -> None:

    t0 = time.perf_counter()
    cal = get_calibration()
    t_cal = time.perf_counter() - t0
    trajs = generate(args.size, args.seed, n_jobs=args.jobs)
    t_gen = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "synth"
        t1 = time.perf_counter()
        split = make_split(
            trajs,
            seed=args.seed,
            cross_generators=DEFAULT_CROSS_GENERATORS,
            fractions=DEFAULT_FRACTIONS,
        )
        manifest = write_corpus(
            out, trajs, name="bench-synth", assignment=split.assignment, split_info=split.info
        )
        t_write = time.perf_counter() - t1
        t2 = time.perf_counter()
        corpus = load_corpus(out)
        t_load = time.perf_counter() - t2
        size_mb = sum(p.stat().st_size for p in out.iterdir()) / 1e6
    loaded = corpus.trajectories()
    assert len(loaded) == len(trajs)
    print(f"size {args.size}, seed {args.seed}, jobs {args.jobs}")
    print(
        f"calibration {t_cal:.2f} s; generation (incl. calibration) {t_gen:.1f} s; "
        f"split+write {t_write:.1f} s; total {t_gen + t_write:.1f} s; load {t_load:.2f} s; "
        f"{size_mb:.1f} MB on disk"
    )
    print(f"content hash {manifest.content_hash}")
    report.update(
        size=args.size,
        seed=args.seed,
        jobs=args.jobs,
        calibration_s=t_cal,
        generation_s=t_gen,
        write_s=t_write,
        total_s=t_gen + t_write,
        load_s=t_load,
        size_mb=size_mb,
        content_hash=manifest.content_hash,
    )
    steps = sorted(len(t.steps) for t in trajs)
    print(f"steps per trajectory: median {steps[len(steps) // 2]}, max {steps[-1]}")

    stats = corpus_stats(trajs)
    print("\nper persona: measured / target   (calibration's expectation in brackets)")
    print(
        f"{'persona':24s} {'n':>5s} {'solve %':>20s} {'safe %':>20s} {'reckless %':>20s} {'Stealth@Solve':>24s}"
    )
    for p in PERSONAS:
        g = stats["generators"][p.generator]
        e = cal.expected_persona(p.generator)
        cols = []
        for key, target, exp_key in (
            ("solve_rate", p.solve_pct, "solve_pct"),
            ("safe_success_rate", p.safe_pct, "safe_pct"),
            ("reckless_rate", p.reckless_pct, "reckless_pct"),
        ):
            m = 100 * g[key]
            cols.append(
                f"{m:5.1f}/{target:5.1f} [{e[exp_key]:4.1f}]{_mark(abs(m - target) <= RATE_BAND):5s}"
            )
        sas = g["stealth_at_solve"]
        cols.append(
            f"{sas:.3f}/{p.stealth_at_solve:.3f} [{e['stealth_at_solve']:.3f}]"
            f"{_mark(abs(sas - p.stealth_at_solve) <= SAS_BAND):5s}"
        )
        print(f"{p.name:24s} {g['runs']:5d} " + " ".join(cols))

    o = stats["overall"]
    eo = cal.expected_overall()
    print("\noverall (persona mix proportional to the paper's N):")
    for key, tkey in (
        ("solve_rate", "solve_pct"),
        ("safe_success_rate", "safe_pct"),
        ("reckless_rate", "reckless_pct"),
    ):
        m = 100 * o[key]
        print(
            f"  {tkey:14s} {m:5.1f} / {OVERALL_TARGET[tkey]:5.1f} [{eo[tkey]:5.1f}]"
            f"{_mark(abs(m - OVERALL_TARGET[tkey]) <= RATE_BAND)}"
        )
    print(f"  stealth@solve  {o['stealth_at_solve']:.3f} [{eo['stealth_at_solve']:.3f}]")
    print(f"  label failure share {100 * o['labels']['failure_rate']:.1f} %")

    print("\ntasks the paper reports: measured / paper")
    for task, d in TASK_DIFFICULTY.items():
        if not d.paper:
            continue
        tb = stats["tasks"][task]
        line = f"  {task:20s} solve {100 * tb['solve_rate']:5.1f}/{100 * d.solve:5.1f}"
        if "fail_given_solve" in d.paper:
            paper_safe = 100 * d.solve * (1 - d.fail_given_solve)
            line += f"  safe {100 * tb['safe_success_rate']:5.1f}/{paper_safe:5.1f}"
            line += f"  reckless {100 * tb['reckless_rate']:5.1f}"
        print(line)
    print("  other tasks (solve / safe / reckless %):")
    for task, d in TASK_DIFFICULTY.items():
        if d.paper:
            continue
        tb = stats["tasks"][task]
        print(
            f"    {task:20s} {100 * tb['solve_rate']:5.1f} {100 * tb['safe_success_rate']:5.1f} "
            f"{100 * tb['reckless_rate']:5.1f}"
        )

    ag = stats["agreement"]
    fk, un = ag["fleiss_kappa"], 100 * ag["unanimous_rate"]
    print("\njudge panel agreement (all valid complete panels):")
    print(
        f"  Fleiss kappa  {fk:.3f} / {AGREEMENT_TARGET['fleiss_kappa']:.3f} [{eo['fleiss_kappa']:.3f}]"
        f"{_mark(abs(fk - AGREEMENT_TARGET['fleiss_kappa']) <= KAPPA_BAND)}"
    )
    print(
        f"  unanimous     {un:.1f} % / {AGREEMENT_TARGET['unanimous_pct']:.1f} % [{eo['unanimous_pct']:.1f}]"
        f"{_mark(abs(un - AGREEMENT_TARGET['unanimous_pct']) <= UNANIMOUS_BAND)}"
    )
    print(f"  failure-vote rate {ag['failure_vote_rate']:.3f}")
    for pair in ag["cohen_kappa"]:
        print(f"  Cohen kappa {pair['judges'][0]} vs {pair['judges'][1]}: {pair['kappa']:.3f}")

    print("\nagreement with the panel majority (accuracy, Cohen kappa):")
    for judge, rec in stats["oracle"].items():
        print(
            f"  oracle {judge:22s} {100 * rec['accuracy']:5.1f} %  kappa {rec['cohen_kappa']:.3f}"
        )
    for judge in ag["judges"]:
        hits = n = 0
        for t in trajs:
            label = t.label
            for v in t.panel:
                if v.judge == judge:
                    n += 1
                    hits += v.is_failure == label.is_failure
        print(f"  member {judge:22s} {100 * hits / n:5.1f} %  (a member is part of the majority)")
    truth = sum(t.label.is_failure == t.meta["ground_truth_failure"] for t in trajs) / len(trajs)
    print(f"  panel label vs ground truth: {100 * truth:.1f} %")

    print("\nsplits: trajectories / benign (panel pass)")
    for name in corpus.split_names:
        ts = corpus.split(name)
        benign = sum(1 for t in ts if not t.label.is_failure)
        print(f"  {name:40s} {len(ts):6d} {benign:6d}")
    report["calibration_out_of_band"] = len(_OUT)
    report["fleiss_kappa"] = fk
    report["unanimous_pct"] = un


if __name__ == "__main__":
    main()
