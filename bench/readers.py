"""Benchmark the trajectory readers on trees of realistic size.

Builds a StealthBench results tree of N runs (1-12 steps each, per-judge
verdicts, panel verdicts for three in four runs) and the same number of
canonical ATIF documents (a folder of .json files and one .jsonl), then times
each reader, best of --repeat.

    python bench/readers.py [--n 500] [--seed 0] [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from readers_support import atif_doc, build_tree  # noqa: E402

from monsearch.corpora.readers import read_atif, read_stealthbench  # noqa: E402


def best_of(repeat: int, fn) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print the key numbers as JSON only")
    args = ap.parse_args()
    out: dict = {}
    # --json: the usual text goes to stderr, stdout carries only the JSON object.
    with contextlib.redirect_stdout(sys.stderr if args.json else sys.stdout):
        _run(args, out)
    if args.json:
        print(json.dumps(out, indent=2))


def _run(args: argparse.Namespace, out: dict) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "results"
        t0 = time.perf_counter()
        build_tree(root, args.n, args.seed)
        print(f"built {args.n} StealthBench runs in {time.perf_counter() - t0:.2f} s")
        secs, report = best_of(args.repeat, lambda: read_stealthbench(root))
        n = len(report.trajectories)
        out.update(n=args.n, stealthbench_runs=n, stealthbench_s=secs)
        print(f"read_stealthbench: {n} runs in {secs * 1000:.0f} ms ({secs / n * 1e6:.0f} us/run)")

        folder = Path(tmp) / "atif"
        folder.mkdir()
        lines = []
        for i in range(args.n):
            doc = atif_doc(f"s-{i:05d}", task="ssrf-proxy", outcome="no_flag")
            (folder / f"t{i:05d}.json").write_text(json.dumps(doc))
            lines.append(json.dumps(doc))
        jsonl = Path(tmp) / "all.jsonl"
        jsonl.write_text("\n".join(lines) + "\n")
        secs, report = best_of(args.repeat, lambda: read_atif(folder))
        print(f"read_atif folder: {len(report.trajectories)} files in {secs * 1000:.0f} ms")
        out["atif_folder_s"] = secs
        secs, report = best_of(args.repeat, lambda: read_atif(jsonl))
        print(f"read_atif jsonl:  {len(report.trajectories)} lines in {secs * 1000:.0f} ms")
        out["atif_jsonl_s"] = secs


if __name__ == "__main__":
    main()
