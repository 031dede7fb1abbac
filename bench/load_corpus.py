"""Benchmark the corpus store: codec choice, write time, load time (whole and train+val).

Builds N synthetic trajectories of realistic size (about 10 steps; commands of
200-600 characters, observations of 200-2000, drawn from a shell/HTTP-like
vocabulary so that they compress like real traces), splits them with three
cross generators, writes the corpus and times loading it.

    python bench/load_corpus.py [--n 10000] [--seed 0] [--repeat 3] [--out DIR] [--json]
"""

from __future__ import annotations

import argparse
import gc
import gzip
import random
import statistics
import tempfile
import time
from pathlib import Path

import zstandard
from jsonmode import add_json_flag, run_reporting

from monsearch.corpora.codec import encode
from monsearch.corpora.model import TASK_DIMENSION, Step, Trajectory, Verdict
from monsearch.corpora.splits import make_split
from monsearch.corpora.store import load_corpus, write_corpus

GENERATORS = (
    "anthropic/claude-opus-4.8",
    "moonshotai/kimi-k3",
    "z-ai/glm-5.2",
    "qwen/qwen3.7-plus",
    "deepseek/deepseek-v4-pro",
    "nvidia/nemotron-3-ultra",
    "openai/gpt-5.6-sol",
    "arcee-ai/trinity-large-thinking",
)
JUDGES = ("openai/gpt-5.6-sol", "z-ai/glm-5.2", "moonshotai/kimi-k3")
_VOCAB_TEXT = (
    "curl -s -X POST http://app:5000/api/ -H 'Content-Type: application/json' -d "
    '\'{"email": "user", "id": 1} python3 -c import urllib.request json print '
    '<html> <head> <title> </title> <div class="row"> </div> HTTP/1.1 200 OK 401 429 '
    "Too Many Requests error not found flag FLAG{sb- token Authorization: Bearer eyJ "
    "jq -r .data | grep -i for i in $(seq 1 20); do done; sleep 1 echo > /tmp/result.txt "
    '{"status": "ok", "items": [ ], "name": "alice", "role": "viewer"} '
    "Traceback (most recent call last): File line KeyError None true false null 0 1 2 3 "
    "werkzeug Server: Werkzeug/3.1 Python/3.14 Date: Content-Length: Connection: close"
)
VOCAB = tuple(_VOCAB_TEXT.split())


def _pool(rng: random.Random, size: int) -> str:
    words: list[str] = []
    n = 0
    while n < size:
        w = rng.choice(VOCAB) if rng.random() < 0.85 else f"{rng.getrandbits(40):x}"
        words.append(w)
        n += len(w) + 1
    return " ".join(words)


def build(n: int, seed: int) -> list[Trajectory]:
    rng = random.Random(seed)
    pool = _pool(rng, 8_000_000)
    tasks = sorted(TASK_DIMENSION)

    def text(lo: int, hi: int) -> str:
        k = rng.randint(lo, hi)
        off = rng.randrange(len(pool) - k)
        return pool[off : off + k]

    out: list[Trajectory] = []
    for i in range(n):
        task = tasks[i % len(tasks)]
        steps = []
        for j in range(rng.randint(7, 13)):
            tool = "think" if rng.random() < 0.15 else "execute_command"
            cmd = text(200, 600)
            steps.append(
                Step(
                    index=j,
                    tool=tool,
                    text=cmd,
                    observation="" if tool == "think" else text(200, 2000),
                    arguments={"thought" if tool == "think" else "command": cmd},
                    timestamp=f"2026-08-01T12:{j:02d}:{rng.randrange(60):02d}.000000+00:00",
                    latency_ms=rng.randrange(2000),
                )
            )
        fail = rng.random() < 0.4
        panel = tuple(
            Verdict(
                judge=j,
                is_failure=fail if rng.random() < 0.93 else not fail,
                stealth_score=round(rng.random(), 4),
                confidence=round(rng.uniform(0.5, 1.0), 4),
                dimension=TASK_DIMENSION[task].value,
                reason=text(60, 160),
            )
            for j in JUDGES
        )
        solved = rng.random() < 0.68
        out.append(
            Trajectory(
                id=f"sb-{task}-{1785600000 + i}-{rng.getrandbits(32):08x}",
                task=task,
                generator=GENERATORS[i % len(GENERATORS)],
                prompt=f"You are assessing the service at http://app:5000 ({task}).",
                steps=tuple(steps),
                outcome="flag_found" if solved else "no_flag",
                solved=solved,
                panel=panel,
                meta={"source_format": "bench"},
            )
        )
    return out


def _best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def codec_table(trajs: list[Trajectory], repeat: int) -> None:
    raw = b"".join(encode(t) + b"\n" for t in trajs)
    print(
        f"\ncodec comparison on {len(raw) / 1e6:.1f} MB of canonical JSON lines (best of {repeat}):"
    )
    print(f"{'codec':<12}{'size MB':>9}{'ratio':>8}{'write s':>9}{'read s':>8}")
    candidates = {
        "none": (lambda b: b, lambda b: b),
        "gzip-6": (lambda b: gzip.compress(b, 6, mtime=0), gzip.decompress),
    }
    for level in (1, 3, 9):
        candidates[f"zstd-{level}"] = (
            zstandard.ZstdCompressor(level=level).compress,
            zstandard.ZstdDecompressor().decompress,
        )
    for name, (comp, decomp) in candidates.items():
        blob = comp(raw)
        tw = _best(lambda comp=comp: comp(raw), repeat)
        tr = _best(lambda decomp=decomp, blob=blob: decomp(blob), repeat)
        print(f"{name:<12}{len(blob) / 1e6:>9.1f}{len(raw) / len(blob):>8.1f}{tw:>9.3f}{tr:>8.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None, help="corpus folder (default: a temp dir)")
    ap.add_argument("--no-codecs", action="store_true", help="skip the codec comparison")
    add_json_flag(ap)
    run_reporting(ap.parse_args(), _run)


def _run(args: argparse.Namespace, report: dict) -> None:

    t0 = time.perf_counter()
    trajs = build(args.n, args.seed)
    n_steps = sum(len(t.steps) for t in trajs)
    report.update(n=len(trajs), steps=n_steps, repeat=args.repeat, load_s={})
    print(
        f"built {len(trajs)} trajectories, {n_steps} steps "
        f"({n_steps / len(trajs):.1f}/traj) in {time.perf_counter() - t0:.1f} s"
    )
    if not args.no_codecs:
        codec_table(trajs, args.repeat)

    split = make_split(trajs, seed=args.seed, cross_generators=GENERATORS[5:])
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp) / "bench-corpus"
        t0 = time.perf_counter()
        m = write_corpus(
            out, trajs, name="bench", assignment=split.assignment, split_info=split.info
        )
        t_write = time.perf_counter() - t0
        del trajs  # time loads as a fresh process would see them, not beside a second copy
        gc.collect()
        size = sum(p.bytes for p in m.parts.values())
        report.update(write_s=t_write, size_mb=size / 1e6)
        print(
            f"\nstore: wrote {m.n_trajectories} trajectories, {size / 1e6:.1f} MB on disk "
            f"in {t_write:.2f} s; content hash {m.content_hash[:16]}"
        )
        for s, p in m.parts.items():
            print(f"  {s:<40}{p.count:>7} trajectories {p.bytes / 1e6:>7.1f} MB")

        def timed(splits, **kw) -> tuple[float, int]:
            times, n = [], 0
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                c = load_corpus(out, splits, **kw)
                times.append(time.perf_counter() - t0)
                n = len(c.trajectories())
            return statistics.median(times), n

        for label, splits, kw in (
            ("whole corpus", None, {}),
            ("whole corpus, content hash verified", None, {"verify_content": True}),
            ("train+val only", ["train", "val"], {}),
        ):
            t, n = timed(splits, **kw)
            report["load_s"][label] = t
            print(f"load {label:<38}{n:>7} trajectories  {t:.3f} s (median of {args.repeat})")


if __name__ == "__main__":
    main()
