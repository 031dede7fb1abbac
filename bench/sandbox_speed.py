"""Sandbox speed: the seed monitor sandboxed vs plain ``exec``, on the default corpus's val split.

Prints, side by side in one run:

* plain exec: builtin ``compile`` + real builtins, scoring the same views in this process;
* restricted in-process: RestrictedPython compile + guards, same views, same process
  (the language layer's own overhead);
* sandboxed end to end: ``SandboxPool.evaluate`` on one worker (fork of a fresh child,
  rlimits, compile, scoring, result pipe), the time a search pays per candidate;
* throughput: trajectory scorings per second with the default number of workers.

Run: ``python bench/sandbox_speed.py [--size N] [--repeat R] [--candidates K] [--json]``.
Uses ``ensure_default_corpus`` (generated once and cached); if the generator is not
usable it says so and falls back to the hand-built test corpus.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jsonmode import add_json_flag, run_reporting

from monsearch.sandbox.evaluate import SandboxLimits, SandboxPool
from monsearch.sandbox.examples.seed_monitor import SEED_MONITOR
from monsearch.sandbox.helpers import HELPERS
from monsearch.sandbox.runner import run_program
from monsearch.sandbox.workers import compact_views, release_free_memory
from monsearch.views.build import build_view


def load_val(size: int | None) -> tuple[list[Any], str]:
    try:
        from monsearch.corpora.store import load_corpus
        from monsearch.synth.generate import DEFAULT_SIZE, ensure_default_corpus

        path = ensure_default_corpus(size=size or DEFAULT_SIZE)
        trajs = load_corpus(path, ["val"]).split("val")
        return trajs, f"default synthetic corpus, val split ({path.name})"
    except Exception as exc:  # the generator may be unfinished: say so and go on
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
        from sandbox_support import make_trajectories

        n = 2500 if size is None else max(1, size // 6)
        reason = f"{type(exc).__name__}: {str(exc)[:120]}"
        return make_trajectories(
            n
        ), f"FALLBACK hand-built test corpus, {n} trajectories (generator unusable: {reason})"


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - started)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--size", type=int, default=None, help="corpus size (default: the default corpus)"
    )
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--candidates", type=int, default=16)
    add_json_flag(parser)
    run_reporting(parser.parse_args(), _run)


def _run(args: argparse.Namespace, report: dict) -> None:

    trajs, source = load_val(args.size)
    ids = [t.id for t in trajs]
    started = time.perf_counter()
    # The same (densely re-allocated) views the workers hold, so the baselines differ
    # from the sandbox only in how the program runs, not in memory layout.
    views = compact_views([build_view(t) for t in trajs])
    release_free_memory()
    build_s = time.perf_counter() - started
    n = len(views)
    print(f"corpus: {source}")
    print(f"trajectories: {n}; views built in {build_s:.2f} s; cores: {os.cpu_count()}")
    print(f"seed monitor: {len(SEED_MONITOR.splitlines())} lines\n")

    def plain() -> list[float]:
        glb: dict[str, Any] = dict(HELPERS)
        glb["__builtins__"] = __builtins__
        exec(compile(SEED_MONITOR, "<plain>", "exec"), glb)  # noqa: S102 - the baseline
        score = glb["score"]
        return [score(v) for v in views]

    def restricted() -> Any:
        return run_program(views, ids, SEED_MONITOR, limits=SandboxLimits())

    t_plain, plain_scores = best_of(args.repeat, plain)
    t_restricted, (header, restricted_scores) = best_of(args.repeat, restricted)
    assert header["status"] == "done" and list(restricted_scores) == plain_scores

    limits = SandboxLimits(wall_s=120, cpu_s=120)
    with SandboxPool(trajs, workers=1, limits=limits) as pool:
        pool.evaluate(SEED_MONITOR)  # warm up
        t_sandbox, result = best_of(args.repeat, lambda: pool.evaluate(SEED_MONITOR))
        walls = [pool.evaluate(SEED_MONITOR) for _ in range(3)]
        trivial = "def score(traj):\n    return 0.0\n"
        t_fixed, fixed = best_of(args.repeat, lambda: pool.evaluate(trivial))
    assert result.ok and list(result.scores) == plain_scores
    child_wall = statistics.median(r.wall_s for r in walls)
    child_cpu = statistics.median(r.cpu_s for r in walls)

    with SandboxPool(trajs, limits=limits) as pool:
        pool.evaluate_many([SEED_MONITOR] * pool.n_workers)  # warm up
        started = time.perf_counter()
        results = pool.evaluate_many([SEED_MONITOR] * args.candidates)
        t_many = time.perf_counter() - started
        workers = pool.n_workers
    assert all(r.ok for r in results)

    def row(name: str, seconds: float) -> str:
        return (
            f"{name:<34} {seconds * 1e3:9.1f} ms {seconds / n * 1e6:8.2f} us/traj "
            f"{n / seconds:10.0f} traj/s   ratio {seconds / t_plain:5.2f}"
        )

    print(f"{'':<34} {'per candidate':>12} {'':>13} {'':>16}")
    print(row("plain exec (same process)", t_plain))
    print(row("restricted, in-process", t_restricted))
    print(row("sandboxed end to end (1 worker)", t_sandbox))
    faults = statistics.median(r.usage.get("minor_faults", 0) for r in walls)
    print(
        f"  child process: wall {child_wall * 1e3:.1f} ms, cpu {child_cpu * 1e3:.1f} ms, "
        f"{faults:.0f} minor page faults (copy-on-write) (median of 3)"
    )
    print(
        f"  fixed cost per candidate (a program returning 0.0): {t_fixed * 1e3:.1f} ms, "
        f"{fixed.usage.get('minor_faults', 0)} page faults"
    )
    print(
        f"\nthroughput, {workers} workers, {args.candidates} candidates: "
        f"{args.candidates * n / t_many:,.0f} trajectory scorings/s "
        f"({args.candidates / t_many:.1f} candidates/s)"
    )
    print("targets: ratio <= 1.5, >= 5,000 scorings/s")
    report.update(
        corpus=source,
        trajectories=n,
        repeat=args.repeat,
        candidates=args.candidates,
        workers=workers,
        plain_s=t_plain,
        restricted_s=t_restricted,
        sandboxed_s=t_sandbox,
        ratio_restricted=t_restricted / t_plain,
        ratio_sandboxed=t_sandbox / t_plain,
        child_wall_s=child_wall,
        child_cpu_s=child_cpu,
        minor_faults=faults,
        fixed_cost_s=t_fixed,
        scorings_per_s=args.candidates * n / t_many,
        candidates_per_s=args.candidates / t_many,
    )


if __name__ == "__main__":
    main()
