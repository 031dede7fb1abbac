"""One benchmark suite: every bench the issues ask for, one table (Markdown and JSON).

    python -m bench [--quick] [--out DIR] [--only NAME,...] [--search-budget N] [--list]
                    [--render JSON]

Each bench script runs in its own subprocess with ``--json`` (one JSON object on
stdout; its usual text goes to stderr, kept in ``logs/`` beside the table), so a
crash or a leak in one cannot skew the next and every ratio is measured side by
side inside one script, as the scripts already do. The sealed-test figures come
from ``monsearch test RUN --json`` on the offline run of the search curve (that run
*is* ``monsearch evolve --budget N`` with the defaults), in a temporary runs folder
and with ``MONSEARCH_LEDGER`` pointing into it, so the user's ledger is untouched.

Writes ``bench-results.md`` and ``bench-results.json`` into ``--out`` (default
``bench/results/``): per row what was measured, the value, the target, met or
missed, and the script that measures it; plus the machine (cores, CPU model,
memory, Python, load average at start and end) and the suite's wall time.

Budget: under 15 minutes on a 2-core machine. The search curve is most of it
(two ``evolve`` runs); the suite runs it at ``--search-budget 100`` by default,
which is also the budget of the wall-time target, so one pair of runs gives the
curve, the ``evolve --budget 100`` time, the framework overhead and the strategy
for the sealed test and the export bench. ``--search-budget 200`` gives the
issue's full curve, at about twice the time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
SUITE_TARGET_S = 15 * 60

Row = dict[str, Any]


# --------------------------------------------------------------------------- helpers


def _fmt(x: float | None, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def row(
    what: str,
    measured: str,
    bench: str,
    *,
    value: float | None = None,
    target: str = "",
    ok: bool | None = None,
    issue: str = "",
) -> Row:
    """One line of the table; ``ok`` None means there is no target to meet."""
    verdict = "-" if ok is None else "met" if ok else "missed"
    return {
        "what": what,
        "measured": measured,
        "value": value,
        "target": target or "-",
        "verdict": verdict,
        "bench": bench,
        "issue": issue,
    }


def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gib = int(line.split()[1]) / 2**20
                break
    except OSError:
        pass
    return {
        "cores": os.cpu_count(),
        "cpu_model": model,
        "memory_gib": None if mem_gib is None else round(mem_gib, 1),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "system": f"{platform.system()} {platform.machine()}",
    }


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- the benches


@dataclass
class Bench:
    name: str
    script: str  # shown in the table
    args: Callable[[Ctx], list[str]]
    rows: Callable[[Any, Ctx], list[Row]]
    timeout_s: float = 900.0  # generous: the machine may be shared and loaded
    argv: Callable[[Ctx], list[str]] | None = None  # a command other than the script


@dataclass
class Ctx:
    quick: bool
    search_budget: int
    tmp: Path
    logs: Path
    data: dict[str, Any] = field(default_factory=dict)
    run: Path | None = None  # the offline run of the search (evolve --budget N)

    @property
    def runs_dir(self) -> Path:
        return self.tmp / "runs"


def _q(ctx: Ctx, full: list[str], quick: list[str]) -> list[str]:
    return quick if ctx.quick else full


# synth_corpus -------------------------------------------------------------


def synth_rows(d: dict, ctx: Ctx) -> list[Row]:
    s = "bench/synth_corpus.py"
    n = d["size"]
    return [
        row(
            f"generate the default corpus ({n:,} runs), incl. split and write",
            f"{d['total_s']:.1f} s",
            s,
            value=d["total_s"],
            target="< 60 s at 15,000",
            ok=d["total_s"] < 60 if n >= 15_000 else None,  # --quick generates fewer
            issue="8",
        ),
        row(
            "corpus calibration to the paper (per persona, overall, panel agreement)",
            f"{d['calibration_out_of_band']} numbers out of band "
            f"(Fleiss kappa {d['fleiss_kappa']:.3f}, unanimous {d['unanimous_pct']:.1f} %)",
            s,
            value=d["calibration_out_of_band"],
            target="0 out of band",
            ok=d["calibration_out_of_band"] == 0,
            issue="8",
        ),
    ]


def load_rows(d: dict, ctx: Ctx) -> list[Row]:
    s = "bench/load_corpus.py"
    whole = d["load_s"]["whole corpus"]
    tv = d["load_s"]["train+val only"]
    return [
        row(
            f"load a {d['n']:,}-trajectory corpus",
            f"{whole:.2f} s (train+val only: {tv:.2f} s)",
            s,
            value=whole,
            target="< 2 s" if d["n"] >= 10_000 else "< 2 s at 10,000",
            ok=whole < 2 if d["n"] >= 10_000 else None,
        )
    ]


def readers_rows(d: dict, ctx: Ctx) -> list[Row]:
    return [
        row(
            f"read a StealthBench tree of {d['n']:,} runs",
            f"{d['stealthbench_s']:.2f} s ({d['stealthbench_s'] / d['n'] * 1e3:.2f} ms/run)",
            "bench/readers.py",
            value=d["stealthbench_s"],
        )
    ]


def view_rows(d: dict, ctx: Ctx) -> list[Row]:
    s = "bench/view_speed.py"
    share = d["http_unparsed_share"]
    return [
        row(
            "build views (CPU time, cold parse caches)",
            f"{d['cold_traj_per_s']:,.0f} trajectories/s per core",
            s,
            value=d["cold_traj_per_s"],
        ),
        row(
            "HTTP-looking steps with no parsed request, all styles",
            f"{100 * share:.2f} % ({d['http_unparsed']} of {d['http_steps']})",
            s,
            value=share,
            target="< 2 %",
            ok=share < 0.02,
            issue="8",
        ),
    ]


def start_rows(d: dict, ctx: Ctx) -> list[Row]:
    s = "bench/sandbox_start.py"
    rep = d["repeat"]
    return [
        row(
            f"warm `sandbox run`, seed monitor on val ({d['val_trajectories']:,} runs)",
            f"{d['warm_run_s']:.2f} s (median of {rep})",
            s,
            value=d["warm_run_s"],
            target="< 2 s",
            ok=d["warm_run_s"] < 2,
        ),
        row(
            "`sandbox run` of a program that does not compile",
            f"{d['compile_error_s']:.2f} s",
            s,
            value=d["compile_error_s"],
            target="< 1 s",
            ok=d["compile_error_s"] < 1,
        ),
        row(
            "sandbox pool start-up, views cached vs built",
            f"{d['pool_start_cached_s']:.1f} s vs {d['pool_start_built_s']:.1f} s",
            s,
            value=d["pool_start_cached_s"],
        ),
    ]


def speed_rows(d: dict, ctx: Ctx) -> list[Row]:
    s = "bench/sandbox_speed.py"
    return [
        row(
            f"sandbox throughput, seed monitor, {d['workers']} workers",
            f"{d['scorings_per_s']:,.0f} trajectory scorings/s",
            s,
            value=d["scorings_per_s"],
            target=">= 5,000/s",
            ok=d["scorings_per_s"] >= 5000,
        ),
        row(
            "sandboxed / plain `exec`, language layer (same process)",
            f"{d['ratio_restricted']:.2f}",
            s,
            value=d["ratio_restricted"],
        ),
        row(
            "sandboxed / plain `exec`, end to end per candidate",
            f"{d['ratio_sandboxed']:.2f} ({d['sandboxed_s'] * 1e3:.0f} ms vs "
            f"{d['plain_s'] * 1e3:.0f} ms)",
            s,
            value=d["ratio_sandboxed"],
            target="<= 1.5",
            ok=d["ratio_sandboxed"] <= 1.5,
        ),
    ]


def baseline_rows(d: dict, ctx: Ctx) -> list[Row]:
    return [
        row(
            "naive one-feature monitors on val, worst max(AUROC, 1-AUROC)",
            f"{d['worst_overall']:.3f}; {d['perfect_cells']} perfectly separated (task, feature) cells",
            "bench/baselines.py",
            value=d["worst_overall"],
            target="<= 0.75, 0 perfect cells",
            ok=d["worst_overall"] <= 0.75 and d["perfect_cells"] == 0,
        )
    ]


def realism_rows(d: dict, ctx: Ctx) -> list[Row]:
    s = "bench/realism.py"
    out: list[Row] = []

    # As tests/synth/test_synth_realism.py checks them: think text within task (the task is
    # a prior under the paper's rates), outcome/length both pooled and within task.
    for key, what, keys in (
        ("think_only", "think-text-only classifier, val AUROC within task", ("_within_task",)),
        ("length_only", "outcome/length-only classifier, val AUROC", ("", "_within_task")),
    ):
        c = d[key]["val"]
        parts, worst = [], 0.0
        for suffix in keys:
            pv, tv = c.get("panel" + suffix), c.get("true" + suffix)
            worst = max([worst] + [v for v in (pv, tv) if v is not None])
            name = "within task" if suffix else "pooled"
            parts.append(f"{name}: panel {_fmt(pv)} / true {_fmt(tv)}")
        out.append(
            row(what, "; ".join(parts), s, value=worst, target="< 0.65", ok=worst < 0.65, issue="8")
        )
    lr = d["models"]["tfidf_lr"]
    a = lr["val"]["fit_true"]["true"]["auroc"]
    out.append(
        row(
            "TF-IDF + logistic on train, val AUROC on true labels",
            f"{a:.3f}",
            s,
            value=a,
            target="< 0.93",
            ok=a < 0.93,
            issue="8",
        )
    )
    pt, pp = d["purity"]["true"]["n_pure"], d["purity"]["panel"]["n_pure"]
    out.append(
        row(
            "label-pure tokens in train (>= 50 runs, >= 95 % one label)",
            f"{pt} (true labels), {pp} (panel)",
            s,
            value=max(pt, pp),
            target="0",
            ok=max(pt, pp) == 0,
            issue="8",
        )
    )
    styles = d["coverage"]["styles"]
    shares = {k: b["share"] for k, b in styles.items() if b.get("share") is not None}
    if shares:
        worst = max(shares, key=shares.get)
        out.append(
            row(
                "HTTP-looking steps with no parsed request, worst style",
                f"{100 * shares[worst]:.2f} % ({worst})",
                s,
                value=shares[worst],
                target="< 2 % every style",
                ok=shares[worst] < 0.02,
                issue="8",
            )
        )
    for model, cells in d["models"].items():
        fam = next((k for k in cells if k.endswith("family")), None)
        if fam is None:
            continue
        v = cells["val"]["fit_true"]["true"]["bauc"]
        f = cells[fam]["fit_true"]["true"]["bauc"]
        out.append(
            row(
                f"{model} budget-AUC, val vs {fam} (true labels): the corpus's warning light",
                f"{_fmt(v)} vs {_fmt(f)}",
                s,
                value=None if v is None or f is None else v - f,
            )
        )
    return out


# search_curve + sealed test ----------------------------------------------


def search_args(ctx: Ctx) -> list[str]:
    return [
        "--budgets", str(ctx.search_budget), "--seeds", "0", "--runs-dir", str(ctx.runs_dir),
        "--json",
    ]


def search_rows(d: dict, ctx: Ctx) -> list[Row]:
    s = "bench/search_curve.py"
    off = next(r for r in d["runs"] if r["proposer"] == "offline")
    per = next(r for r in d["runs"] if r["proposer"] == "perturb")
    b = ctx.search_budget
    ctx.run = ctx.runs_dir / f"bench-offline-s0-n{b}"
    stronger = off["seeds"].get("stronger")
    sel = off["selected"] or {}
    sel_p = per["selected"] or {}
    fit = sel.get("fitness", 0.0)
    out: list[Row] = []
    if b == 100:
        out.append(
            row(
                "`monsearch evolve --budget 100` wall time (offline, 2 workers)",
                f"{off['wall_s']:.0f} s",
                s,
                value=off["wall_s"],
                target="< 180 s",
                ok=off["wall_s"] < 180,
                issue="10",
            )
        )
    else:
        out.append(
            row(
                f"`monsearch evolve --budget {b}` wall time (offline)",
                f"{off['wall_s']:.0f} s (the 3-minute target is for budget 100)",
                s,
                value=off["wall_s"],
                issue="10",
            )
        )
    fw = off["framework_ms_per_candidate"]
    out.append(
        row(
            "framework overhead per candidate (loop minus propose, tune, score)",
            f"{fw:.1f} ms",
            s,
            value=fw,
            target="< 20 ms",
            ok=fw < 20,
            issue="10",
        )
    )
    gain = None if stronger is None else fit - stronger
    out.append(
        row(
            f"selected strategy's val budget-AUC after {b} evaluations vs stronger seed",
            f"{fit:.3f} vs {_fmt(stronger)} (+{_fmt(gain)})"
            + ("" if b == 200 else f"; at budget {b}, the issue's figure is at 200"),
            s,
            value=fit,
            target=">= seed + 0.10 or >= 0.90 (at 200)",
            ok=(gain is not None and gain >= 0.10) or fit >= 0.90,
            issue="10",
        )
    )
    curve_o, curve_p = off["curve"], per["curve"]
    out.append(
        row(
            f"search curve vs constant-perturbation only, budget {b}",
            f"selected {fit:.3f} vs {sel_p.get('fitness', 0.0):.3f}; best "
            f"{curve_o[-1]:.3f} vs {curve_p[-1]:.3f}",
            s,
            value=fit - sel_p.get("fitness", 0.0),
            target="offline above perturb",
            ok=fit > sel_p.get("fitness", 0.0),
            issue="10",
        )
    )
    gen = {g["strategy"]: g for g in d.get("generalisation", []) if g["seed"] == off["seed"]}
    base, sel_g = gen.get("stronger seed"), gen.get(f"selected at {b}")
    if base and sel_g:
        gains = {
            k: (sel_g[k] or 0.0) - (base[k] or 0.0)
            for k in ("val_invariant", "test_flattened", "test_inverted")
        }
        out.append(
            row(
                f"selected at {b} vs stronger seed: invariant val, test flattened / inverted",
                f"{_fmt(sel_g['val_invariant'])} vs {_fmt(base['val_invariant'])}; "
                f"{_fmt(sel_g['test_flattened'])} vs {_fmt(base['test_flattened'])} / "
                f"{_fmt(sel_g['test_inverted'])} vs {_fmt(base['test_inverted'])}",
                s,
                value=min(gains.values()),
                target="+0.10 on each",
                ok=min(gains.values()) >= 0.10,
                issue="24",
            )
        )
        out.append(
            row(
                f"selected at {b}: worst loss from invariant val over every shifted view "
                "of every sealed corpus",
                f"{_fmt(sel_g['worst_loss'])} ({sel_g['worst_loss_at']})",
                s,
                value=sel_g["worst_loss"],
                target="<= 0.05",
                ok=sel_g["worst_loss"] is not None and sel_g["worst_loss"] <= 0.05,
                issue="24",
            )
        )
    return out


def sealed_argv(ctx: Ctx) -> list[str]:
    assert ctx.run is not None
    return [
        sys.executable,
        "-m",
        "monsearch",
        "test",
        ctx.run.name,
        "--runs-dir",
        str(ctx.runs_dir),
        "--out",
        str(ctx.tmp / "sealed"),
        "--workers",
        "2",
        "--json",
    ]


def escalation_figure(esc: dict, corpus: str, label: str) -> dict[str, Any] | None:
    """Cheapest selective escalation reaching 95 % of the judge-on-everything recall.

    The reference recall is the best the judge panel reaches on every trajectory over
    the budget grid; both costs are read at the cheapest grid point reaching 95 % of it.
    """
    curves = esc.get("curves", {}).get(corpus, {}).get(label)
    if not curves or "judge" not in curves:
        return None

    def points(rule: str) -> list[dict]:
        return [p for p in curves.get(rule, {}).get("points", []) if p.get("feasible")]

    judge = points("judge")
    if not judge:
        return None
    r_judge = max(p["recall"] for p in judge)
    goal = 0.95 * r_judge

    def cheapest(rules: tuple[str, ...]) -> dict[str, Any] | None:
        best = None
        for rule in rules:
            for p in points(rule):
                if p["recall"] >= goal and (best is None or p["usd_per_1000"] < best["usd"]):
                    best = {
                        "rule": rule,
                        "budget": p["budget"],
                        "recall": p["recall"],
                        "usd": p["usd_per_1000"],
                    }
        return best

    return {
        "corpus": corpus,
        "labels": label,
        "judge_max_recall": r_judge,
        "goal_recall": goal,
        "escalation": cheapest(("np", "band")),
        "judge": cheapest(("judge",)),
        "program": cheapest(("program",)),
        "and_cascade": cheapest(("and",)),
    }


def sealed_rows(d: dict, ctx: Ctx) -> list[Row]:
    s = "`monsearch test --json` (suite)"
    out: list[Row] = []
    val = d["val"]["panel"]["bauc"]["aggregate"]
    val_true = d["val"]["true"]["bauc"]["aggregate"]
    out.append(
        row(
            "selected strategy's val budget-AUC (panel / true labels)",
            f"{val:.3f} / {val_true:.3f}",
            s,
            value=val,
            issue="9,10",
        )
    )
    for name, c in d["corpora"].items():
        if c.get("status") != "ok":
            out.append(row(f"sealed {name}", f"status {c.get('status')}", s, issue="9"))
            continue
        p, t = c["panel"], c["true"]
        tr, rc = p["transferred"]["bauc"]["aggregate"], p["recalibrated"]["bauc"]["aggregate"]
        loss = max(p["loss_vs_val"]["transferred"], p["loss_vs_val"]["recalibrated"])
        loss_t = max(t["loss_vs_val"]["transferred"], t["loss_vs_val"]["recalibrated"])
        out.append(
            row(
                f"{name}: budget-AUC transferred / recalibrated; loss vs val",
                f"{tr:.3f} / {rc:.3f}; loss {loss:+.3f} (true labels: "
                f"{t['transferred']['bauc']['aggregate']:.3f} / "
                f"{t['recalibrated']['bauc']['aggregate']:.3f}, loss {loss_t:+.3f})",
                s,
                value=loss,
                target="loss <= 0.10" if name != "test" else "-",
                ok=loss <= 0.10 if name != "test" else None,
                issue="10" if name != "test" else "9",
            )
        )
    esc = d.get("escalation") or {}
    for label in ("panel", "true"):
        fig = escalation_figure(esc, "test", label)
        if fig is None:
            continue
        ctx.data.setdefault("escalation", []).append(fig)
        e, j = fig["escalation"], fig["judge"]
        if e is None or j is None:
            text = (
                f"escalation never reaches 95 % of the judge's recall {fig['judge_max_recall']:.3f}"
            )
            value = None
        else:
            text = (
                f"${e['usd']:,.0f} ({e['rule']}, Y={e['budget']:.2f}, recall {e['recall']:.3f}) "
                f"vs judge on everything ${j['usd']:,.0f} (recall {j['recall']:.3f}); "
                f"goal recall {fig['goal_recall']:.3f}"
            )
            value = e["usd"]
        out.append(
            row(
                f"escalation on test ({label} labels): $ per 1,000 trajectories at 95 % "
                "of the judge's recall",
                text,
                s,
                value=value,
                issue="9,12",
            )
        )
    return out


def export_args(ctx: Ctx) -> list[str]:
    assert ctx.run is not None
    return ["--run", ctx.run.name, "--runs-dir", str(ctx.runs_dir), "--json"] + _q(
        ctx, ["--limit", "1000"], ["--limit", "300"]
    )


def export_rows(d: dict, ctx: Ctx) -> list[Row]:
    e = d["end_to_end"]
    m = d.get("median_of_pass_medians_ms", e["median_ms"])
    spread = d.get("pass_medians_ms") or [e["median_ms"]]
    return [
        row(
            f"exported plugin, dict -> score, selected strategy ({d['timed']} val runs)",
            f"median {m:.3f} ms (passes {min(spread):.3f}-{max(spread):.3f}), "
            f"p90 {e['p90_ms']:.3f} ms",
            "bench/export_speed.py",
            value=m,
            target="median < 1 ms",
            ok=m < 1,
            issue="11",
        )
    ]


def dask_rows(d: dict, ctx: Ctx) -> list[Row]:
    s = "bench/dask_speedup.py"
    r = d["ratios"]
    return [
        row(
            f"Dask speed-up, 2 vs 1 workers ({d['candidates']} candidates, best of {d['repeat']})",
            f"{r['dask 2 vs 1 workers']:.2f}x (local pool: {r['local 2 vs 1 workers']:.2f}x)",
            s,
            value=r["dask 2 vs 1 workers"],
            issue="12",
        ),
        row(
            "Dask / local time at 2 workers; scores bit-identical",
            f"{r['dask / local time, 2 workers']:.2f}; "
            f"{'identical' if d['scores_identical'] else 'DIFFERENT'}",
            s,
            value=r["dask / local time, 2 workers"],
            target="identical scores",
            ok=bool(d["scores_identical"]),
            issue="12",
        ),
    ]


def oracle_rows(d: dict, ctx: Ctx) -> list[Row]:
    return [
        row(
            "oracle: replay call; disk cache get",
            f"{d['replay_admitted_us']:.1f} us; {d['cache_get_us']:.0f} us",
            "bench/oracle_bench.py",
            value=d["replay_admitted_us"],
        )
    ]


def hostile_rows(d: dict, ctx: Ctx) -> list[Row]:
    rows = d["rows"]
    contained = [r for r in rows if not r["timeout"] and r["exit"] in (0, 1)]
    s = "bench/hostile_inputs.py"
    return [
        row(
            f"`monsearch score` of hostile inputs of at most 10 MB, slowest ({len(rows)} shapes)",
            f"{d['slowest_s']:.2f} s wall, interpreter start included",
            s,
            value=d["slowest_s"],
            target=f"<= {d['target_s']:.0f} s",
            ok=d["slowest_s"] <= d["target_s"],
            issue="25",
        ),
        row(
            "… largest peak memory; inputs scored or refused in one line",
            f"{d['largest_peak_mb']} MB; {len(contained)} of {len(rows)}",
            s,
            value=d["largest_peak_mb"],
            target=f"< {d['target_mb']} MB; all",
            ok=d["largest_peak_mb"] < d["target_mb"] and len(contained) == len(rows),
            issue="25",
        ),
    ]


def _script(name: str) -> Callable[[Ctx], list[str]]:
    def argv(ctx: Ctx) -> list[str]:
        return [sys.executable, str(BENCH / f"{name}.py")]

    return argv


BENCHES: list[Bench] = [
    Bench(
        "synth_corpus",
        "bench/synth_corpus.py",
        lambda c: ["--json"] + _q(c, [], ["--size", "5000"]),
        synth_rows,
    ),
    Bench(
        "load_corpus",
        "bench/load_corpus.py",
        lambda c: ["--json", "--no-codecs"] + _q(c, ["--repeat", "3"], ["--repeat", "1"]),
        load_rows,
    ),
    Bench(
        "readers",
        "bench/readers.py",
        lambda c: (
            ["--json"] + _q(c, ["--n", "2000", "--repeat", "2"], ["--n", "500", "--repeat", "1"])
        ),
        readers_rows,
    ),
    Bench(
        "view_speed",
        "bench/view_speed.py",
        lambda c: ["--json"] + _q(c, ["--n", "2000"], ["--n", "1000"]),
        view_rows,
    ),
    Bench(
        "sandbox_start",
        "bench/sandbox_start.py",
        lambda c: ["--json"] + _q(c, ["--repeat", "3"], ["--repeat", "2"]),
        start_rows,
    ),
    Bench(
        "sandbox_speed",
        "bench/sandbox_speed.py",
        lambda c: ["--json"] + _q(c, ["--repeat", "3"], ["--repeat", "2", "--candidates", "4"]),
        speed_rows,
    ),
    Bench("baselines", "bench/baselines.py", lambda c: ["--json"], baseline_rows),
    Bench("realism", "bench/realism.py", lambda c: ["--json"], realism_rows, timeout_s=1800),
    Bench("search_curve", "bench/search_curve.py", search_args, search_rows, timeout_s=3600),
    Bench(
        "sealed_test",
        "`monsearch test --json`",
        lambda c: [],
        sealed_rows,
        argv=sealed_argv,
    ),
    Bench("export_speed", "bench/export_speed.py", export_args, export_rows),
    Bench(
        "dask_speedup",
        "bench/dask_speedup.py",
        lambda c: (
            ["--json"]
            + _q(c, ["--repeat", "1", "--candidates", "8"], ["--repeat", "1", "--candidates", "4"])
        ),
        dask_rows,
    ),
    Bench("oracle_bench", "bench/oracle_bench.py", lambda c: ["--json"], oracle_rows),
    Bench("hostile_inputs", "bench/hostile_inputs.py", lambda c: ["--json"], hostile_rows),
]
NEEDS_RUN = {"sealed_test", "export_speed"}


def ensure_run(ctx: Ctx) -> None:
    """A run of ``evolve --budget N`` for the sealed test and the export bench.

    Normally the search curve's offline run; with ``--only`` leaving the search out,
    one ``monsearch evolve`` with the same settings.
    """
    if ctx.run is not None:
        return
    b = ctx.search_budget
    run_id = f"bench-offline-s0-n{b}"
    cmd = [
        sys.executable,
        "-m",
        "monsearch",
        "evolve",
        "--budget",
        str(b),
        "--seed",
        "0",
        "--run-id",
        run_id,
        "--runs-dir",
        str(ctx.runs_dir),
        "--json",
        "--quiet",
    ]
    log(f"  (no search run: monsearch evolve --budget {b} for the run the next benches need)")
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=_env(ctx))
    if done.returncode != 0:
        raise RuntimeError(f"evolve failed (exit {done.returncode}): {done.stderr[-500:]}")
    ctx.run = ctx.runs_dir / run_id


def _env(ctx: Ctx) -> dict[str, str]:
    env = dict(os.environ)
    # The sealed test writes a ledger entry: keep it out of the user's ledger.
    env["MONSEARCH_LEDGER"] = str(ctx.tmp / "ledger.json")
    env["MONSEARCH_RUNS"] = str(ctx.runs_dir)
    return env


def run_bench(b: Bench, ctx: Ctx) -> dict[str, Any]:
    args = b.args(ctx)
    argv = (b.argv or _script(b.name))(ctx) + args
    started = time.perf_counter()
    rec: dict[str, Any] = {
        "script": b.script,
        "argv": [Path(a).name if "/" in a else a for a in argv],
    }
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, cwd=ROOT, env=_env(ctx), timeout=b.timeout_s
        )
    except subprocess.TimeoutExpired as exc:
        rec.update(
            seconds=time.perf_counter() - started, error=f"timed out after {b.timeout_s:.0f} s"
        )
        (ctx.logs / f"{b.name}.stderr.txt").write_text(_scrub(_text(exc.stderr), ctx.tmp))
        return rec
    rec["seconds"] = time.perf_counter() - started
    rec["returncode"] = done.returncode
    (ctx.logs / f"{b.name}.stderr.txt").write_text(_scrub(done.stderr, ctx.tmp))
    if done.returncode != 0:
        rec["error"] = f"exit {done.returncode}: {done.stderr.strip()[-300:]}"
        return rec
    try:
        rec["data"] = json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        rec["error"] = f"not JSON on stdout ({exc})"
    return rec


def _scrub(x: Any, tmp: Path) -> Any:
    """Paths of this machine out of the results (they may be committed or shared)."""
    if isinstance(x, dict):
        return {k: _scrub(v, tmp) for k, v in x.items()}
    if isinstance(x, list):
        return [_scrub(v, tmp) for v in x]
    if isinstance(x, str):
        for path, name in ((str(tmp), "$TMP"), (str(ROOT), "."), (str(Path.home()), "~")):
            x = x.replace(path, name)
    return x


def _text(x: bytes | str | None) -> str:
    if x is None:
        return ""
    return x.decode(errors="replace") if isinstance(x, bytes) else x


# --------------------------------------------------------------------------- output


def markdown(result: dict[str, Any]) -> str:
    m = result["machine"]
    lines = [
        "# monsearch benchmark suite",
        "",
        f"- date: {result['started']} to {result['finished']} (UTC)",
        f"- machine: {m['cores']} cores, {m['cpu_model'] or 'unknown CPU'}, "
        f"{m['memory_gib']} GiB, {m['implementation']} {m['python']} on {m['system']}",
        f"- load average (1/5/15 min): {' / '.join(map(str, result['load_start']))} at start, "
        f"{' / '.join(map(str, result['load_end']))} at end",
        f"- mode: {'quick' if result['quick'] else 'full'}; search budget "
        f"{result['search_budget']}; suite wall time {result['total_s'] / 60:.1f} min "
        f"(target < 15 min: {'met' if result['total_s'] < SUITE_TARGET_S else 'missed'})",
        "",
        "| what | measured | target | verdict | bench |",
        "|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        verdict = "**missed**" if r["verdict"] == "missed" else r["verdict"]
        lines.append(
            f"| {r['what']} | {r['measured']} | {r['target']} | {verdict} | {r['bench']} |"
        )
    lines += ["", "| bench | seconds | status |", "|---|---|---|"]
    for name, rec in result["benches"].items():
        status = rec.get("error") or rec.get("skipped") or "ok"
        lines.append(f"| {name} | {rec.get('seconds', 0):.0f} | {status.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def rows_of(b: Bench, rec: dict[str, Any], ctx: Ctx) -> list[Row]:
    if "data" in rec:
        try:
            rows = b.rows(rec["data"], ctx)
        except Exception as exc:  # a changed JSON shape: say so, keep the raw data
            rec["error"] = f"reading its JSON: {type(exc).__name__}: {exc}"
            rows = []
    else:
        rows = []
    if "error" in rec:
        rows.append(row(f"{b.name} did not finish", rec["error"][:200], b.script))
        rows[-1]["verdict"] = "error"
    return rows


def render(path: Path, out: Path) -> None:
    """Rows again from the raw JSON each bench printed (after a fix to a row reader)."""
    result = json.loads(path.read_text())
    ctx = Ctx(quick=result["quick"], search_budget=result["search_budget"], tmp=out, logs=out)
    by_name = {b.name: b for b in BENCHES}
    result["rows"] = []
    for name, rec in result["benches"].items():
        if "data" in rec:
            rec.pop("error", None)  # only a row reader's error: the bench itself finished
        result["rows"] += rows_of(by_name[name], rec, ctx)
    if "escalation" in ctx.data:
        result["escalation"] = ctx.data["escalation"]
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench-results.json").write_text(json.dumps(result, indent=2) + "\n")
    md = markdown(result)
    (out / "bench-results.md").write_text(md)
    log(md)


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m bench",
        description="Run every monsearch benchmark and write one table (Markdown and JSON).",
    )
    ap.add_argument(
        "--quick", action="store_true", help="fewer repeats, smaller inputs, search budget 20"
    )
    ap.add_argument(
        "--out", type=Path, default=BENCH / "results", help="output folder [bench/results]"
    )
    ap.add_argument("--only", default=None, help="comma-separated bench names (see --list)")
    ap.add_argument(
        "--search-budget",
        type=int,
        default=None,
        help="evaluations per search run [100; --quick: 20]; 200 is the issue's full curve",
    )
    ap.add_argument("--list", action="store_true", help="list the benches and exit")
    ap.add_argument(
        "--render",
        type=Path,
        default=None,
        metavar="JSON",
        help="rebuild the table of a saved bench-results.json from its raw data, run nothing",
    )
    args = ap.parse_args(argv)
    if args.list:
        for b in BENCHES:
            print(f"{b.name:<14} {b.script}")
        return
    if args.render:
        render(args.render, args.out)
        return
    names = [b.name for b in BENCHES]
    only = None
    if args.only:
        only = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = sorted(set(only) - set(names))
        if unknown:
            ap.error(f"unknown bench(es): {', '.join(unknown)}; known: {', '.join(names)}")
    selected = [b for b in BENCHES if only is None or b.name in only]

    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    logs = out / "logs"
    logs.mkdir(exist_ok=True)
    budget = args.search_budget or (20 if args.quick else 100)
    result: dict[str, Any] = {
        "format": "monsearch-bench",
        "version": 1,
        "started": datetime.now(UTC).strftime("%Y-%m-%d %H:%M"),
        "machine": machine(),
        "load_start": _load(),
        "quick": args.quick,
        "search_budget": budget,
        "benches": {},
        "rows": [],
    }
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="monsearch-bench-suite-") as tmp:
        ctx = Ctx(quick=args.quick, search_budget=budget, tmp=Path(tmp), logs=logs)
        ctx.runs_dir.mkdir()
        for i, b in enumerate(selected, 1):
            elapsed = time.perf_counter() - t0
            log(
                f"[{i}/{len(selected)}] {b.name} ({b.script}) at {elapsed / 60:.1f} min, "
                f"load {os.getloadavg()[0]:.1f}"
            )
            try:
                if b.name in NEEDS_RUN:
                    ensure_run(ctx)
                rec = run_bench(b, ctx)
            except Exception as exc:  # one bench failing must not lose the others' rows
                rec = {"script": b.script, "seconds": 0.0, "error": f"{type(exc).__name__}: {exc}"}
            rows = rows_of(b, rec, ctx)
            result["rows"] += rows
            result["benches"][b.name] = rec
            missed = sum(r["verdict"] == "missed" for r in rows)
            log(
                f"    {rec.get('seconds', 0):.1f} s; {len(rows)} rows"
                + (f", {missed} missed" if missed else "")
                + (f"; ERROR {rec['error'][:200]}" if "error" in rec else "")
            )
        if "escalation" in ctx.data:
            result["escalation"] = ctx.data["escalation"]
        result = _scrub(result, Path(tmp))
    result["total_s"] = time.perf_counter() - t0
    result["load_end"] = _load()
    result["finished"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    (out / "bench-results.json").write_text(json.dumps(result, indent=2) + "\n")
    md = markdown(result)
    (out / "bench-results.md").write_text(md)
    log(md)
    log(f"wrote {out / 'bench-results.md'} and {out / 'bench-results.json'}")
    missed = [r["what"] for r in result["rows"] if r["verdict"] in ("missed", "error")]
    if missed:
        log(f"{len(missed)} targets missed or benches failed")
