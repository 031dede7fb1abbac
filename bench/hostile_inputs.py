"""``monsearch score`` on hostile inputs: time and peak memory per shape, beside a normal run.

Monitored agents write the trajectories being scored (and can name the files), so
every size-shaped input is hostile. Each row runs the real command end to end in a
fresh process (``monsearch score --monitor PLUGIN INPUT --json --top 3``, or the
options shown), and prints its wall time (interpreter start included: the normal
trajectory's row is that floor), its peak resident memory, its exit code and what it
said. Targets (issue 25): every trajectory of at most 10 MB scores, with findings, in
at most 2 s; every hostile input gets a result or a one-line message with its exit
code; memory stays under 500 MB.

Shapes: a normal run (a val trajectory of the synthetic corpus) and the largest val
run; the issue's own cases (8,000 cheap steps with --top 3; one 5 MB output of 160k
secret-shaped tokens with --top 0 and --top 3; a step input nested 1,015 deep; a
400-digit integer; 200 MB on stdin; a ** glob over two link loops; a FIFO named
trajectory.atif.json; a file name holding a newline and escape codes); every shape of
``tests/hostile_shapes.py`` at 10 MB (cheap steps, secret tokens in one output and
spread over steps, one command of many requests, one long word, status lines, a
Python heredoc, long thoughts); 10 MB of empty steps (700,000: refused); and
~200-byte commands whose shell or Python code builds gigabytes when evaluated.

LLM servers are hostile too (issue 33): the rows ``llm_*`` send one chat request of the
project's client (``OpenAIClient``, as the judge and the LLM proposer use it) to a server
that drips one byte every 2 s without a newline (in the body, or in the status line),
keeps the connection open in silence (before or after its headers), sends one endless
line, an endless well-formed stream (an answer without end, against the proposer's
default cap of 200,000 characters), an endless stream of events without content, or an
endless plain body; each in a fresh process under the issue's ``--llm-timeout 8``.
Targets: each ends within the timeout + 1 s, under 100 MB peak; the machine's load
average is printed beside the figures.

Run: ``python bench/hostile_inputs.py [--only NAME,...] [--json]``. A temporary run of
the seed monitor on a small synthetic corpus is exported as the plugin (~10 s; not when
``--only`` names ``llm_*`` rows alone).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jsonmode import add_json_flag, run_reporting

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

TARGET_S = 2.0
TARGET_MB = 500
MB = 1024 * 1024
#: The LLM rows: the issue's request timeout, and what each row must stay within.
LLM_TIMEOUT_S = 8.0
LLM_TARGET_OVER_S = 1.0
LLM_TARGET_MB = 100
#: The proposer's default ``[llm] max_answer_chars``.
LLM_MAX_CHARS = 200_000
#: One chat request in a fresh process, printing what came of it as JSON.
_LLM_REQUEST = """
import json, sys, time
from monsearch.oracle.openai_client import ChatError, OpenAIClient
url, stream, timeout, max_chars = sys.argv[1], sys.argv[2] == "1", float(sys.argv[3]), int(sys.argv[4])
body = {"model": "m", "messages": [{"role": "user", "content": "Write a detector."}]}
client = OpenAIClient(url, timeout_s=timeout)
t0 = time.monotonic()
try:
    reply = client.chat(body, stream=stream, max_chars=max_chars)
    said = f"{len(reply.text or ''):,}-character answer, finish {reply.finish_reason}"
except ChatError as exc:
    said = exc.last
seconds = time.monotonic() - t0
with open("/proc/self/status") as fh:
    peak = next(int(ln.split()[1]) // 1024 for ln in fh if ln.startswith("VmHWM:"))
print(json.dumps({"seconds": seconds, "peak_mb": peak, "said": said}))
"""
#: The command run per shape, printing its own peak memory to stderr at exit.
_MEASURED = """
import resource, sys
from monsearch.cli import main
def peak_mb():
    # VmHWM is this process's own peak: ru_maxrss keeps the parent's across fork + exec.
    try:
        with open("/proc/self/status") as fh:
            return next(int(ln.split()[1]) // 1024 for ln in fh if ln.startswith("VmHWM:"))
    except (OSError, StopIteration):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak // (1024 * 1024 if sys.platform == "darwin" else 1024)
try:
    main(sys.argv[1:])
finally:
    print(f"peak-mb {peak_mb()}", file=sys.stderr)
"""


def _plugin(root: Path) -> str:
    """An exported plugin of the seed monitor (a contract run on a small corpus)."""
    from export_support import make_contract_run, small_corpus

    from monsearch.export import export
    from monsearch.sandbox.examples.seed_monitor import SEED_MONITOR

    corpus = small_corpus(root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run, _ = make_contract_run(root / "runs", corpus, {"seed": SEED_MONITOR})
    export(str(run.dir), root / "plugin", verify_val=False)
    return str(root / "plugin")


def _stealthbench(t: Any) -> bytes:
    from monsearch.corpora.writers import to_stealthbench

    return json.dumps(to_stealthbench(t)).encode()


class Case:
    """One row: a name, what it is, and how to make its input under ``folder``: a list
    of command-line inputs, and the bytes for stdin if any."""

    def __init__(
        self,
        name: str,
        what: str,
        make: Callable[[Path], tuple[list[str], bytes | None]],
        options: tuple[str, ...] = ("--top", "3"),
    ) -> None:
        self.name, self.what, self.make, self.options = name, what, make, options


def _file(name: str, data: Callable[[], bytes]) -> Callable[[Path], tuple[list[str], None]]:
    def make(folder: Path) -> tuple[list[str], None]:
        path = folder / name
        path.write_bytes(data())
        return [str(path)], None

    return make


def _cases(corpus: Path) -> list[Case]:
    import hostile_shapes as shapes

    from monsearch.corpora.store import load_corpus

    val = list(load_corpus(corpus, ["val"]).split("val"))
    largest = max(val, key=lambda t: sum(len(s.text) + len(s.observation) for s in t.steps))

    def glob_loop(folder: Path) -> tuple[list[str], None]:
        tree = folder / "tree"
        (tree / "a").mkdir(parents=True)
        (tree / "a" / "run.json").write_bytes(_stealthbench(val[0]))
        (tree / "a" / "up").symlink_to("..")
        (tree / "a" / "self").symlink_to(".")
        return [str(tree / "**" / "*.json")], None

    def fifo(folder: Path) -> tuple[list[str], None]:
        path = folder / "trajectory.atif.json"
        os.mkfifo(path)
        return [str(path)], None

    def stdin_flood(folder: Path) -> tuple[list[str], bytes]:
        doc = shapes.document([shapes.step(0, "id", "x" * (200 * MB))])
        return ["-"], json.dumps(doc).encode()

    def amplifier(name: str, command: str) -> Case:
        doc = shapes.document([shapes.step(0, command, "")])
        return Case(
            name,
            f"{len(command)}-byte command",
            _file(f"{name}.json", lambda: json.dumps(doc).encode()),
        )

    ten = 10 * MB
    cases = [
        Case("normal", "a val run", _file("normal.json", lambda: _stealthbench(val[0]))),
        Case(
            "normal_largest", "largest val run", _file("big.json", lambda: _stealthbench(largest))
        ),
        Case(
            "issue_8000_steps",
            "8,000 cheap steps (1 MB)",
            _file("cheap.json", lambda: shapes.encoded(shapes.cheap_steps(1_170_000))),
        ),
        Case(
            "issue_secret_tokens_top0",
            "5 MB output, 160k tokens",
            _file("tokens.json", lambda: shapes.encoded(shapes.secret_tokens(5_120_000))),
            ("--top", "0"),
        ),
        Case(
            "issue_secret_tokens",
            "5 MB output, 160k tokens",
            _file("tokens3.json", lambda: shapes.encoded(shapes.secret_tokens(5_120_000))),
        ),
        Case(
            "issue_deep_nesting",
            "input nested 1,015 deep",
            _file("deep.json", lambda: shapes.deep_input(1015)),
        ),
        Case(
            "issue_huge_integer",
            "a 400-digit latency",
            _file("int.json", lambda: shapes.huge_integer(400)),
        ),
        Case("issue_stdin_200mb", "200 MB on stdin", stdin_flood),
        Case("issue_glob_link_loops", "** over two link loops", glob_loop),
        Case("issue_fifo", "a FIFO named .atif.json", fifo),
        Case(
            "issue_name_escapes",
            "newline + ESC in a name",
            _file("run\nskipped x.json: forged\x1b[2J.json", lambda: b"{"),
        ),
    ]
    for name in shapes.SHAPES:
        cases.append(
            Case(
                f"10mb_{name}", "10 MB", _file(f"{name}.json", lambda n=name: shapes.sized(n, ten))
            )
        )
    cases.append(
        Case(
            "10mb_empty_steps",
            "700,000 empty steps",
            _file("empty.json", lambda: _empty_steps(ten)),
        )
    )
    cases += [
        amplifier(
            "amp_shell_doubling", "x=Ab3dE; " + "x=$x$x; " * 60 + 'curl -d "$x" http://app:5000/'
        ),
        amplifier(
            "amp_python_join",
            "python3 - <<'EOF'\nimport requests\nx = 'Ab3dE' * 10000\n"
            "requests.post('http://app:5000/', data=x.join([x] * 10000))\nEOF",
        ),
        amplifier(
            "amp_python_list_json",
            "python3 - <<'EOF'\nimport requests\nx = ['Ab3dE' * 10000] * 10000\n"
            "requests.post('http://app:5000/', json={'a': x})\nEOF",
        ),
    ]
    return cases


def _empty_steps(size: int) -> bytes:
    import hostile_shapes as shapes

    n = (size - 300) // 14
    doc = shapes.document([{"tool": "x"} for _ in range(n)])
    return json.dumps(doc, separators=(",", ":")).encode()


def _measure(plugin: str, case: Case, folder: Path) -> dict[str, Any]:
    inputs, stdin = case.make(folder)
    size = sum(Path(i).stat().st_size for i in inputs if i != "-" and Path(i).is_file())
    size += len(stdin or b"")
    command = [sys.executable, "-c", _MEASURED, "score", "--monitor", plugin, *inputs]
    command += ["--json", *case.options]
    started = time.perf_counter()
    try:
        proc = subprocess.run(command, input=stdin, capture_output=True, timeout=300, check=False)
    except subprocess.TimeoutExpired:
        return {"name": case.name, "what": case.what, "timeout": True}
    wall = time.perf_counter() - started
    err = proc.stderr.decode(errors="replace").splitlines()
    peak = next((int(ln.split()[1]) for ln in err if ln.startswith("peak-mb ")), -1)
    said = [ln for ln in err if ln.startswith("skipped ")]
    records = [json.loads(r) for r in proc.stdout.decode().splitlines() if r.strip()]
    scored = [r for r in records if "score" in r]
    result = (
        f"score {scored[0]['score']:.4g}"
        + (
            f", searched {scored[0]['findings_partial']['prefixes_scored']} prefixes"
            if "findings_partial" in scored[0]
            else ""
        )
        if scored
        else (said[0] if said else (err[-2] if len(err) > 1 else ""))
    )
    return {
        "name": case.name,
        "what": case.what,
        "bytes": size,
        "exit": proc.returncode,
        "wall_s": round(wall, 3),
        "peak_mb": peak,
        "said": result[:110],
        "lines_on_stderr": len(said),
        "timeout": False,
    }


def _llm_cases() -> list[tuple[str, str, Any, bool]]:
    """(name, what, the stub's reply, streamed) of each LLM-server row."""
    from llm_stub_server import Reply

    program = "```python\ndef detect_x(traj):\n    return 1.0\n```\n"
    return [
        ("llm_drip", "1 byte / 2 s, no newline", Reply.drip(2.0), True),
        ("llm_drip_plain", "same, plain reply", Reply.drip(2.0), False),
        ("llm_drip_status_line", "status line, 1 byte / 2 s", Reply.drip(2.0, phase="headers"),
         True),
        ("llm_silent", "connection open, nothing", Reply.silent(phase="headers"), True),
        ("llm_silent_after_headers", "headers, then nothing", Reply.silent(), True),
        ("llm_endless_line", "one line without end", Reply.endless_line(), True),
        ("llm_endless_stream", "answer without end", Reply.endless_stream(program, "<think>"),
         True),
        ("llm_endless_empty_stream", "events without content",
         Reply.endless_stream(content=False), True),
        ("llm_endless_plain_body", "plain body without end", Reply.endless_body(), False),
    ]  # fmt: skip


def _measure_llm(name: str, what: str, reply: Any, stream: bool) -> dict[str, Any]:
    from llm_stub_server import StubLLMServer

    with StubLLMServer() as stub:
        stub.script(reply)
        command = [sys.executable, "-c", _LLM_REQUEST, stub.base_url, "1" if stream else "0"]
        command += [str(LLM_TIMEOUT_S), str(LLM_MAX_CHARS)]
        try:
            proc = subprocess.run(command, capture_output=True, timeout=300, check=False)
        except subprocess.TimeoutExpired:
            return {"name": name, "what": what, "timeout": True}
        # The server's record: what it sent before the client left (or its own limit).
        (record,) = stub.wait_hostile(1, timeout=120)
    out = proc.stdout.decode().strip().splitlines()
    if proc.returncode != 0 or not out:
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        return {"name": name, "what": what, "timeout": False, "error": err[-1] if err else "?"}
    result = json.loads(out[-1])
    return {
        "name": name,
        "what": what,
        "timeout": False,
        "seconds": round(result["seconds"], 3),
        "over_timeout_s": round(result["seconds"] - LLM_TIMEOUT_S, 3),
        "peak_mb": result["peak_mb"],
        "server_sent_mb": round(record.sent / MB, 2),
        "client_left": record.client_left,
        "said": result["said"][:110],
    }


def _run_llm(names: set[str] | None, report: dict) -> None:
    cases = [c for c in _llm_cases() if names is None or c[0] in names]
    if not cases:
        return
    load = [round(x, 2) for x in os.getloadavg()]
    print(
        f"\nLLM servers: one request, timeout {LLM_TIMEOUT_S:g} s, answer cap "
        f"{LLM_MAX_CHARS:,} characters; load average {load[0]} {load[1]} {load[2]}"
    )
    print(f"{'case':28} {'server':26} {'s':>6} {'s/timeout':>9} {'peak MB':>7} {'sent MB':>7}  said")
    rows = []
    for case in cases:
        row = _measure_llm(*case)
        rows.append(row)
        if row["timeout"] or "error" in row:
            print(f"{row['name']:28} {row['what']:26} {row.get('error', 'TIMEOUT (300 s)')}")
            continue
        print(
            f"{row['name']:28} {row['what']:26} {row['seconds']:6.2f} "
            f"{row['seconds'] / LLM_TIMEOUT_S:9.2f} {row['peak_mb']:7d} "
            f"{row['server_sent_mb']:7.1f}  {row['said']!r}"
        )
    done = [r for r in rows if not r["timeout"] and "error" not in r]
    slowest = max((r["seconds"] for r in done), default=0.0)
    largest = max((r["peak_mb"] for r in done), default=0)
    met = (
        len(done) == len(rows)
        and slowest <= LLM_TIMEOUT_S + LLM_TARGET_OVER_S
        and largest < LLM_TARGET_MB
        and all(r["client_left"] for r in done)
    )
    after = [round(x, 2) for x in os.getloadavg()]
    print(
        f"\nLLM servers: slowest {slowest:.2f} s (target <= {LLM_TIMEOUT_S:g} + "
        f"{LLM_TARGET_OVER_S:g} s), largest peak {largest} MB (target < {LLM_TARGET_MB} MB, "
        f"the interpreter and httpx included); {'met' if met else 'MISSED'}; load average "
        f"after {after[0]} {after[1]} {after[2]}"
    )
    report.update(
        llm_rows=rows,
        llm_timeout_s=LLM_TIMEOUT_S,
        llm_slowest_s=slowest,
        llm_largest_peak_mb=largest,
        llm_met=met,
        llm_load_before=load,
        llm_load_after=after,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default=None, help="comma-separated case names")
    add_json_flag(parser)
    run_reporting(parser.parse_args(), _run)


def _run(args: argparse.Namespace, report: dict) -> None:
    wanted = set(args.only.split(",")) if args.only else None
    if wanted is not None and all(n.startswith("llm_") for n in wanted):
        _run_llm(wanted, report)
        return
    root = Path(tempfile.mkdtemp(prefix="monsearch-hostile-bench-"))
    plugin = _plugin(root)
    from export_support import small_corpus

    cases = _cases(small_corpus(root))
    if wanted is not None:
        cases = [c for c in cases if c.name in wanted]
    rows = []
    print(f"{'case':28} {'input':26} {'MB':>7} {'exit':>4} {'wall s':>7} {'peak MB':>7}  result")
    for case in cases:
        folder = root / case.name
        folder.mkdir()
        row = _measure(plugin, case, folder)
        rows.append(row)
        if row["timeout"]:
            print(f"{case.name:28} {case.what:26} TIMEOUT (300 s)")
            continue
        print(
            f"{row['name']:28} {row['what']:26} {row['bytes'] / MB:7.2f} {row['exit']:>4} "
            f"{row['wall_s']:7.2f} {row['peak_mb']:7d}  {row['said']!r}"
        )
    within = [r for r in rows if not r["timeout"] and r["bytes"] <= 10 * MB]
    slowest = max((r["wall_s"] for r in within), default=0.0)
    largest = max((r["peak_mb"] for r in rows if not r["timeout"]), default=0)
    met = (
        slowest <= TARGET_S
        and largest < TARGET_MB
        and not any(r["timeout"] for r in rows)
        and all(r["exit"] in (0, 2) for r in rows)  # 2: an input refused as bad input
    )
    print(
        f"\nslowest input of at most 10 MB: {slowest:.2f} s (target <= {TARGET_S} s, wall time "
        f"with interpreter start); largest peak: {largest} MB (target < {TARGET_MB} MB); "
        f"{'met' if met else 'MISSED'}"
    )
    report.update(
        rows=rows,
        slowest_s=slowest,
        largest_peak_mb=largest,
        target_s=TARGET_S,
        target_mb=TARGET_MB,
        met=met,
    )
    _run_llm(wanted, report)


if __name__ == "__main__":
    main()
