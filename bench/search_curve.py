"""Does the search learn? The offline proposer against constant perturbation only.

Runs ``monsearch evolve`` twice on the same corpus, seed and budget — once with the
offline proposer (the default), once with ``--proposer perturb`` (constant
perturbation only: the baseline it must beat) — and prints both curves (best val
fitness after k evaluations), the stronger seed's fitness, each run's selected
strategy (point fitness and bootstrap 5th percentile), wall time and the
framework's own overhead per candidate (the loop's time minus proposing, tuning
and scoring). Both runs happen side by side in one invocation, so their ratio is
meaningful on a noisy machine.

    python bench/search_curve.py [--budget 200] [--seed 0] [--corpus DIR] [--png FILE]

Targets (issue 10): offline selected val fitness >= stronger seed + 0.10 (or >= 0.90)
and above perturb-only; ``evolve --budget 100`` under 3 minutes on 2 cores with
framework overhead under 20 ms per candidate.
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

from monsearch.search.lineage import LineageStore

CHECKPOINTS = (1, 2, 10, 25, 50, 100, 150, 200, 300, 500)


def run(proposer: str, budget: int, seed: int, corpus: str | None, runs: Path) -> dict:
    run_id = f"bench-{proposer}-s{seed}-n{budget}"
    cmd = [
        sys.executable, "-m", "monsearch", "evolve", "--budget", str(budget), "--seed", str(seed),
        "--proposer", proposer, "--run-id", run_id, "--runs-dir", str(runs), "--json", "--quiet",
    ]
    if corpus:
        cmd += ["--corpus", corpus]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"evolve --proposer {proposer} failed:\n{proc.stderr}")
    outcome = json.loads(proc.stdout)
    with LineageStore(runs / run_id / "lineage.sqlite", readonly=True) as store:
        records = store.records()
        timings = json.loads(store.get_meta("timings") or "{}")
    best, curve = 0.0, []
    for r in records:
        if r.ok:
            best = max(best, r.fitness)
        curve.append(best)
    seeds = {r.operator.split(":", 1)[1]: r.fitness for r in records if r.operator.startswith("seed:")}
    n = max(1, timings.get("evaluated", len(records)))
    return {
        "proposer": proposer,
        "curve": curve,
        "seeds": seeds,
        "selected": outcome["selected"],
        "wall_s": wall,
        "timings": timings,
        "framework_ms_per_candidate": 1000 * timings.get("framework_s", 0.0) / n,
        "ok_share": sum(r.ok for r in records) / len(records),
        "operators": _operator_table(records),
    }


def _operator_table(records) -> dict[str, dict[str, float]]:
    """Per operator: how often it was used and how often it beat its parent."""
    by_id = {r.id: r for r in records}
    out: dict[str, dict[str, float]] = {}
    for r in records:
        if not r.parent_ids:
            continue
        parent = by_id.get(r.parent_ids[0])
        row = out.setdefault(r.operator, {"n": 0, "improved": 0})
        row["n"] += 1
        if parent is not None and r.ok and r.fitness > parent.fitness:
            row["improved"] += 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--corpus", default=None, help="corpus folder (default: the embedded one)")
    ap.add_argument("--runs-dir", default=None, help="keep the runs here (default: a temp dir)")
    ap.add_argument("--png", default=None, help="write the curves to this PNG")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args()
    runs = Path(args.runs_dir or tempfile.mkdtemp(prefix="monsearch-bench-"))
    results = [run(p, args.budget, args.seed, args.corpus, runs) for p in ("offline", "perturb")]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    off, per = results
    stronger = off["seeds"].get("stronger", float("nan"))
    print(f"budget {args.budget}, seed {args.seed}, corpus {args.corpus or 'embedded default'}")
    print(f"\n{'evaluations':>12} {'offline':>9} {'perturb':>9}")
    for k in CHECKPOINTS:
        if k <= args.budget:
            print(f"{k:>12} {off['curve'][k - 1]:>9.4f} {per['curve'][k - 1]:>9.4f}")
    print(f"\nstronger seed val fitness: {stronger:.4f}")
    for r in results:
        sel = r["selected"] or {}
        print(
            f"{r['proposer']:>8}: selected {sel.get('id')} val {sel.get('fitness', 0):.4f} "
            f"(bootstrap p5 {sel.get('fitness_low', 0):.4f}); wall {r['wall_s']:.1f} s; "
            f"framework {r['framework_ms_per_candidate']:.1f} ms/candidate; "
            f"ok {r['ok_share']:.0%}"
        )
    t = off["timings"]
    print(
        f"\noffline run time split: startup {t.get('startup_s', 0):.1f} s, loop {t.get('loop_s', 0):.1f} s "
        f"(propose {t.get('propose_s', 0):.1f}, tune {t.get('tune_s', 0):.1f}, "
        f"val scoring {t.get('eval_s', 0):.1f}, framework {t.get('framework_s', 0):.2f})"
    )
    gain = (off["selected"] or {}).get("fitness", 0) - stronger
    target = gain >= 0.10 or (off["selected"] or {}).get("fitness", 0) >= 0.90
    beats = (off["selected"] or {}).get("fitness", 0) > (per["selected"] or {}).get("fitness", 0)
    print(f"target: selected >= stronger + 0.10 (or >= 0.90): {'met' if target else 'missed'} "
          f"(+{gain:.4f}); beats perturb-only: {'yes' if beats else 'no'}")
    print("\noffline operators (used / improved on parent):")
    for op, row in sorted(off["operators"].items(), key=lambda kv: -kv[1]["n"]):
        print(f"  {op:<24} {row['n']:>4} {row['improved']:>4}")
    if args.png:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.5))
        for r in results:
            ax.plot(range(1, len(r["curve"]) + 1), r["curve"], label=r["proposer"])
        ax.axhline(stronger, color="grey", linestyle=":", label="stronger seed")
        ax.set_xlabel("candidate evaluations on val")
        ax.set_ylabel("best val budget-AUC")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.png, dpi=120)
        print(f"curves written to {args.png}")


if __name__ == "__main__":
    main()
