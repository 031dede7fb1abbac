"""Does the search learn, and does what it learns survive other agents' base rates?

For each seed: ``monsearch evolve`` with the offline proposer to the first budget,
then ``--resume`` to each further budget (a resumed run ends exactly where an
uninterrupted one would), and, for the first seed, once more with ``--proposer
perturb`` (constant perturbation only: the baseline it must beat). Prints the
curves (best val fitness after k evaluations), wall time and the framework's own
overhead per candidate, and the generalisation table the README quotes: for the
``stronger`` seed and each budget's selected strategy, val budget-AUC plain and
invariant (every task x outcome cell at one failure share), and ``monsearch test``'s
test split plain, flattened and inverted (the worse of thresholds from val and
recalibrated), with the worst loss from invariant val over every shifted view of
every sealed corpus. The sealed tests use a ledger inside the runs folder (the
user's ledger is untouched). Everything is measured side by side in one invocation.

    python bench/search_curve.py [--budgets 100,200] [--seeds 0,1,2] [--corpus DIR]
                                 [--runs-dir DIR] [--no-perturb] [--png FILE] [--json]

Targets: issue 10 (offline selected val fitness >= stronger seed + 0.10, above
perturb-only; ``evolve --budget 100`` under 3 minutes on 2 cores, framework overhead
under 20 ms per candidate); issue 24 (the budget-100 selection beats the stronger
seed by >= 0.10 on invariant val and on test flattened and inverted, and loses
<= 0.05 from invariant val to each shifted view of every sealed corpus).
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

from monsearch.eval.report import beyond_tolerance
from monsearch.search.lineage import LineageStore

CHECKPOINTS = (1, 2, 10, 25, 50, 100, 150, 200, 300, 500)


def _evolve(args: list[str], env: dict[str, str]) -> tuple[dict, float]:
    cmd = [sys.executable, "-m", "monsearch", "evolve", "--json", "--quiet", *args]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd[3:])} failed:\n{proc.stderr}")
    return json.loads(proc.stdout), wall


def run(
    proposer: str, budgets: list[int], seed: int, corpus: str | None, runs: Path
) -> dict:
    """One search to each budget in turn (resumed); the figures at the last one and the
    selected strategy at every budget."""
    run_id = f"bench-{proposer}-s{seed}-n{budgets[-1]}"
    env = dict(os.environ)
    selected: dict[int, dict] = {}
    wall = {}
    for i, budget in enumerate(budgets):
        args = ["--budget", str(budget), "--runs-dir", str(runs)]
        if i == 0:
            args += ["--seed", str(seed), "--proposer", proposer, "--run-id", run_id]
            args += ["--corpus", corpus] if corpus else []
        else:
            args += ["--resume", run_id]
        outcome, wall[budget] = _evolve(args, env)
        selected[budget] = outcome["selected"]
    with LineageStore(runs / run_id / "lineage.sqlite", readonly=True) as store:
        records = store.records()
        timings = json.loads(store.get_meta("timings") or "{}")
    best, curve = 0.0, []
    for r in records:
        if r.ok:
            best = max(best, r.fitness)
        curve.append(best)
    seeds = {r.operator.split(":", 1)[1]: r.fitness for r in records if r.operator.startswith("seed:")}
    seed_ids = {r.operator.split(":", 1)[1]: r.id for r in records if r.operator.startswith("seed:")}
    n = max(1, timings.get("evaluated", len(records)))
    return {
        "proposer": proposer,
        "seed": seed,
        "run_id": run_id,
        "budgets": budgets,
        "curve": curve,
        "seeds": seeds,
        "seed_ids": seed_ids,
        "selected": selected[budgets[-1]],
        "selected_by_budget": {str(b): v for b, v in selected.items()},
        # The first budget's run is a plain `evolve --budget N`: its wall time is the
        # target's; later budgets are resumed (replay + the new candidates).
        "wall_s": wall[budgets[0]],
        "wall_by_budget": {str(b): v for b, v in wall.items()},
        "timings": timings,
        "framework_ms_per_candidate": 1000 * timings.get("framework_s", 0.0) / n,
        "ok_share": sum(r.ok for r in records) / len(records),
        "operators": _operator_table(records),
    }


def sealed(runs: Path, run_id: str, program_id: str) -> dict:
    """``monsearch test RUN --program ID --json`` with the bench's own ledger."""
    env = {**os.environ, "MONSEARCH_LEDGER": str(runs / "bench-sealed-ledger.json")}
    out = runs / "sealed" / f"{run_id}-{program_id}"
    cmd = [
        sys.executable, "-m", "monsearch", "test", run_id, "--program", program_id,
        "--runs-dir", str(runs), "--out", str(out), "--workers", "2", "--json", "--force",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"monsearch test {run_id} --program {program_id} failed:\n{proc.stderr}")
    return json.loads(proc.stdout)


def _worse(block: dict | None) -> float | None:
    """The worse of thresholds from val and recalibrated (a view's or a split's)."""
    if not block or "transferred" not in block:
        return None
    values = [
        (block.get(k) or {}).get("bauc", {}).get("aggregate") for k in ("transferred", "recalibrated")
    ]
    values = [v for v in values if v is not None]
    return min(values) if values else None


def generalisation(report: dict, label: str = "panel") -> dict:
    """The README's generalisation figures of one sealed report."""
    val = report["val"]
    corpora = report["corpora"]
    test = corpora.get("test", {}).get(label) or {}
    shifted = test.get("shifted") or {}
    losses = {}
    for name, c in corpora.items():
        for view, b in ((c.get(label) or {}).get("shifted") or {}).items():
            vals = [v for v in (b.get("loss_vs_val") or {}).values() if v is not None]
            if vals:
                losses[f"{name} {view}"] = max(vals)
    worst = max(losses, key=losses.get) if losses else None
    return {
        "val_plain": (val[label].get("bauc") or {}).get("aggregate"),
        "val_invariant": (val.get("views", {}).get(label) or {}).get("aggregate"),
        "test_plain": _worse(test),
        "test_flattened": _worse(shifted.get("flat")),
        "test_inverted": _worse(shifted.get("inverted")),
        "worst_loss": None if worst is None else losses[worst],
        "worst_loss_at": worst,
        "losses": losses,
        # Views whose loss interval lies wholly above the tolerance (beyond the noise).
        "beyond_tolerance": beyond_tolerance(report, label),
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
    ap.add_argument("--budgets", default="100,200", help="budgets, ascending (default 100,200)")
    ap.add_argument("--budget", type=int, default=None, help="one budget (the same as --budgets N)")
    ap.add_argument("--seeds", default="0", help="run seeds (default 0; e.g. 0,1,2)")
    ap.add_argument("--corpus", default=None, help="corpus folder (default: the embedded one)")
    ap.add_argument("--runs-dir", default=None, help="keep the runs here (default: a temp dir)")
    ap.add_argument("--no-perturb", action="store_true", help="skip the perturb-only baseline")
    ap.add_argument("--no-sealed", action="store_true", help="skip the sealed tests")
    ap.add_argument("--png", default=None, help="write the curves to this PNG")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args()
    budgets = [args.budget] if args.budget else sorted(int(b) for b in args.budgets.split(","))
    seeds = [int(s) for s in args.seeds.split(",")]
    runs = Path(args.runs_dir or tempfile.mkdtemp(prefix="monsearch-bench-"))
    results = [run("offline", budgets, s, args.corpus, runs) for s in seeds]
    if not args.no_perturb:
        results.append(run("perturb", budgets, seeds[0], args.corpus, runs))
    table = []
    if not args.no_sealed:
        for r in results:
            if r["proposer"] != "offline":
                continue
            rows = [("stronger seed", r["seed_ids"]["stronger"])]
            rows += [(f"selected at {b}", (r["selected_by_budget"][str(b)] or {}).get("id"))
                     for b in budgets]
            for name, program in rows:
                if program is None:
                    continue
                fig = generalisation(sealed(runs, r["run_id"], program))
                table.append({"seed": r["seed"], "strategy": name, "id": program, **fig})
    out = {"budgets": budgets, "seeds": seeds, "runs": results, "generalisation": table}
    if args.json:
        print(json.dumps(out, indent=2))
        return
    report(out, args.png)


def report(out: dict, png: str | None) -> None:
    budgets, results = out["budgets"], out["runs"]
    offline = [r for r in results if r["proposer"] == "offline"]
    per = next((r for r in results if r["proposer"] == "perturb"), None)
    b = budgets[-1]
    print(f"budgets {budgets}, seeds {out['seeds']}")
    head = f"{'evaluations':>12}" + "".join(f" {'offline s' + str(r['seed']):>11}" for r in offline)
    print("\n" + head + (f" {'perturb':>11}" if per else ""))
    for k in CHECKPOINTS:
        if k <= b:
            line = f"{k:>12}" + "".join(f" {r['curve'][k - 1]:>11.4f}" for r in offline)
            print(line + (f" {per['curve'][k - 1]:>11.4f}" if per else ""))
    for r in results:
        sel = r["selected"] or {}
        print(
            f"{r['proposer']:>8} s{r['seed']}: selected {sel.get('id')} val {sel.get('fitness', 0):.4f} "
            f"(bootstrap p5 {sel.get('fitness_low', 0):.4f}); evolve --budget {budgets[0]} "
            f"{r['wall_s']:.1f} s; framework {r['framework_ms_per_candidate']:.1f} ms/candidate; "
            f"ok {r['ok_share']:.0%}"
        )
    off = offline[0]
    t = off["timings"]
    print(
        f"\noffline s{off['seed']} time split: startup {t.get('startup_s', 0):.1f} s, loop "
        f"{t.get('loop_s', 0):.1f} s (propose {t.get('propose_s', 0):.1f}, tune "
        f"{t.get('tune_s', 0):.1f}, val scoring {t.get('eval_s', 0):.1f}, framework "
        f"{t.get('framework_s', 0):.2f})"
    )
    if per:
        beats = (off["selected"] or {}).get("fitness", 0) > (per["selected"] or {}).get("fitness", 0)
        print(f"offline beats perturb-only at {b}: {'yes' if beats else 'no'}")
    if out["generalisation"]:
        print("\nGeneralisation (panel labels; test: the worse of thresholds from val and recalibrated)")
        print(f"{'seed':>4} {'strategy':<16} {'val plain':>9} {'val inv.':>9} {'test':>7} "
              f"{'flat':>7} {'invert.':>7} {'worst loss':>10} {'beyond':>6}  where")
        for g in out["generalisation"]:
            print(
                f"{g['seed']:>4} {g['strategy']:<16} {_f(g['val_plain']):>9} "
                f"{_f(g['val_invariant']):>9} {_f(g['test_plain']):>7} {_f(g['test_flattened']):>7} "
                f"{_f(g['test_inverted']):>7} {_f(g['worst_loss']):>10} "
                f"{len(g['beyond_tolerance']):>6}  {g['worst_loss_at'] or ''}"
            )
        for seed in out["seeds"]:
            rows = {g["strategy"]: g for g in out["generalisation"] if g["seed"] == seed}
            base, first = rows.get("stronger seed"), rows.get(f"selected at {budgets[0]}")
            if not base or not first:
                continue
            gains = [
                (first[k] or 0) - (base[k] or 0)
                for k in ("val_invariant", "test_flattened", "test_inverted")
            ]
            ok = min(gains) >= 0.10 and (first["worst_loss"] or 0) <= 0.05
            print(f"seed {seed}: selected at {budgets[0]} vs stronger: invariant val "
                  f"{gains[0]:+.3f}, test flattened {gains[1]:+.3f}, inverted {gains[2]:+.3f}; "
                  f"worst shifted loss {_f(first['worst_loss'])}: issue 24 target "
                  f"{'met' if ok else 'missed'}; views beyond the noise: "
                  f"{', '.join(first['beyond_tolerance']) or 'none'} (stronger seed: "
                  f"{', '.join(base['beyond_tolerance']) or 'none'})")
    print("\noffline operators (used / improved on parent):")
    for op, row in sorted(off["operators"].items(), key=lambda kv: -kv[1]["n"]):
        print(f"  {op:<24} {row['n']:>4} {row['improved']:>4}")
    if png:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.5))
        for r in results:
            ax.plot(range(1, len(r["curve"]) + 1), r["curve"], label=f"{r['proposer']} s{r['seed']}")
        ax.axhline(off["seeds"].get("stronger", float("nan")), color="grey", linestyle=":",
                   label="stronger seed")
        ax.set_xlabel("candidate evaluations on val")
        ax.set_ylabel("best val budget-AUC")
        ax.legend()
        fig.tight_layout()
        fig.savefig(png, dpi=120)
        print(f"curves written to {png}")


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


if __name__ == "__main__":
    main()
