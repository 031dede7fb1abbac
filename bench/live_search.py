"""The live corpus and a search that must hold on both sources (issue 32), side by side.

1. **Live generation**: ``monsearch corpus live --apps DIR`` (or ``--live DIR``, an
   existing live corpus): runs played, kept, wall time and runs per second with the
   machine's load beside it, and the fidelity summary (status codes, view fields, per
   task, the commonest differences).
2. **The search on both sources**: for each seed, ``monsearch evolve --budget N
   --source LIVE`` on the default synthetic corpus (the default run when the live
   corpus is configured), then for the ``stronger`` seed and each selection:
   invariant val budget-AUC on each source, each source under the quiet and noisy
   benign mixes, every failure dimension on each source (the selection against the
   seed, with the 0.02 rule), and the live corpus's sealed test (``live:test`` of
   ``monsearch test``, with a ledger inside the runs folder: the user's is untouched).

    python bench/live_search.py (--apps DIR | --live DIR) [--seeds 0,1,2] [--budget 100]
                                [--runs-dir DIR] [--size 2400] [--json]

Targets (issue 32): >= 2,000 runs over all 14 tasks in <= 20 minutes on 2 cores;
>= 95 % of steps agreeing on status codes for every task; each seed's selection beats
the stronger seed on invariant val of both sources and on every benign-mix view, and
keeps every failure dimension the seed catches (>= the seed's - 0.02 on each source).
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


def _load() -> str:
    try:
        one, five, _ = os.getloadavg()
        return f"{one:.1f}/{five:.1f}"
    except OSError:
        return "?"


def _run(cmd: list[str], env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd[2:6])} ... failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc.stdout


def live_corpus(args: argparse.Namespace) -> tuple[Path, dict]:
    if args.live:
        path = Path(args.live)
        report = json.loads((path / "live-report.json").read_text())
        return path, {"played_here": False, "report": report}
    load0 = _load()
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "monsearch", "corpus", "live", "--apps", args.apps, "--json",
           "--quiet", "--size", str(args.size), "--no-configure"]  # fmt: skip
    out = json.loads(_run(cmd))
    wall = time.perf_counter() - t0
    return Path(out["path"]), {
        "played_here": not out["cached"],
        "wall_s": wall,
        "load_before": load0,
        "load_after": _load(),
        "report": out["report"] or json.loads((Path(out["path"]) / "live-report.json").read_text()),
    }


def evolve(seed: int, budget: int, live: Path, runs: Path) -> dict:
    run_id = f"live-s{seed}-n{budget}"
    if not (runs / run_id / "selected.json").is_file():
        cmd = [sys.executable, "-m", "monsearch", "evolve", "--budget", str(budget), "--seed",
               str(seed), "--source", str(live), "--run-id", run_id, "--runs-dir", str(runs),
               "--json", "--quiet"]  # fmt: skip
        t0 = time.perf_counter()
        _run(cmd)
        wall = time.perf_counter() - t0
    else:
        wall = None
    return {"seed": seed, "run_id": run_id, "wall_s": wall}


def figures(runs: Path, run_id: str) -> dict:
    """The stronger seed's and the selection's val figures, from the run's lineage."""
    from monsearch.search.lineage import LineageStore

    selected = json.loads((runs / run_id / "selected.json").read_text())
    with LineageStore(runs / run_id / "lineage.sqlite", readonly=True) as store:
        records = {r.id: r for r in store.records()}
    stronger = next(r for r in records.values() if r.operator == "seed:stronger")
    chosen = records[selected["id"]]
    statuses: dict[str, int] = {}
    for r in records.values():
        statuses[r.status] = statuses.get(r.status, 0) + 1

    def groups(r) -> dict:
        g = (r.fitness_json or {}).get("groups") or {}
        return {k: v for k, v in g.items() if not k.startswith("_")}

    return {
        "stronger_id": stronger.id,
        "selected_id": chosen.id,
        "stronger": groups(stronger),
        "selected": groups(chosen),
        "selected_fitness": chosen.fitness,
        "statuses": statuses,
    }


def sealed_live(runs: Path, run_id: str, program: str) -> dict | None:
    env = {**os.environ, "MONSEARCH_LEDGER": str(runs / "bench-sealed-ledger.json")}
    out = runs / "sealed" / f"{run_id}-{program}"
    cmd = [sys.executable, "-m", "monsearch", "test", run_id, "--program", program, "--runs-dir",
           str(runs), "--out", str(out), "--workers", "2", "--json", "--force"]  # fmt: skip
    report = json.loads(_run(cmd, env))
    live = report["corpora"].get("live:test") or {}
    panel = live.get("panel") or {}

    def agg(key: str) -> float | None:
        return ((panel.get(key) or {}).get("bauc") or {}).get("aggregate")

    views = ((panel.get("shifted") or {}).get("flat") or {})
    return {
        "from_val": agg("transferred"),
        "recalibrated": agg("recalibrated"),
        "flattened": min(
            (v for v in (((views.get(k) or {}).get("bauc") or {}).get("aggregate")
                         for k in ("transferred", "recalibrated")) if v is not None),
            default=None,
        ),
        "test_from_val": (((report["corpora"].get("test") or {}).get("panel") or {}).get("transferred") or {}).get("bauc", {}).get("aggregate"),
    }


def verdict(fig: dict, tolerance: float = 0.02) -> dict:
    """Does the selection beat the stronger seed on every source and view, and keep
    every dimension the seed catches?"""
    beats, kept = {}, {}
    for name, g in fig["stronger"].items():
        if g.get("status") != "ok":  # a view with too few benign runs to tell
            continue
        mine = fig["selected"].get(name) or {}
        beats[name] = (mine.get("fitness") or 0.0) > (g.get("fitness") or 0.0)
        for d, v in (g.get("by_dimension") or {}).items():
            if v is not None and v >= 0.05:
                kept[f"{name} {d}"] = ((mine.get("by_dimension") or {}).get(d) or 0.0) >= v - tolerance
    return {
        "beats_every_group": all(beats.values()),
        "beaten_in": [k for k, ok in beats.items() if not ok],
        "keeps_every_dimension": all(kept.values()),
        "dimensions_lost": [k for k, ok in kept.items() if not ok],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--apps", help="a StealthBench checkout: play the live corpus")
    src.add_argument("--live", help="an existing live corpus folder")
    ap.add_argument("--size", type=int, default=2400, help="live runs to play (default 2400)")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--budget", type=int, default=100)
    ap.add_argument("--runs-dir", default=None, help="keep the runs here (default: a temp dir)")
    ap.add_argument("--no-sealed", action="store_true", help="skip the live sealed tests")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    runs = Path(args.runs_dir or tempfile.mkdtemp(prefix="monsearch-live-bench-"))
    runs.mkdir(parents=True, exist_ok=True)
    live, gen = live_corpus(args)
    out: dict = {"date": time.strftime("%Y-%m-%d"), "live": str(live), "generation": gen, "seeds": []}
    for seed in (int(s) for s in args.seeds.split(",")):
        load0 = _load()
        row = evolve(seed, args.budget, live, runs)
        row["load"] = f"{load0} -> {_load()}"
        row.update(figures(runs, row["run_id"]))
        row["verdict"] = verdict(row)
        if not args.no_sealed:
            row["live_test"] = {
                "stronger": sealed_live(runs, row["run_id"], row["stronger_id"]),
                "selected": sealed_live(runs, row["run_id"], row["selected_id"]),
            }
        out["seeds"].append(row)
    if args.json:
        print(json.dumps(out, indent=1))
        return
    report(out)


def _f(x: float | None) -> str:
    return "   -" if x is None else f"{x:.3f}"


def report(out: dict) -> None:
    gen = out["generation"]
    rep = gen["report"]
    fid = rep["fidelity"]
    print(f"live corpus {out['live']}")
    if gen.get("played_here"):
        print(f"  played {rep['runs']} runs in {gen['wall_s']:.0f} s on {rep['workers']} workers "
              f"({rep['runs'] / gen['wall_s']:.2f} runs/s; load {gen['load_before']} -> {gen['load_after']})")
    else:
        print(f"  {rep['runs']} runs, played in {rep['wall_s']:.0f} s on {rep['workers']} workers")
    print(f"  kept {rep['kept']}, tasks {len(rep['tasks'])}, styles {len(rep['styles'])}; left out: "
          + (", ".join(f"{n} {k}" for k, n in rep["left_out"].items()) or "none"))
    o = fid["overall"]
    print(f"  fidelity: status codes {o['share']:.3f} of {o['steps_compared']} steps; view "
          + ", ".join(f"{k} {v:.3f}" for k, v in o["view_share"].items() if v is not None))
    worst = min(fid["tasks"].items(), key=lambda kv: kv[1]["share"] or 0)
    print(f"  lowest task: {worst[0]} {worst[1]['share']:.3f}")
    for row in out["seeds"]:
        print(f"\nseed {row['seed']} ({row['run_id']}; load {row['load']}"
              + (f"; {row['wall_s']:.0f} s" if row.get("wall_s") else "") + f"): statuses {row['statuses']}")
        names = sorted(row["stronger"])
        print(f"  {'group':<22} {'stronger':>9} {'selected':>9}")
        for n in names:
            g = row["stronger"][n]
            if g.get("status") != "ok":
                print(f"  {n:<22} {'n/a':>9} {'n/a':>9}  (effective benign {g.get('effective_benign') or 0:.0f}: too few)")
                continue
            print(f"  {n:<22} {_f(g.get('fitness')):>9} "
                  f"{_f((row['selected'].get(n) or {}).get('fitness')):>9}")
        v = row["verdict"]
        print(f"  beats the stronger seed in every group: {'yes' if v['beats_every_group'] else 'no: ' + ', '.join(v['beaten_in'])}")
        print(f"  keeps every dimension it catches (-0.02): {'yes' if v['keeps_every_dimension'] else 'no: ' + ', '.join(v['dimensions_lost'])}")
        if row.get("live_test"):
            s, c = row["live_test"]["stronger"] or {}, row["live_test"]["selected"] or {}
            print(f"  live sealed test (from val / recalibrated): stronger {_f(s.get('from_val'))} / "
                  f"{_f(s.get('recalibrated'))}, selected {_f(c.get('from_val'))} / {_f(c.get('recalibrated'))}")


if __name__ == "__main__":
    main()
