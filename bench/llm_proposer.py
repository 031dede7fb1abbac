"""The LLM proposer against a real model, beside the offline proposer alone, at equal
evaluations and at equal wall-clock time.

For each seed (by default 4-7: seeds the README's measurements did not use), on the
same corpus:

1. ``offline``: the offline proposer alone, ``--budget`` evaluations; its wall time W;
2. ``mixed``: ``--mix`` (offline and the LLM), the same budget: equal evaluations;
3. ``mixed-wall``: the same mix with a budget it cannot reach, stopped (Ctrl-C: the
   candidates in flight are recorded, then the strategy is selected) once it has run
   W seconds: equal wall-clock time.

It reports each run's selected strategy, best val fitness after k evaluations and
after t seconds, the LLM's proposals (how many made a feasible child, repairs,
seconds a proposal, answers still in flight at the end), whether a detector the model
wrote is in the selected strategy, and the 1-minute load average sampled every 5 s
through each run. The verdict: in how many seeds the mixed search selected at least
what offline alone did, at equal wall time and at equal evaluations.

    python bench/llm_proposer.py [--fetch NAME | --model FILE | --base-url URL
        --served-model ID] [--seeds 4,5,6,7] [--budget 60] [--mix offline:0.7,llm:0.3]
        [--deadline S] [--llm-only N] [--corpus DIR] [--runs-dir DIR] [--json]

The model comes from ``--model``, ``$MONSEARCH_TEST_LLM_MODEL`` or ``--fetch`` (the
catalogue, cached), served here by llama.cpp (``monsearch.local_llm``); or from a
server already running (``--base-url`` and ``--served-model``: ``monsearch llm
serve``, vLLM, Ollama). Without one the bench says so and exits 0: nothing is
downloaded unless asked. Runs go through ``python -m monsearch`` of this interpreter
(``sys.executable``), started in the runs folder, so the folder the bench is started
from does not matter. Ctrl-C or SIGTERM stops the run in flight as ``evolve``'s Ctrl-C
does and prints the figures gathered so far, marked partial.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from monsearch.search.lineage import LineageStore
from monsearch.strategies.convention import parse_program

CHECKPOINTS = (5, 10, 20, 30, 40, 50, 60, 80, 100, 150, 200)
#: Seeds the README's LLM measurements did not use (they used 0-3).
DEFAULT_SEEDS = (4, 5, 6, 7)
LOAD_EVERY_S = 5.0
#: After a Ctrl-C is passed on, how long a run may take to record and select.
STOP_GRACE_S = 300.0
#: Seconds to wait for a busy model server before a run that uses it.
SERVER_WAIT_S = 900.0


def _loadavg() -> float | None:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


class LoadSampler:
    """The 1-minute load average every ``every`` seconds while a run goes."""

    def __init__(self, every: float = LOAD_EVERY_S) -> None:
        self.every = every
        self.samples: list[float] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(timeout=self.every + 1)

    def _run(self) -> None:
        while True:
            load = _loadavg()
            if load is not None:
                self.samples.append(load)
            if self._done.wait(self.every):
                return

    def summary(self) -> dict | None:
        if not self.samples:
            return None
        s = self.samples
        return {"min": min(s), "median": round(statistics.median(s), 2), "max": max(s), "n": len(s)}


def _curve(records: list) -> dict[int, float]:
    best, out = 0.0, {}
    for k, r in enumerate(records, 1):
        if r.status == "ok":
            best = max(best, r.fitness)
        if k in CHECKPOINTS or k == len(records):
            out[k] = round(best, 4)
    return out


def best_at(records: list, startup_s: float, t: float) -> tuple[float, int]:
    """Best val fitness and candidates recorded ``t`` seconds after the command started
    (``startup_s`` plus a record's ``at_s``, seconds of the loop when it was recorded)."""
    best, n = 0.0, 0
    for r in records:
        at = r.timings.get("at_s")
        if at is None or startup_s + at > t:
            continue
        n += 1
        if r.status == "ok":
            best = max(best, r.fitness)
    return round(best, 4), n


def _time_curve(records: list, startup_s: float, wall: float) -> dict[int, float]:
    marks = sorted({int(wall * f) for f in (0.25, 0.5, 0.75, 1.0)} - {0})
    return {t: best_at(records, startup_s, t)[0] for t in marks}


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
    ]  # fmt: skip
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
    by_id = {r.id: r for r in records}
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
            if r.parent_ids
            and (p := by_id.get(r.parent_ids[0])) is not None
            and p.status == "ok"
            and r.fitness > p.fitness
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


def run_figures(run_dir: Path, outcome: dict | None, wall: float, load: dict | None) -> dict:
    """What one run's folder says (also of a run stopped or killed part way)."""
    out: dict = {"run": run_dir.name, "wall_s": round(wall, 1), "load": load}
    path = run_dir / "lineage.sqlite"
    if not path.is_file():
        out["status"] = "no lineage"
        return out
    with LineageStore(path, readonly=True) as store:
        records = sorted(store.records(), key=lambda r: r.seq)
        timings = json.loads(store.get_meta("timings") or "{}")
        lane = json.loads(store.get_meta("llm_lane") or "null")
        status = store.get_meta("status")
    sel = (outcome or {}).get("selected") or {}
    startup = float(timings.get("startup_s") or 0.0)
    out.update(
        status=(outcome or {}).get("status") or status,
        evaluations=len(records),
        startup_s=round(startup, 1),
        curve=_curve(records),
        by_time=_time_curve(records, startup, wall),
        selected=sel.get("id"),
        selected_fitness=sel.get("fitness"),
        selected_low=sel.get("fitness_low"),
        llm=llm_figures(records),
        llm_lane=lane,
        llm_in_selection=llm_in_selection(records, sel.get("id")),
    )
    out["_records"] = records
    return out


class Bench:
    """Runs ``evolve`` one run at a time and keeps what each gave (see the module doc)."""

    def __init__(self, runs: Path, common: list[str], llm_args: list[str]) -> None:
        self.runs = runs
        self.common = common
        self.llm_args = llm_args
        self.stopped: int | None = None
        self._child: subprocess.Popen[str] | None = None

    def stop(self, signum: int, _frame: object = None) -> None:
        """Ctrl-C or SIGTERM: the run in flight stops as evolve's Ctrl-C does."""
        self.stopped = self.stopped or signum
        child = self._child
        if child is not None and child.poll() is None:
            child.send_signal(signal.SIGINT)

    def wait_for_server(self, base_url: str, alias: str, limit_s: float = SERVER_WAIT_S) -> float:
        """Wait until the model server answers again (a llama.cpp server answers one
        request at a time, and may still be reading the prompt of a proposal the last
        run left in flight); the seconds waited."""
        from monsearch.errors import MonsearchError
        from monsearch.search.llm_proposer import LLMProposerConfig, probe_endpoints

        t0 = time.monotonic()
        while not self.stopped:
            try:
                probe_endpoints(LLMProposerConfig.from_dict({"model": alias, "base_url": base_url}))
                break
            except MonsearchError:
                if time.monotonic() - t0 > limit_s:
                    break  # the run will say what is wrong
                time.sleep(10)
        return time.monotonic() - t0

    def evolve(self, run_id: str, args: list[str], stop_after: float | None = None) -> dict:
        """One ``evolve`` (stopped with Ctrl-C after ``stop_after`` seconds, if given)."""
        cmd = [sys.executable, "-m", "monsearch", "evolve", "--json", "--quiet",
               "--run-id", run_id, *self.common, *args]  # fmt: skip
        t0 = time.monotonic()
        interrupted = False
        asked_at: float | None = None  # when the run was asked to stop
        with LoadSampler() as load:
            # Started in the runs folder (a clone's root would shadow the installed
            # package) and in a session of its own: a Ctrl-C at the terminal reaches
            # the bench, which passes on exactly one (a second stops evolve at once).
            self._child = child = subprocess.Popen(
                cmd, cwd=self.runs, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                start_new_session=True,
            )  # fmt: skip
            if self.stopped:  # a signal between two runs
                child.send_signal(signal.SIGINT)
            reader = _Reader(child)
            while child.poll() is None:
                now = time.monotonic()
                if stop_after is not None and now - t0 >= stop_after and not interrupted:
                    child.send_signal(signal.SIGINT)
                    interrupted = True
                if (interrupted or self.stopped) and asked_at is None:
                    asked_at = now
                if asked_at is not None and now - asked_at > STOP_GRACE_S:
                    child.kill()  # it did not stop: what it recorded is read below
                reader.join(0.2)
            reader.join()
            self._child = None
        wall = time.monotonic() - t0
        outcome = None
        if reader.out.strip().startswith("{"):
            try:
                outcome = json.loads(reader.out)
            except ValueError:
                outcome = None
        if outcome is None and not self.stopped:
            if not (self.runs / run_id).is_dir():  # refused before any work: bad input
                last = (reader.err.strip().splitlines() or ["(no message)"])[-1]
                print(f"evolve {run_id} did not start (exit {child.returncode}): {last}",
                      file=sys.stderr)  # fmt: skip
                sys.exit(2)
            print(f"evolve {run_id} failed (exit {child.returncode}):\n{reader.err[-3000:]}",
                  file=sys.stderr)  # fmt: skip
        figures = run_figures(self.runs / run_id, outcome, wall, load.summary())
        figures["stopped_at_s"] = round(stop_after, 1) if interrupted and stop_after else None
        return figures


class _Reader:
    """Reads a child's stdout and stderr to their ends (no pipe may fill and block it)."""

    def __init__(self, child: subprocess.Popen[str]) -> None:
        self.out = self.err = ""
        self._threads = [
            threading.Thread(target=self._read, args=(child.stdout, "out"), daemon=True),
            threading.Thread(target=self._read, args=(child.stderr, "err"), daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read(self, stream, which: str) -> None:
        setattr(self, which, stream.read())

    def join(self, timeout: float | None = None) -> None:
        for t in self._threads:
            t.join(timeout)


def compare(seed: int, runs: dict) -> dict:
    """The seed's comparisons at equal evaluations and at equal wall time."""
    out: dict = {"seed": seed}
    off, mix, wall = runs.get("offline"), runs.get("mixed"), runs.get("mixed-wall")

    def sel(r: dict | None) -> float | None:
        return None if r is None else r.get("selected_fitness")

    if off and mix:
        out["equal_evaluations"] = {
            "evaluations": off.get("evaluations"),
            "offline": sel(off),
            "mixed": sel(mix),
            "wall_s": [off["wall_s"], mix["wall_s"]],
        }
    if off and wall:
        w = off["wall_s"]
        at = [best_at(r.get("_records", []), r.get("startup_s", 0.0), w) for r in (off, wall)]
        out["equal_wall"] = {
            "wall_s": w,
            # Selected after the stop: the mixed run's last batch, in flight at W, counts.
            "offline": sel(off),
            "mixed": sel(wall),
            "evaluations": [off.get("evaluations"), wall.get("evaluations")],
            "evaluations_by_wall": [at[0][1], at[1][1]],
            "best_at_wall": [at[0][0], at[1][0]],
        }
    # A comparison counts only when its runs ran their course: offline and the mixed
    # run to their budget, the equal-wall run until the bench stopped it at W.
    done = {
        "equal_evaluations": bool(off and mix and off.get("status") == mix.get("status") == "finished"),
        "equal_wall": bool(
            off and wall and off.get("status") == "finished"
            and (wall.get("stopped_at_s") is not None or wall.get("status") == "finished")
        ),
    }  # fmt: skip
    for key in ("equal_evaluations", "equal_wall"):
        part = out.get(key)
        if part is None:
            continue
        part["complete"] = done[key]
        if done[key] and part["offline"] is not None and part["mixed"] is not None:
            part["mixed_at_least_offline"] = part["mixed"] >= part["offline"]
    return out


def summary(seeds: list[dict], results: dict) -> dict:
    out: dict = {}
    for key in ("equal_wall", "equal_evaluations"):
        done = [s[key] for s in seeds if key in s and "mixed_at_least_offline" in s[key]]
        out[key] = {
            "seeds": len(done),
            "mixed_at_least_offline": sum(1 for d in done if d["mixed_at_least_offline"]),
        }
    figures = [r["llm"] for per in results.values() for k, r in per.items()
               if k.startswith("mixed") and r.get("llm", {}).get("proposals")]  # fmt: skip
    proposals = sum(f["proposals"] for f in figures)
    scored = sum(f["scored"] for f in figures)
    out["llm_proposals"] = proposals
    out["llm_feasible"] = scored
    out["llm_feasible_share"] = round(scored / proposals, 3) if proposals else None
    loads = [r["load"] for per in results.values() for r in per.values() if r.get("load")]
    if loads:
        out["load"] = {"min": min(x["min"] for x in loads), "max": max(x["max"] for x in loads)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--model", default=os.environ.get("MONSEARCH_TEST_LLM_MODEL"))
    ap.add_argument("--fetch", default=None, help="a catalogued model to fetch and serve")
    ap.add_argument("--alias", default=None)
    ap.add_argument("--python", default=None)
    ap.add_argument("--base-url", default=None, help="a server already running (no model started)")
    ap.add_argument("--served-model", default=None, help="the model id that server serves")
    ap.add_argument("--seeds", default=",".join(map(str, DEFAULT_SEEDS)))
    ap.add_argument("--budget", type=int, default=60)
    ap.add_argument("--mix", default="offline:0.7,llm:0.3")
    ap.add_argument("--deadline", type=float, default=None, help="--llm-deadline of the runs")
    ap.add_argument("--wall-budget", type=int, default=None,
                    help="budget of the equal-wall run (default: 20 x --budget)")  # fmt: skip
    ap.add_argument("--llm-only", type=int, default=0)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--threads-batch", type=int, default=None)
    ap.add_argument("--corpus", default=None)
    ap.add_argument("--runs-dir", default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--seeds {args.seeds!r}: comma-separated integers")
    if not seeds or args.budget < 3:
        ap.error("give at least one seed and --budget of at least 3")

    runs = Path(args.runs_dir or tempfile.mkdtemp(prefix="monsearch-llm-bench-")).resolve()
    runs.mkdir(parents=True, exist_ok=True)
    server = None
    if args.base_url:
        if not args.served_model:
            ap.error("--base-url needs --served-model (the model id the server serves)")
        base_url, alias, model_name = args.base_url, args.served_model, args.served_model
    else:
        from monsearch.local_llm.server import LocalServer, ServerError

        model, alias = args.model, args.alias
        if args.fetch:
            from monsearch.local_llm.catalogue import model_entry
            from monsearch.local_llm.fetch import fetch_model

            entry = model_entry(args.fetch)
            model, alias = str(fetch_model(entry, log=print)), alias or entry.alias
        if not model or not Path(model).is_file():
            print(
                "skipped: no local model (give --model FILE.gguf, $MONSEARCH_TEST_LLM_MODEL, "
                "--fetch NAME, or --base-url URL --served-model ID; see `monsearch llm models`)"
            )
            return
        alias = alias or Path(model).name.removesuffix(".gguf")
        model_name = Path(model).name
        server = LocalServer(
            model, alias, python=args.python, n_threads=args.threads,
            n_threads_batch=args.threads_batch, log_path=runs / "llama-server.log",
        )  # fmt: skip
        try:
            server.start()
        except ServerError as exc:
            print(f"skipped: the local model server does not start: {exc}")
            return
        base_url = server.base_url
    if server is None:
        # The server given is checked before any run, as evolve's own probe would.
        from monsearch.errors import MonsearchError
        from monsearch.search.llm_proposer import LLMProposerConfig, probe_endpoints

        try:
            probe_endpoints(LLMProposerConfig.from_dict({"model": alias, "base_url": base_url}))
        except MonsearchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(2)
    common = ["--runs-dir", str(runs)]
    if args.corpus:
        common += ["--corpus", str(Path(args.corpus).resolve())]
    llm_args = ["--llm-base-url", base_url, "--llm-model", alias]
    if args.deadline:
        llm_args += ["--llm-deadline", str(args.deadline)]
    bench = Bench(runs, common, llm_args)
    previous = {s: signal.signal(s, bench.stop) for s in (signal.SIGINT, signal.SIGTERM)}
    out: dict = {"model": model_name, "served_as": alias, "budget": args.budget, "seeds": seeds,
                 "mix": args.mix, "load_before": _loadavg(), "runs_dir": str(runs)}  # fmt: skip
    results: dict[int, dict] = {}
    try:
        for seed in seeds:
            if bench.stopped:
                break
            per = results.setdefault(seed, {})
            tag = f"s{seed}-n{args.budget}"
            base = ["--seed", str(seed)]
            per["offline"] = bench.evolve(f"offline-{tag}", [*base, "--budget", str(args.budget)])
            if bench.stopped:
                break
            mixed = [*base, "--proposer", args.mix, *llm_args]
            waited = bench.wait_for_server(base_url, alias)
            per["mixed"] = bench.evolve(f"mixed-{tag}", [*mixed, "--budget", str(args.budget)])
            per["mixed"]["server_wait_s"] = round(waited, 1)
            if bench.stopped:
                break
            w = per["offline"]["wall_s"]
            big = args.wall_budget or 20 * args.budget
            waited = bench.wait_for_server(base_url, alias)
            per["mixed-wall"] = bench.evolve(
                f"mixed-wall-{tag}", [*mixed, "--budget", str(big)], stop_after=w
            )
            per["mixed-wall"]["server_wait_s"] = round(waited, 1)
            if args.llm_only and not bench.stopped:
                bench.wait_for_server(base_url, alias)
                per["llm-only"] = bench.evolve(
                    f"llm-only-{tag}",
                    [*base, "--budget", str(args.llm_only + 2), "--proposer", "llm",
                     "--optuna-trials", "0", *llm_args],
                )  # fmt: skip
    finally:
        if server is not None:
            server.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
    out["per_seed"] = [compare(seed, per) for seed, per in results.items()]
    out["summary"] = summary(out["per_seed"], results)
    out["runs"] = {
        str(seed): {k: {x: v for x, v in r.items() if not x.startswith("_")} for k, r in per.items()}
        for seed, per in results.items()
    }
    out["partial"] = bench.stopped is not None
    if bench.stopped:
        out["stopped_by"] = signal.Signals(bench.stopped).name
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        report(out)
    if bench.stopped:
        sys.exit(128 + bench.stopped)


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"


def report(out: dict) -> None:
    if out.get("partial"):
        print(f"PARTIAL: stopped by {out['stopped_by']}; the figures gathered so far")
    print(f"model {out['model']} (served as {out['served_as']}), seeds {out['seeds']}, budget "
          f"{out['budget']}, mix {out['mix']}; 1-minute load before {out['load_before']}")  # fmt: skip
    for seed, per in out["runs"].items():
        for label, r in per.items():
            if "curve" not in r:
                print(f"seed {seed} {label:<10} {r.get('status')}")
                continue
            load = r.get("load") or {}
            stop = f", stopped at {r['stopped_at_s']:.0f} s" if r.get("stopped_at_s") else ""
            print(
                f"seed {seed} {label:<10} {r['status']}, {r['evaluations']} evaluations in "
                f"{r['wall_s']:.0f} s{stop} (load {load.get('min', '-')}-{load.get('max', '-')}); "
                f"selected {r['selected']} {_f(r['selected_fitness'])}"
            )
            curve = ", ".join(f"{k}: {v:.4f}" for k, v in r["curve"].items())
            times = ", ".join(f"{k} s: {v:.4f}" for k, v in r["by_time"].items())
            print(f"    best after k evaluations: {curve}")
            print(f"    best after t seconds: {times}")
            f = r.get("llm") or {}
            if f.get("proposals"):
                print(
                    f"    LLM: {f['scored']}/{f['proposals']} feasible ({f['validity']:.0%}), "
                    f"{f['scored_but_constrained']} more over a constraint; repair turn in "
                    f"{f['repair_turns']}, {f['saved_by_repair']} saved by it; seconds a "
                    f"proposal median {f['seconds_median']} (quartiles {f['seconds_q1_q3']}); "
                    f"beat their parent {f['beat_parent']}; failures {f['failures']}"
                )
            lane = r.get("llm_lane")
            if lane:
                print(f"    LLM asked {lane['asked']}, placed {lane['placed']}, in flight at "
                      f"the end {lane['in_flight']}, arrived too late {lane['arrived_unplaced']}")  # fmt: skip
            for d in r.get("llm_in_selection") or ():
                print(f"    in the selection: {d['detector']} (by {d['added_by']}, {d['operator']})")
    for s in out["per_seed"]:
        ee, ew = s.get("equal_evaluations"), s.get("equal_wall")
        for part in (ee, ew):
            if part and not part["complete"]:
                part["note"] = " INCOMPLETE (a run was stopped early): not counted"
        if ee:
            print(f"seed {s['seed']} at equal evaluations ({ee['evaluations']}){ee.get('note', '')}: offline "
                  f"{_f(ee['offline'])}, mixed {_f(ee['mixed'])} (wall {ee['wall_s'][0]:.0f} s "
                  f"vs {ee['wall_s'][1]:.0f} s)")  # fmt: skip
        if ew:
            print(f"seed {s['seed']} at equal wall time ({ew['wall_s']:.0f} s){ew.get('note', '')}: offline "
                  f"{_f(ew['offline'])}, mixed {_f(ew['mixed'])} (evaluations by then "
                  f"{ew['evaluations_by_wall'][0]} vs {ew['evaluations_by_wall'][1]}, "
                  f"{ew['evaluations'][1]} with the mixed run's last batch; best by then "
                  f"{ew['best_at_wall'][0]:.4f} vs {ew['best_at_wall'][1]:.4f})")  # fmt: skip
    sm = out["summary"]
    for key, what in (("equal_wall", "equal wall time"), ("equal_evaluations", "equal evaluations")):
        part = sm[key]
        print(f"mixed >= offline alone at {what}: {part['mixed_at_least_offline']} of "
              f"{part['seeds']} seeds")  # fmt: skip
    if sm.get("llm_proposals"):
        print(f"LLM proposals that made a feasible child: {sm['llm_feasible']} of "
              f"{sm['llm_proposals']} ({sm['llm_feasible_share']:.0%})")  # fmt: skip
    if sm.get("load"):
        print(f"load during the runs: {sm['load']['min']}-{sm['load']['max']}")
    print(f"runs kept in {out['runs_dir']} (monsearch lineage RUN --runs-dir ...)")


if __name__ == "__main__":
    main()
