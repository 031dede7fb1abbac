"""Dask speed-up: the same candidates scored on val by Dask with 1 and 2 workers, and locally.

Prints, side by side in one run (same corpus, same candidates, same machine):

* local: ``SandboxPool`` with 1 and 2 sandbox workers (the reference);
* dask-local: ``DaskPool`` on a LocalCluster of 1 and 2 worker processes (one
  sandbox worker each), what ``monsearch evolve --backend dask-local`` uses;
* per setting: start-up (pool ready: cluster, views built on every worker), the
  best-of-R wall time of one batch of K candidates (all pools open at once, batches
  timed round-robin), candidates per second;
* ratios: 2 vs 1 workers for each backend, Dask vs local at equal workers;
* whether every setting gave bit-identical scores.

With ``--evolve-budget N`` it also times ``monsearch evolve --budget N`` end to end
with each backend and checks the lineages are equal.

Run: ``python bench/dask_speedup.py [--corpus DIR | --size N] [--candidates K]
[--repeat R] [--evolve-budget N] [--json]``. Without ``--corpus`` it uses the
default synthetic corpus (generated once and cached). The speed-up is bounded by the
cores the machine has free: on a 2-core machine shared with other work, expect
well under 2x.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from monsearch.sandbox.evaluate import SandboxLimits, SandboxPool
from monsearch.search.dask_backend import DaskPool


def load_val(corpus: str | None, size: int | None) -> tuple[list[Any], Path]:
    from monsearch.corpora.store import load_corpus
    from monsearch.search.evaluator import labelled

    if corpus:
        path = Path(corpus)
    else:
        from monsearch.synth.generate import DEFAULT_SIZE, ensure_default_corpus

        path = ensure_default_corpus(size=size or DEFAULT_SIZE)
    return labelled(load_corpus(path, ["val"]).split("val")), path


def candidates(k: int) -> list[str]:
    """K distinct sources doing the seeds' work (a comment tells them apart)."""
    from monsearch.strategies import SEEDS

    seeds = [SEEDS[name] for name in sorted(SEEDS)]
    return [f"{seeds[i % len(seeds)]}\n# variant {i}\n" for i in range(k)]


def bench_pools(
    trajs: list[Any], sources: list[str], repeat: int, limits: SandboxLimits
) -> dict[str, dict[str, Any]]:
    """Every setting's pool open at once, batches timed round-robin (best of ``repeat``):
    a machine whose load drifts during the run biases no setting."""
    identity = f"bench dask_speedup {len(trajs)} {trajs[0].id} {trajs[-1].id}"
    makers = {
        "local-1": lambda: SandboxPool(trajs, workers=1, limits=limits, identity=identity),
        "local-2": lambda: SandboxPool(trajs, workers=2, limits=limits, identity=identity),
        "dask-1": lambda: DaskPool(trajs, workers=1, limits=limits, identity=identity),
        "dask-2": lambda: DaskPool(trajs, workers=2, limits=limits, identity=identity),
    }
    pools: dict[str, Any] = {}
    out: dict[str, dict[str, Any]] = {}
    try:
        for name, make in makers.items():
            t0 = time.perf_counter()
            pools[name] = make()
            out[name] = {"startup_s": time.perf_counter() - t0, "times": []}
            pools[name].evaluate_many(sources[:2])  # first-call costs out of the timing
        for _ in range(repeat):
            for name, pool in pools.items():
                t0 = time.perf_counter()
                results = pool.evaluate_many(sources)
                out[name]["times"].append(time.perf_counter() - t0)
                out[name]["statuses"] = sorted({r.status for r in results})
                out[name]["scores"] = [
                    None if r.scores is None else r.scores.tobytes() for r in results
                ]
    finally:
        for pool in pools.values():
            pool.close()
    for p in out.values():
        p["batch_s"] = min(p.pop("times"))
        p["candidates_per_s"] = len(sources) / p["batch_s"]
    return out


def bench_evolve(corpus: Path, budget: int) -> dict[str, Any]:
    """``monsearch evolve --budget N`` end to end per backend (each in its own process)."""
    from monsearch.search.lineage import LineageStore

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="dask-speedup-") as tmp:
        for backend, workers in (("local", 2), ("dask-local", 1), ("dask-local", 2)):
            run_id = f"{backend}-{workers}"
            cmd = [
                sys.executable, "-m", "monsearch", "evolve", "--corpus", str(corpus),
                "--runs-dir", tmp, "--run-id", run_id, "--budget", str(budget), "--quiet",
                "--json", "--backend", backend, "--workers", str(workers),
            ]
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
            wall = time.perf_counter() - t0
            if proc.returncode != 0:
                raise SystemExit(f"evolve {run_id} failed:\n{proc.stderr[-2000:]}")
            with LineageStore(Path(tmp) / run_id / "lineage.sqlite", readonly=True) as store:
                out[run_id] = {"wall_s": wall, "lineage": store.content_hash()}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=None, help="corpus folder with a val split")
    parser.add_argument("--size", type=int, default=None, help="default-corpus size")
    parser.add_argument("--candidates", type=int, default=16, help="candidates per batch")
    parser.add_argument("--repeat", type=int, default=3, help="batches timed (best kept)")
    parser.add_argument("--evolve-budget", type=int, default=0,
                        help="also time evolve --budget N per backend (0: skip)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()

    trajs, path = load_val(args.corpus, args.size)
    sources = candidates(args.candidates)
    limits = SandboxLimits()
    pools = bench_pools(trajs, sources, args.repeat, limits)
    reference = pools["local-1"]["scores"]
    identical = all(p["scores"] == reference for p in pools.values())
    ratios = {
        "local 2 vs 1 workers": pools["local-1"]["batch_s"] / pools["local-2"]["batch_s"],
        "dask 2 vs 1 workers": pools["dask-1"]["batch_s"] / pools["dask-2"]["batch_s"],
        "dask / local time, 1 worker": pools["dask-1"]["batch_s"] / pools["local-1"]["batch_s"],
        "dask / local time, 2 workers": pools["dask-2"]["batch_s"] / pools["local-2"]["batch_s"],
    }
    evolve = bench_evolve(path, args.evolve_budget) if args.evolve_budget else None
    report = {
        "corpus": path.name,
        "val_trajectories": len(trajs),
        "candidates": len(sources),
        "repeat": args.repeat,
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg()[0],
        "pools": {k: {n: v for n, v in p.items() if n != "scores"} for k, p in pools.items()},
        "ratios": ratios,
        "scores_identical": identical,
        "evolve": evolve,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"val of {path.name}: {len(trajs)} trajectories, {len(sources)} candidates per batch, "
          f"best of {args.repeat}; {os.cpu_count()} CPUs, load {report['load_average']:.1f}")
    print(f"{'setting':<10} {'start-up s':>11} {'batch s':>9} {'cand/s':>8}  statuses")
    for name, p in pools.items():
        print(f"{name:<10} {p['startup_s']:>11.2f} {p['batch_s']:>9.3f} "
              f"{p['candidates_per_s']:>8.2f}  {','.join(p['statuses'])}")
    for name, value in ratios.items():
        print(f"{name:<30} {value:6.2f}x")
    print(f"scores bit-identical across settings: {'yes' if identical else 'NO'}")
    if evolve:
        for name, e in evolve.items():
            print(f"evolve --budget {args.evolve_budget} {name:<13} {e['wall_s']:7.1f} s  "
                  f"lineage {e['lineage'][:12]}")
        same = len({e["lineage"] for e in evolve.values()}) == 1
        print(f"lineages equal: {'yes' if same else 'NO'}")


if __name__ == "__main__":  # spawned Dask workers import this file as __mp_main__
    main()
