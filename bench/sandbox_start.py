"""Start-up cost of ``monsearch sandbox run``: what a user waits for before the first score.

Prints, measured in one run on the default corpus's ``val`` split:

* warm ``monsearch sandbox run`` of the seed monitor (corpus and views cached): the
  whole command as a user runs it, median of ``--repeat`` runs; target < 2 s;
* a program that does not compile: the whole command; target < 1 s (it must be
  reported before any corpus is loaded or worker started);
* in-process ``SandboxPool`` start-up with the views cached vs built (cache off):
  what the view cache saves every pool (each search start, each test).

Run with the venv's Python: ``.venv/bin/python bench/sandbox_start.py [--repeat R] [--json]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jsonmode import add_json_flag, run_reporting

WARM_TARGET_S = 2.0
COMPILE_ERROR_TARGET_S = 1.0


#: As a user's shell has it: some machines set PYTHONDONTWRITEBYTECODE, which makes
#: every command recompile monsearch's modules (a few tenths of a second), while a
#: normal install has its bytecode cached.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def monsearch(*args: str) -> tuple[float, int]:
    cmd = [sys.executable, "-m", "monsearch", *args]
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=ENV)
    return time.perf_counter() - started, done.returncode


def median_of(repeat: int, *args: str) -> tuple[float, int]:
    runs = [monsearch(*args) for _ in range(repeat)]
    return statistics.median(t for t, _ in runs), runs[-1][1]


def verdict(value: float, target: float) -> str:
    return "met" if value < target else "MISSED"


def pool_start(trajs: list, cache_dir: object, repeat: int) -> float:
    from monsearch.sandbox.evaluate import SandboxPool

    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        with SandboxPool(trajs, cache_dir=cache_dir):
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--corpus", help="corpus folder [default: the embedded default corpus]")
    add_json_flag(parser)
    run_reporting(parser.parse_args(), _run)


def _run(args: argparse.Namespace, report: dict) -> None:
    corpus = ["--corpus", args.corpus] if args.corpus else []

    # Warm everything once: the default corpus and the views of val.
    first, code = monsearch("sandbox", "run", *corpus, "--json")
    if code != 0:
        sys.exit(f"sandbox run failed (exit {code}); run it by hand to see why")
    print(f"cold-ish first run (corpus may have been cached already): {first:.2f} s")

    warm, _ = median_of(args.repeat, "sandbox", "run", *corpus, "--json")
    with tempfile.TemporaryDirectory() as tmp:
        broken = Path(tmp) / "broken.py"
        broken.write_text("def score(traj)\n    return 1.0\n")
        compile_error, code = median_of(
            args.repeat, "sandbox", "run", str(broken), *corpus, "--json"
        )
        if code != 1:
            print(f"note: the broken program exited {code}, expected 1")

    from monsearch.cache import cache_dir
    from monsearch.commands.synth import resolve_corpus
    from monsearch.corpora.store import load_corpus

    folder = Path(args.corpus) if args.corpus else resolve_corpus(None, quiet=True)
    trajs = load_corpus(folder, ["val"]).split("val")
    cached = pool_start(trajs, cache_dir(), args.repeat)
    uncached = pool_start(trajs, None, max(1, args.repeat // 2))

    cores = os.cpu_count()
    print(f"\nval: {len(trajs)} trajectories; cores: {cores}; median of {args.repeat}\n")
    print(f"{'measure':<48}{'seconds':>10}{'target':>10}  verdict")
    rows = [
        ("warm `sandbox run`, seed monitor on val", warm, WARM_TARGET_S),
        ("`sandbox run` of a program with a compile error", compile_error, COMPILE_ERROR_TARGET_S),
    ]
    for name, value, target in rows:
        print(f"{name:<48}{value:>10.2f}{'< ' + format(target, 'g'):>10}  {verdict(value, target)}")
    print(f"{'pool start-up, views cached':<48}{cached:>10.2f}")
    print(f"{'pool start-up, views built (no cache)':<48}{uncached:>10.2f}")
    print(f"{'  ratio built / cached':<48}{uncached / cached:>10.1f}")
    report.update(
        val_trajectories=len(trajs),
        repeat=args.repeat,
        first_run_s=first,
        warm_run_s=warm,
        compile_error_s=compile_error,
        pool_start_cached_s=cached,
        pool_start_built_s=uncached,
    )


if __name__ == "__main__":
    main()
