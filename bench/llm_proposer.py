"""The LLM proposer against a real local model, measured beside the offline proposer.

Starts llama.cpp's server with a local GGUF model (``monsearch.local_llm``), then on
the same corpus and seed runs ``monsearch evolve`` twice at equal evaluations: the
offline proposer alone, and ``offline:0.7,llm:0.3``. Reports, for the LLM's
proposals: how many compiled and scored (validity), how many needed the repair turn
and how many of those it saved, seconds per proposal (median and quartiles), tokens;
the two search curves (best val fitness, the run's fitness — invariant by default —
after k evaluations); and whether a detector the model wrote is in the selected
strategy, with the candidate that added it.

    python bench/llm_proposer.py [--model FILE | --fetch NAME] [--alias ID]
        [--python PY] [--budget 60] [--seed 0] [--mix offline:0.7,llm:0.3]
        [--llm-only N] [--threads 1 --threads-batch 2] [--runs-dir DIR] [--json]

The model comes from ``--model``, ``$MONSEARCH_TEST_LLM_MODEL`` or ``--fetch`` (the
catalogue, cached); without one, or without llama-cpp-python's server in ``--python``
(``$MONSEARCH_LLAMA_PYTHON``), the bench says so and exits 0: nothing is downloaded
unless asked. ``--llm-only N`` adds a run of N LLM-only proposals for a larger
validity sample. Issue 27's targets (Qwen2.5-Coder-1.5B-Instruct, 2 cores): >= 60 %
of proposals compile and score, median proposal <= 40 s, an LLM detector in the
selected strategy of the budget-60 mixed run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from monsearch.search.lineage import LineageStore
from monsearch.strategies.convention import parse_program

CHECKPOINTS = (5, 10, 20, 30, 40, 50, 60, 80, 100, 150, 200)


def _loadavg() -> float | None:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _evolve(args: list[str]) -> tuple[dict, float]:
    cmd = [sys.executable, "-m", "monsearch", "evolve", "--json", "--quiet", *args]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0 and not proc.stdout.strip().startswith("{"):
        sys.exit(f"{' '.join(cmd[3:])} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout), wall


def _curve(records: list) -> dict[int, float]:
    best, out = 0.0, {}
    for k, r in enumerate(records, 1):
        if r.status == "ok":
            best = max(best, r.fitness)
        if k in CHECKPOINTS or k == len(records):
            out[k] = round(best, 4)
    return out


def llm_figures(records: list) -> dict:
    """Validity, repairs and time of the LLM's proposals in one run's lineage."""
    llm = [r for r in records if r.proposer == "llm"]
    if not llm:
        return {"proposals": 0}
    scored = [r for r in llm if r.status == "ok"]
    # Scored on val but refused by a constraint (over the oracle-call cap): it compiled,
    # ran and was scored, and is not a valid candidate for selection.
    constrained = [r for r in llm if r.status in ("infeasible", "not_estimable")]
    repaired_turn = [
        r for r in llm
        if re.search(r"--- (repair|fresh) turn", r.artifacts.get("raw_response") or "")
    ]
    saved = [
        r for r in repaired_turn if r.operator.endswith(("+repair", "+fresh")) and r.status == "ok"
    ]
    seconds = sorted(r.timings.get("propose_s", 0.0) for r in llm)
    q = statistics.quantiles(seconds, n=4) if len(seconds) >= 2 else [seconds[0]] * 3
    failures: dict[str, int] = {}
    for r in llm:
        if r.status != "ok":
            err = (r.artifacts.get("proposal_error") or r.status).split(":")[0][:60]
            failures[err] = failures.get(err, 0) + 1
    return {
        "proposals": len(llm),
        "scored": len(scored),
        "validity": round(len(scored) / len(llm), 3),
        "scored_but_constrained": len(constrained),
        "compiled_and_scored": round((len(scored) + len(constrained)) / len(llm), 3),
        "repair_turns": len(repaired_turn),
        "repair_rate": round(len(repaired_turn) / len(llm), 3),
        "saved_by_repair": len(saved),
        "seconds_median": round(statistics.median(seconds), 1),
        "seconds_q1_q3": [round(q[0], 1), round(q[2], 1)],
        "beat_parent": sum(
            1
            for r in scored
            if r.parent_ids and any(
                p.status == "ok" and r.fitness > p.fitness for p in records if p.id == r.parent_ids[0]
            )
        ),
        "failures": failures,
    }


def llm_in_selection(records: list, selected_id: str | None) -> list[dict]:
    """Detectors of the selected strategy whose code the model wrote: each detector is
    traced up the line of first parents to the candidate that gave it its present
    code; counted when that candidate is an LLM proposal (a new ``detect_llm_*``, or a
    rewrite of one of the parent's detectors kept as it was written)."""
    by_id = {r.id: r for r in records}
    sel = by_id.get(selected_id or "")
    program = parse_program(sel.source) if sel is not None and sel.source else None
    if program is None:
        return []

    parsed: dict[str, object] = {}

    def code_of(record, name: str) -> str | None:
        if record.id not in parsed:  # each ancestor parsed once, not once per detector
            parsed[record.id] = parse_program(record.source) if record.source else None
        p = parsed[record.id]
        d = p.detector(name) if p is not None else None
        return None if d is None else d.source.strip()

    found = []
    for det in program.detectors:
        code, origin, cur = det.source.strip(), sel, sel
        while cur.parent_ids and (parent := by_id.get(cur.parent_ids[0])) is not None:
            if code_of(parent, det.name) != code:
                break
            origin = cur = parent
        if origin.proposer == "llm" and origin.parent_ids:
            found.append(
                {"detector": det.function, "added_by": origin.id, "operator": origin.operator}
            )
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--model", default=os.environ.get("MONSEARCH_TEST_LLM_MODEL"))
    ap.add_argument("--fetch", default=None, help="a catalogued model to fetch and serve")
    ap.add_argument("--alias", default=None)
    ap.add_argument("--python", default=None)
    ap.add_argument("--budget", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mix", default="offline:0.7,llm:0.3")
    ap.add_argument("--llm-only", type=int, default=0)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--threads-batch", type=int, default=None)
    ap.add_argument("--corpus", default=None)
    ap.add_argument("--runs-dir", default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from monsearch.local_llm.server import LocalServer, ServerError

    model, alias = args.model, args.alias
    if args.fetch:
        from monsearch.local_llm.catalogue import model_entry
        from monsearch.local_llm.fetch import fetch_model

        entry = model_entry(args.fetch)
        model, alias = str(fetch_model(entry, log=print)), alias or entry.alias
    if not model or not Path(model).is_file():
        print(
            "skipped: no local model (give --model FILE.gguf, $MONSEARCH_TEST_LLM_MODEL, or "
            "--fetch NAME; see `monsearch llm models`)"
        )
        return
    alias = alias or Path(model).name.removesuffix(".gguf")
    runs = Path(args.runs_dir or tempfile.mkdtemp(prefix="monsearch-llm-bench-"))
    runs.mkdir(parents=True, exist_ok=True)
    common = ["--budget", str(args.budget), "--seed", str(args.seed), "--runs-dir", str(runs)]
    if args.corpus:
        common += ["--corpus", args.corpus]
    out: dict = {"model": Path(model).name, "alias": alias, "budget": args.budget,
                 "seed": args.seed, "load_before": _loadavg()}  # fmt: skip
    server = LocalServer(
        model, alias, python=args.python, n_threads=args.threads,
        n_threads_batch=args.threads_batch, log_path=runs / "llama-server.log",
    )  # fmt: skip
    try:
        server.start()
    except ServerError as exc:
        print(f"skipped: the local model server does not start: {exc}")
        return
    loads: list[float] = []
    try:
        llm_args = ["--llm-base-url", server.base_url, "--llm-model", alias]
        tag = f"s{args.seed}-n{args.budget}"
        offline, wall_off = _evolve([*common, "--run-id", f"offline-{tag}"])
        loads.append(_loadavg() or 0.0)
        mixed, wall_mix = _evolve(
            [*common, "--run-id", f"mixed-{tag}", "--proposer", args.mix, *llm_args]
        )
        loads.append(_loadavg() or 0.0)
        only = None
        if args.llm_only:
            only, _ = _evolve(
                ["--budget", str(args.llm_only + 2), "--seed", str(args.seed), "--runs-dir",
                 str(runs), "--run-id", f"llm-only-{tag}", "--proposer", "llm",
                 "--optuna-trials", "0", *llm_args]
                + (["--corpus", args.corpus] if args.corpus else [])
            )  # fmt: skip
            loads.append(_loadavg() or 0.0)
    finally:
        server.stop()
    for label, outcome, wall in (("offline", offline, wall_off), ("mixed", mixed, wall_mix)):
        with LineageStore(runs / outcome["run_id"] / "lineage.sqlite", readonly=True) as store:
            records = store.records()
        sel = outcome.get("selected") or {}
        out[label] = {
            "run": outcome["run_id"],
            "status": outcome["status"],
            "wall_s": round(wall, 1),
            "curve": _curve(records),
            "selected": sel.get("id"),
            "selected_fitness": sel.get("fitness"),
            "selected_low": sel.get("fitness_low"),
            "llm": llm_figures(records),
            "llm_in_selection": llm_in_selection(records, sel.get("id")),
        }
    if only is not None:
        with LineageStore(runs / only["run_id"] / "lineage.sqlite", readonly=True) as store:
            out["llm_only"] = {"run": only["run_id"], "llm": llm_figures(store.records())}
    out["load_during"] = loads
    out["runs_dir"] = str(runs)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    report(out)


def report(out: dict) -> None:
    print(f"model {out['model']} (served as {out['alias']}), seed {out['seed']}, "
          f"budget {out['budget']}; 1-minute load before {out['load_before']}, "
          f"after each run {out['load_during']}")  # fmt: skip
    for label in ("offline", "mixed"):
        r = out[label]
        curve = ", ".join(f"{k}: {v:.4f}" for k, v in r["curve"].items())
        print(f"{label:<8} {r['status']}, {r['wall_s']:.0f} s; best after k evaluations: {curve}")
        print(f"         selected {r['selected']} fitness {r['selected_fitness']:.4f} "
              f"(bootstrap low {r['selected_low']:.4f})")  # fmt: skip
    for label in ("mixed", "llm_only"):
        if label not in out:
            continue
        f = out[label]["llm"]
        if not f.get("proposals"):
            continue
        print(
            f"LLM proposals ({label}): {f['scored']}/{f['proposals']} scored and feasible "
            f"({f['validity']:.0%}), {f['scored_but_constrained']} more scored but over a "
            f"constraint ({f['compiled_and_scored']:.0%} compiled and scored); repair turn in {f['repair_turns']} ({f['repair_rate']:.0%}), "
            f"{f['saved_by_repair']} saved by it; seconds per proposal median "
            f"{f['seconds_median']} (quartiles {f['seconds_q1_q3']}); beat their parent: "
            f"{f['beat_parent']}; failures: {f['failures']}"
        )
    sel = out["mixed"]["llm_in_selection"]
    if sel:
        for d in sel:
            print(f"in the selected strategy: {d['detector']} (added by {d['added_by']}, {d['operator']})")
    else:
        print("no LLM-written detector in the mixed run's selected strategy")
    print(f"runs kept in {out['runs_dir']} (monsearch lineage RUN --runs-dir ...)")


if __name__ == "__main__":
    main()
