"""How fast trajectory views are built and read.

Builds synthetic episodes of every task, mode and style, then prints: views
built per second (cold caches, then again warm), mean steps and requests per
trajectory, the share of HTTP-looking steps that yield no request
(:mod:`monsearch.views.coverage`), and the cost of the monitor hot path
``view.steps[i].requests[0].method`` read directly and through the restricted
executor's attribute/item guards.

    python bench/view_speed.py [--n 10000] [--seed 0] [--json]
"""

from __future__ import annotations

import argparse
import pickle
import time
import timeit

from jsonmode import add_json_flag, run_reporting

from monsearch.corpora.model import Trajectory
from monsearch.synth.style_mix import style_mix
from monsearch.views import build as view_module
from monsearch.views.build import build_views
from monsearch.views.coverage import corpus_coverage


def synthetic(n: int, seed: int) -> list[Trajectory]:
    return style_mix(n, seed, name="bench")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    add_json_flag(ap)
    run_reporting(ap.parse_args(), _run)


def _run(args: argparse.Namespace, report: dict) -> None:

    t0 = time.perf_counter()
    trajs = synthetic(args.n, args.seed)
    print(f"episodes: {len(trajs)} built in {time.perf_counter() - t0:.1f}s")

    # CPU time of this process: other load on the machine does not count.
    view_module._STEP_CACHE.clear()
    t0 = time.process_time()
    views = build_views(trajs)
    cold = time.process_time() - t0
    t0 = time.process_time()
    build_views(trajs)
    warm = time.process_time() - t0
    steps = sum(len(v.steps) for v in views) / len(views)
    reqs = sum(len(v.requests) for v in views) / len(views)
    report.update(
        n=len(views),
        cold_cpu_s=cold,
        warm_cpu_s=warm,
        cold_traj_per_s=len(views) / cold,
        warm_traj_per_s=len(views) / warm,
        steps_per_traj=steps,
        requests_per_traj=reqs,
    )
    print(
        f"build_views, CPU time: {cold:.2f}s cold ({len(views) / cold:.0f} traj/s), {warm:.2f}s warm ({len(views) / warm:.0f} traj/s)"
    )
    print(
        f"per trajectory: {steps:.1f} steps, {reqs:.1f} requests, {1000 * cold / len(views):.2f} ms cold"
    )
    # After the timings: the parse caches are warm, so this costs little.
    cov = corpus_coverage(trajs)["overall"]
    share = "-" if cov["share"] is None else f"{100 * cov['share']:.2f}%"
    report.update(
        http_steps=cov["http_steps"],
        http_unparsed=cov["unparsed"],
        http_unparsed_share=cov["share"],
    )
    print(
        f"HTTP coverage: {cov['unparsed']} of {cov['http_steps']} steps that look like HTTP "
        f"yield no request ({share})"
    )

    sample = views[:1000]
    t0 = time.process_time()
    blob = pickle.dumps(sample, protocol=pickle.HIGHEST_PROTOCOL)
    dump = time.process_time() - t0
    t0 = time.process_time()
    pickle.loads(blob)
    load = time.process_time() - t0
    print(
        f"pickle round trip: {1000 * (dump + load) / len(sample):.2f} ms per view, "
        f"{len(blob) / len(sample) / 1024:.1f} KiB per view (fork workers rather than ship views)"
    )

    with_req = [(v, i) for v in views for i, s in enumerate(v.steps) if s.requests][:1000]
    reps = 200

    def direct() -> None:
        for v, i in with_req:
            _ = v.steps[i].requests[0].method

    ns = timeit.timeit(direct, number=reps) / (reps * len(with_req)) * 1e9
    print(f"view.steps[i].requests[0].method: {ns:.0f} ns direct")
    report["attr_chain_direct_ns"] = ns
    try:
        from monsearch.sandbox.restricted import guarded_getattr, guarded_getitem
    except ImportError:
        return

    def guarded() -> None:
        for v, i in with_req:
            guarded_getattr(
                guarded_getitem(
                    guarded_getattr(guarded_getitem(guarded_getattr(v, "steps"), i), "requests"), 0
                ),
                "method",
            )

    ns = timeit.timeit(guarded, number=reps) / (reps * len(with_req)) * 1e9
    print(f"view.steps[i].requests[0].method: {ns:.0f} ns through the sandbox guards")
    report["attr_chain_guarded_ns"] = ns


if __name__ == "__main__":
    main()
