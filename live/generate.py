"""The live corpus: the synthetic plan, played by live workers, labelled, split, written.

``generate_live`` takes the synthetic generator's plan for ``(seed, size)`` (which
persona and task each run gets, then each run's own random stream: the same runs the
synthetic corpus of that seed and size holds), hands the runs to worker processes
(:mod:`~monsearch.live.worker`, each in its own walls), and writes what comes back:
the trajectories whose labels hold (:mod:`~monsearch.live.labels`) as a corpus split
like the synthetic one, every run's per-step fidelity records beside it
(``fidelity.jsonl.zst``), and a report (``live-report.json``): counts, the runs left
out and why, what commands tried outside the container, speed, and the fidelity
summary (:mod:`~monsearch.live.fidelity`).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monsearch.errors import MonsearchError

#: Default size of a live corpus (over 2,000 runs: every task and style many times).
DEFAULT_SIZE = 2400
DEFAULT_SEED = 0
FIDELITY_FILE = "fidelity.jsonl.zst"
REPORT_FILE = "live-report.json"
#: Characters of each observation kept in the fidelity records.
KEEP_OBS = 4000


class LiveError(MonsearchError):
    """The live corpus cannot be made here (no namespaces, no apps, no dependencies)."""


ProgressFn = Callable[[int, int], None]


def check_dependencies() -> None:
    """The apps' own packages, importable (the ``[live]`` extra)."""
    missing = []
    for mod, pkg in (("flask", "flask"), ("flask_limiter", "flask-limiter"), ("jwt", "pyjwt"), ("yaml", "pyyaml")):
        try:
            __import__(mod)
        except ImportError:
            missing.append(pkg)
    if missing:
        raise LiveError(
            f"the StealthBench apps need {', '.join(missing)}: pip install 'monsearch[live]' "
            "(from a clone: pip install '.[live]')"
        )


class _Worker:
    """One worker process and the thread that feeds it."""

    def __init__(self, apps: Path, tasks: list[str] | None, isolate: bool, root: str | None) -> None:
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "PYTHONPATH")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "monsearch.live.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        init = {"apps": str(apps), "tasks": tasks, "isolate": isolate, "root": root}
        self.proc.stdin.write(json.dumps(init) + "\n")
        self.proc.stdin.flush()
        first = self._read()
        if not first.get("ready"):
            self.close()
            raise LiveError(f"a live worker did not start: {first.get('error', 'no answer')}")

    def _read(self) -> dict[str, Any]:
        line = self.proc.stdout.readline()
        return json.loads(line) if line else {}

    def run(self, job: dict[str, Any]) -> dict[str, Any]:
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        reply = self._read()
        if not reply:
            raise LiveError("a live worker stopped")
        return reply

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@dataclass
class LiveResult:
    path: Path
    content_hash: str
    counts: dict[str, int]
    report: dict[str, Any]


def play(
    apps: Path,
    jobs: Sequence[dict[str, Any]],
    *,
    workers: int = 2,
    isolate: bool = True,
    progress: ProgressFn | None = None,
    stop: threading.Event | None = None,
) -> list[dict[str, Any]]:
    """Every job's reply (in the jobs' order), played on ``workers`` worker processes."""
    tasks = sorted({j["task"] for j in jobs})
    todo: queue.Queue[int] = queue.Queue()
    for i in range(len(jobs)):
        todo.put(i)
    replies: list[dict[str, Any] | None] = [None] * len(jobs)
    done = 0
    lock = threading.Lock()
    errors: list[BaseException] = []

    def feed() -> None:
        nonlocal done
        root = None if isolate else _scratch_root()
        try:
            w = _Worker(apps, tasks, isolate, root)
        except BaseException as exc:
            errors.append(exc)
            return
        try:
            while not (stop is not None and stop.is_set()):
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    replies[i] = w.run(jobs[i])
                except LiveError as exc:
                    replies[i] = {"n": jobs[i]["n"], "error": str(exc)}
                    w.close()
                    w = _Worker(apps, tasks, isolate, root)
                with lock:
                    done += 1
                    if progress is not None:
                        progress(done, len(jobs))
        finally:
            w.close()

    threads = [threading.Thread(target=feed, daemon=True) for _ in range(max(1, workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors and all(r is None for r in replies):
        raise errors[0] if isinstance(errors[0], LiveError) else LiveError(str(errors[0]))
    return [r if r is not None else {"n": j["n"], "error": "not played"} for r, j in zip(replies, jobs, strict=True)]


def _scratch_root() -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="monsearch-live-")


def jobs_for(
    size: int, seed: int, tasks: Sequence[str] | None = None, benign_mix: str | None = None
) -> list[dict[str, Any]]:
    """About ``size`` runs of the synthetic plan (of the tasks named: the plan of a
    corpus large enough that those tasks get ``size`` runs between them)."""
    import math

    from monsearch.synth.generate import plan
    from monsearch.synth.scenario import REGISTRY

    keep = set(tasks) if tasks else None
    total = size if keep is None else math.ceil(size * len(REGISTRY) / max(1, len(keep & set(REGISTRY))))
    return [
        {"seed": seed, "n": n, "generator": g, "task": t, "benign_mix": benign_mix}
        for n, (g, t) in enumerate(plan(total, seed))
        if keep is None or t in keep
    ]


def generate_live(
    apps: str | Path,
    out: str | Path,
    *,
    size: int = DEFAULT_SIZE,
    seed: int = DEFAULT_SEED,
    workers: int = 2,
    tasks: Sequence[str] | None = None,
    progress: ProgressFn | None = None,
    name: str | None = None,
    benign_mix: str | None = None,
    oracle: Any = None,
    judge_progress: ProgressFn | None = None,
) -> LiveResult:
    """Play, label, split and write a live corpus to ``out`` (see the module doc).
    ``benign_mix``: the runs' habit mix (synth/habits.py; default: each persona's own).
    ``oracle``: an llm :class:`~monsearch.oracle.session.OracleConfig` whose judge gives
    the kept runs' oracle verdicts (:mod:`~monsearch.live.judged`; default: simulated)."""
    import zstandard

    from monsearch.corpora.codec import trajectory_from_dict
    from monsearch.corpora.splits import make_split
    from monsearch.corpora.store import write_corpus
    from monsearch.live import isolation
    from monsearch.live.checkout import Checkout
    from monsearch.live.fidelity import summarise
    from monsearch.synth.generate import GENERATOR_VERSION, mix_record
    from monsearch.synth.personas import DEFAULT_CROSS_GENERATORS

    check_dependencies()
    why = isolation.probe()
    if why is not None:
        raise LiveError(why)
    checkout = Checkout(apps, list(tasks) if tasks else None)
    from monsearch.synth.generate import resolve_mix

    mix = resolve_mix(benign_mix, None)
    jobs = jobs_for(size, seed, list(checkout.tasks), mix.spec)
    started = time.monotonic()
    replies = play(checkout.root, jobs, workers=workers, progress=progress)
    wall = time.monotonic() - started
    kept, left_out, failed = [], Counter(), Counter()
    refused: Counter = Counter()
    missing: Counter = Counter()
    runs_for_fidelity = []
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp_fid = out.parent / f".{out.name}.fidelity.tmp"
    cctx = zstandard.ZstdCompressor(level=6)
    with open(tmp_fid, "wb") as raw, cctx.stream_writer(raw) as fid:
        for _job, rep in zip(jobs, replies, strict=True):
            if "error" in rep:
                failed[rep["error"].split(":")[0]] += 1
                continue
            traj = trajectory_from_dict(rep["trajectory"])
            live = traj.meta["live"]
            refused.update(live["refused"])
            missing.update(live["missing"])
            hosts = rep["hosts"]
            record = {
                "id": traj.id, "task": traj.task, "style": traj.meta.get("style", ""),
                "generator": traj.generator, "mode": traj.meta.get("mode", ""), "hosts": hosts,
                "fidelity": [_trim(r) for r in rep["fidelity"]],
            }  # fmt: skip
            runs_for_fidelity.append(record)
            fid.write((json.dumps(record) + "\n").encode())
            if rep["verdict"]["keep"]:
                kept.append(traj)
            else:
                left_out[rep["verdict"]["reasons"][0].split(":")[-1].strip()[:80]] += 1
    if not kept:
        tmp_fid.unlink(missing_ok=True)
        raise LiveError(f"no live run could be kept ({dict(failed) or dict(left_out)})")
    judged = None
    if oracle is not None:
        from monsearch.live.judged import judge_runs

        kept, judged = judge_runs(kept, oracle, judge_progress)
    split = make_split(kept, seed=seed, cross_generators=list(DEFAULT_CROSS_GENERATORS))
    info = dict(split.info)
    info["generator"] = {
        "name": "monsearch-live",
        "version": GENERATOR_VERSION,
        "seed": seed,
        "size": size,
        "tasks": sorted(checkout.tasks),
        "benign_mix": mix_record(mix),
        "oracle": "simulated" if judged is None else {"judge": judged["judge"], "judged": judged["judged"], "failed": judged["failed"]},
    }
    manifest = write_corpus(out, kept, name=name or f"live-s{seed}-n{size}", assignment=split.assignment, split_info=info)
    os.replace(tmp_fid, out / FIDELITY_FILE)
    styles = Counter(r["style"] for r in runs_for_fidelity)
    report = {
        "runs": len(jobs),
        "kept": len(kept),
        "left_out": dict(left_out.most_common()),
        "failed": dict(failed.most_common()),
        "solved": sum(1 for t in kept if t.solved),
        "refused_programs": dict(refused.most_common()),
        "programs_not_in_image": dict(missing.most_common()),
        "tasks": dict(Counter(t.task for t in kept)),
        "styles": dict(styles),
        "wall_s": round(wall, 1),
        "workers": workers,
        "fidelity": summarise(runs_for_fidelity),
        "oracle": judged,
    }
    (out / REPORT_FILE).write_text(json.dumps(report, indent=1), encoding="utf-8")
    counts = Counter(split.assignment[t.id] for t in kept)
    return LiveResult(out, manifest.content_hash, dict(counts), report)


def _trim(rec: dict[str, Any]) -> dict[str, Any]:
    out = dict(rec)
    for k in ("sim_observation", "real_observation", "command"):
        out[k] = out[k][:KEEP_OBS]
    return out


def run_in_container(
    apps: str | Path, task: str, command: str, *, online: bool = True, isolate: bool = True
) -> dict[str, Any]:
    """One command in a fresh live container of ``task`` (its real apps running), inside a
    worker's walls: what it printed, what it tried that was refused, what it reached.
    ``online``: whether the run's model of the internet answers (the sink) or not."""
    w = _Worker(Path(apps), [task], isolate, None if isolate else _scratch_root())
    try:
        return w.run({"task": task, "shell": command, "n": 0, "online": online})
    finally:
        w.close()
