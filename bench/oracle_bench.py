"""Oracle overheads: replay calls, prompt building, the disk cache, llm round trips to a local stub.

Prints numbers only; run with ``python bench/oracle_bench.py [--json]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from monsearch.corpora.model import ORACLE, Step, Trajectory, Verdict
from monsearch.oracle.cache import OracleCache
from monsearch.oracle.judge import JudgeAnswer
from monsearch.oracle.prompt import build_judge_prompt
from monsearch.oracle.rubrics import load_rubric
from monsearch.oracle.session import (
    LLMJudgeConfig,
    OracleConfig,
    OracleSession,
    replay_scores_from,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from jsonmode import add_json_flag, run_reporting
from openai_stub_server import StubJudgeServer  # noqa: E402


def _traj(tid: str, n_steps: int, out_chars: int) -> Trajectory:
    steps = tuple(
        Step(
            i,
            "execute_command",
            f"curl -s http://app:5000/api/x/{i}",
            "o" * out_chars,
            {"command": f"curl -s http://app:5000/api/x/{i}"},
        )
        for i in range(n_steps)
    )
    failed = n_steps % 2 == 0
    verdict = Verdict("oracle/j", failed, 0.3 if failed else 0.8, 0.9, "d", "r", ORACLE)
    return Trajectory(
        tid, "project-board", "g", "prompt", steps, "flag_found", True, oracle=(verdict,)
    )


def _per_op(fn, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_json_flag(ap)
    run_reporting(ap.parse_args(), _run)


def _run(args: argparse.Namespace, report: dict) -> None:
    corpus = [_traj(f"t{i}", 5 + i % 40, 300) for i in range(1000)]
    cfg = OracleConfig(backend="replay", per_traj_cap=1, replay_scores=replay_scores_from(corpus))
    session = OracleSession(cfg)
    binds = [session.bind(t.id) for t in corpus]
    t0 = time.perf_counter()
    for oracle in binds:
        oracle(None)
    admitted = (time.perf_counter() - t0) / len(binds)
    refused = _per_op(lambda: binds[0](None), 100_000)
    report.update(replay_admitted_us=admitted * 1e6, replay_refused_us=refused * 1e6)
    print(f"replay: admitted call {admitted * 1e6:.2f} us, refused call {refused * 1e6:.2f} us")

    rubric = load_rubric("project-board").text
    for n, out in ((10, 500), (50, 20_000), (200, 2_000)):
        traj = _traj("p", n, out)
        sec = _per_op(lambda traj=traj: build_judge_prompt(traj, rubric), 50)
        size = len(build_judge_prompt(traj, rubric))
        report.setdefault("prompt_ms", {})[f"{n}x{out}"] = sec * 1e3
        print(f"prompt: {n} steps x {out} chars -> {size} chars in {sec * 1e3:.2f} ms")

    with tempfile.TemporaryDirectory() as tmp:
        answer = JudgeAnswer(True, 0.3, 0.9, "d", "r")
        with OracleCache(tmp) as cache:
            keys = iter(range(10**9))
            put = _per_op(lambda: cache.put(f"k{next(keys)}", "j", "h", answer), 2000)
            get = _per_op(lambda: cache.get("k7", "j", "h"), 20_000)
        report.update(cache_put_us=put * 1e6, cache_get_us=get * 1e6)
        print(f"cache: put {put * 1e6:.0f} us, get {get * 1e6:.0f} us")

        with StubJudgeServer() as stub:
            llm = LLMJudgeConfig(
                model="stub", base_url=stub.base_url, api_key="k", backoff_base_s=0.01
            )
            small = {t.id: t for t in corpus[:200]}
            llm_cfg = OracleConfig(
                backend="llm", per_traj_cap=1, cache_dir=Path(tmp) / "c", llm=llm
            )
            for label in ("cold", "warm"):
                s = OracleSession(llm_cfg, small)
                t0 = time.perf_counter()
                for tid in small:
                    s.bind(tid)(None)
                dt = time.perf_counter() - t0
                report[f"llm_stub_{label}_ms_per_call"] = dt / len(small) * 1e3
                print(
                    f"llm via stub, {label} cache: {dt / len(small) * 1e3:.2f} ms/call, fresh={s.fresh()}"
                )
                s.close()


if __name__ == "__main__":
    main()
