"""``monsearch score`` on inputs a monitored agent shaped to hurt the scorer.

Agents write the trajectories being scored (and can name the files), so every input
here is hostile: nesting, huge numbers, stdin floods, FIFOs, link loops, names that
forge output lines or hold escape codes, and sizes that made scoring slow. Each one
must end in a result or a one-line message with its exit code, in bounded time and
memory. Timeouts here are hang guards, far above what any machine needs.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from export_support import shared_setup
from hostile_shapes import deep_input, document, huge_integer, step
from paths import FIXTURES

GOOD = sorted((FIXTURES / "stealthbench" / "results" / "trajectories").rglob("*.atif.json"))[0]
HANG_GUARD_S = 60


@pytest.fixture(scope="module")
def monitor(tmp_path_factory) -> str:
    return str(shared_setup(tmp_path_factory)["plugins"]["seed"][0])


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    import importlib

    folder, meta = shared_setup(tmp_path_factory)["plugins"]["seed"]
    src = str(folder / "src")
    if src not in sys.path:
        sys.path.insert(0, src)
    return importlib.import_module(meta["package"])


def score_cli(*args: str, stdin: bytes | None = None, cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, "-m", "monsearch", "score", *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        check=False,
        timeout=HANG_GUARD_S,
    )


def skipped(proc) -> list[str]:
    return [ln for ln in proc.stderr.decode().splitlines() if ln.startswith("skipped ")]


# --------------------------------------------------------------------------- documents


def test_deep_nesting_and_huge_numbers_get_one_line_as_import_gives(monitor, tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_bytes(deep_input(1015))
    big = tmp_path / "big.json"
    big.write_bytes(huge_integer(400))
    proc = score_cli("--monitor", monitor, str(deep), str(big))
    assert proc.returncode == 2 and proc.stdout == b""
    assert "Traceback" not in proc.stderr.decode()
    expected = {
        deep: "steps[0].input[0][0][0][0][0]…: expected JSON nested at most 100 levels "
        "deep, got deeper nesting",
        big: "expected valid JSON, got invalid JSON (number is infinity when parsed as "
        "double) at line 1, column",
    }
    lines = skipped(proc)
    assert len(lines) == 2
    for line, (path, message) in zip(lines, expected.items(), strict=True):
        assert line.startswith(f"skipped {path}: {message}")
    # `monsearch corpus import` refuses each with the same words.
    for path, message in expected.items():
        imp = subprocess.run(
            [sys.executable, "-m", "monsearch", "corpus", "import", str(path)]
            + ["--format", "stealthbench", "--out", str(tmp_path / "corpus")],
            capture_output=True,
            check=False,
            timeout=HANG_GUARD_S,
        )
        assert imp.returncode == 2 and "Traceback" not in imp.stderr.decode()
        assert f"{path}: {message}" in imp.stderr.decode()


def test_deep_tool_arguments_in_json_text_are_refused_by_field(monitor, tmp_path):
    doc = json.loads((FIXTURES / "atif" / "good" / "v14_labelled.json").read_text())
    doc["steps"][2]["tool_calls"][0]["arguments"] = '{"a": ' + "[" * 1010 + "]" * 1010 + "}"
    path = tmp_path / "atif.json"
    path.write_text(json.dumps(doc))
    proc = score_cli("--monitor", monitor, str(path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr.decode()
    assert skipped(proc) == [
        f"skipped {path}: steps[2].tool_calls[0].arguments: expected JSON nested at most "
        "100 levels deep, got deeper nesting"
    ]


# --------------------------------------------------------------------------- stdin


class _Endless(io.RawIOBase):
    """An endless stream of one JSON document's bytes, counting what was read of it."""

    def __init__(self) -> None:
        self.read_so_far = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        n = len(buf)
        buf[:n] = (b'{"pad": [' + b"1," * n)[:n]
        self.read_so_far += n
        return n


def test_stdin_is_read_under_the_cap_and_refused_past_it():
    from monsearch.api.score_inputs import read_stdin

    stream = _Endless()
    [(name, err)] = list(read_stdin(max_bytes=100_000, stream=stream))  # type: ignore[arg-type]
    assert name == "-" and stream.read_so_far == 100_001
    assert str(err) == (
        "-: expected a document of at most 100000 bytes (or JSONL lines of at most that), got more"
    )


def test_stdin_over_the_cap_as_one_document_or_as_jsonl(monitor):
    one = json.dumps(document([step(i, "id", "x" * 1000) for i in range(3000)]), indent=1)
    assert len(one) > 2 * 1024 * 1024
    proc = score_cli("--monitor", monitor, "-", "--max-mb", "1", stdin=one.encode())
    assert proc.returncode == 2 and proc.stdout == b""
    assert skipped(proc) == [
        "skipped -: expected a document of at most 1048576 bytes (or JSONL lines of at most "
        "that), got more"
    ]
    # JSONL past the cap as a whole, each line under it: streamed, every line scored.
    line = json.dumps(document([step(0, "id", "x" * 100_000)])) + "\n"
    lines = line * 30
    proc = score_cli("--monitor", monitor, "-", "--max-mb", "1", "--json", stdin=lines.encode())
    assert proc.returncode == 0, proc.stderr.decode()
    records = [json.loads(r) for r in proc.stdout.decode().splitlines()]
    assert [r["input"] for r in records] == [f"-:{i}" for i in range(1, 31)]


# --------------------------------------------------------------------------- files


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifos_are_refused_without_being_opened(monitor, plugin, tmp_path):
    runs = tmp_path / "runs" / "sub"
    runs.mkdir(parents=True)
    fifo = runs / "trajectory.atif.json"
    os.mkfifo(fifo)
    (runs / "good.json").write_bytes(GOOD.read_bytes())
    message = "expected a regular file, got a FIFO (named pipe)"
    for arg in (str(fifo), str(tmp_path / "runs"), str(tmp_path / "runs" / "*" / "*.json")):
        proc = score_cli("--monitor", monitor, arg, "--json")
        assert proc.returncode == 2
        assert skipped(proc) == [f"skipped {fifo}: {message}"]
    # The plugin's own reader too (it used to wait for a writer forever).
    code = (
        f"import sys; sys.path.insert(0, {str(Path(plugin.__file__).parent.parent)!r})\n"
        f"import {plugin.__name__} as p\n"
        f"try:\n    p.load({str(fifo)!r})\nexcept p.InputError as e:\n    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, timeout=HANG_GUARD_S, check=True
    )
    assert out.stdout.decode().strip() == f"{fifo}: {message}"


def test_a_glob_over_link_loops_ends(monitor, tmp_path):
    tree = tmp_path / "tree"
    (tree / "a").mkdir(parents=True)
    (tree / "a" / "run.json").write_bytes(GOOD.read_bytes())
    # Two loops: the standard library's ** would walk 2**40 paths.
    (tree / "a" / "up").symlink_to("..")
    (tree / "a" / "self").symlink_to(".")
    proc = score_cli("--monitor", monitor, str(tree / "**" / "*.json"), "--json")
    assert proc.returncode == 0, proc.stderr.decode()
    assert [json.loads(r)["input"] for r in proc.stdout.decode().splitlines()] == [
        str(tree / "a" / "run.json")
    ]


def test_safe_glob_matches_glob_where_no_link_loops():
    import glob

    from monsearch.api.safe_glob import GlobTooLargeError, safe_glob

    root = FIXTURES
    patterns = ["**/*.json", "**", "*", "*/**/*.jsonl", "**/", "atif/*/", "**/.*", "[as]*/**"]
    cwd = os.getcwd()
    try:
        os.chdir(root)
        for pattern in patterns + [str(root / "**" / "*.json")]:
            assert safe_glob(pattern) == sorted(glob.glob(pattern, recursive=True)), pattern
        with pytest.raises(GlobTooLargeError):
            safe_glob("**/*.json", max_folders=3)
    finally:
        os.chdir(cwd)


def test_names_and_texts_cannot_forge_lines_or_reach_the_terminal(monitor, tmp_path):
    evil = "run\nskipped fake.json: forged\x1b[2J\x1b]0;title\x07.json"
    bad = tmp_path / evil
    bad.write_text("{")
    good = tmp_path / ("good\x1b[31m\u202e.json")
    doc = json.loads(GOOD.read_text())
    # What a model wrote reaches the findings: a file it wrote, named with escape codes.
    doc["steps"][0]["input"]["command"] = "echo 'x' > '/tmp/\x1b[31mred\nnext'"
    good.write_text(json.dumps(doc))
    proc = score_cli("--monitor", monitor, str(bad), str(good), "--top", "50")
    assert proc.returncode == 2
    err, out = proc.stderr.decode(), proc.stdout.decode()
    assert "\x1b" not in err + out and "\x07" not in err + out and "\u202e" not in out
    shown = str(bad).replace("\n", "\\n").replace("\x1b", "\\x1b").replace("\x07", "\\x07")
    assert skipped(proc) == [
        f"skipped {shown}: expected valid JSON, got truncated JSON (unexpected end of data) "
        "at line 1, column 2"
    ]
    assert "good\\x1b[31m\\u202e.json" in out.replace("\n", "").replace(" ", "")
    # JSON output names the files exactly (JSON-escaped).
    proc = score_cli("--monitor", monitor, str(bad), str(good), "--json")
    assert [json.loads(r)["input"] for r in proc.stdout.decode().splitlines()] == [
        str(bad),
        str(good),
    ]


def test_a_name_that_is_not_utf8_is_printed_escaped(monitor, tmp_path):
    if sys.platform == "darwin":
        pytest.skip("the file system refuses names that are not UTF-8")
    raw = os.fsencode(str(tmp_path)) + b"/run\xff.json"
    with open(raw, "wb") as fh:
        fh.write(b"[]")
    proc = score_cli("--monitor", monitor, str(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr.decode()
    assert skipped(proc)[0].startswith(f"skipped {tmp_path}/run\\xff.json: ")


# --------------------------------------------------------------------------- sizes

#: Peak memory a score of one hostile trajectory may reach (the issue's target).
MEMORY_MB = 500
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


def measured_score(*args: str) -> tuple[subprocess.CompletedProcess, int]:
    proc = subprocess.run(
        [sys.executable, "-c", _MEASURED, "score", *args],
        capture_output=True,
        check=False,
        timeout=HANG_GUARD_S,
    )
    lines = [ln for ln in proc.stderr.decode().splitlines() if ln.startswith("peak-mb ")]
    return proc, int(lines[-1].split()[1])


@pytest.mark.parametrize("shape", sorted(__import__("hostile_shapes").SHAPES))
def test_every_shape_of_ten_megabytes_scores_with_findings_in_bounded_memory(
    monitor, tmp_path, shape
):
    """Each way of filling 10 MB scores, with its findings, under the hang guard and in
    less than 500 MB (timings are in bench/hostile_inputs.py: about a second each)."""
    from hostile_shapes import sized

    path = tmp_path / f"{shape}.json"
    path.write_bytes(sized(shape, 10 * 1024 * 1024))
    proc, peak = measured_score("--monitor", monitor, str(path), "--json", "--top", "3")
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    [record] = [json.loads(r) for r in proc.stdout.decode().splitlines()]
    assert record["input"] == str(path)
    assert peak < MEMORY_MB, peak


def test_findings_of_8000_cheap_steps_search_a_bounded_number_of_prefixes(monitor, tmp_path):
    """The issue's 8,000 cheap steps (1 MB) with --top 3 took over a minute: every
    prefix was scored. The search finds the same top steps in a bounded number."""
    from hostile_shapes import cheap_steps, encoded

    from monsearch.export.plugin._rises import BUDGET, CALL_COST

    doc = cheap_steps(1_170_000)
    assert len(doc["steps"]) >= 8000
    path = tmp_path / "cheap.json"
    path.write_bytes(encoded(doc))
    proc = score_cli("--monitor", monitor, str(path), "--json", "--top", "3")
    assert proc.returncode == 0, proc.stderr.decode()
    [record] = [json.loads(r) for r in proc.stdout.decode().splitlines()]
    # The seed monitor's noise detector rises from the 41st request on, by less each time.
    assert [f["step"] for f in record["findings"]] == [40, 41, 42]
    partial = record["findings_partial"]
    assert partial["prefixes"] == len(doc["steps"]) + 1
    assert partial["prefixes_scored"] <= BUDGET // CALL_COST
    # The table says how much was searched.
    proc = score_cli("--monitor", monitor, str(path), "--top", "3")
    table = " ".join(proc.stdout.decode().split())
    assert f"(searched {partial['prefixes_scored']} of {partial['prefixes']} prefixes" in table


def test_findings_of_real_runs_are_those_of_every_prefix(plugin, tmp_path_factory):
    """On the val runs, findings() gives what scoring every prefix with built views gave
    (the code before the search and the derived prefix views)."""
    core = sys.modules[plugin.__name__ + ".core"]
    val = shared_setup(tmp_path_factory)["val"]
    compared = 0
    for traj in list(val)[:80]:
        t = plugin.load(traj)
        hook = core._OracleHook(None, core._cap())
        fn = core._instance(hook)
        try:
            full = core.build_view(t)
            core._run(fn, full, hook, t)
            prefix = [
                core._run(fn, core.build_view(core._prefix(t, k)), hook, t).score
                for k in range(len(t.steps) + 1)
            ]
        finally:
            core._discard(fn)
        expected = sorted(
            (
                (k - 1, prefix[k] - prefix[k - 1])
                for k in range(1, len(prefix))
                if prefix[k] > prefix[k - 1]
            ),
            key=lambda x: (-x[1], x[0]),
        )[:10]
        got = plugin.findings(t, top=10)
        assert "partial" not in got
        assert [(f["step"], f["delta"]) for f in got["steps"]] == expected
        compared += bool(expected)
    assert compared > 10


def test_a_five_megabyte_output_of_secret_tokens_classifies_a_bounded_number(plugin):
    """The issue's 160k secret-shaped tokens in one 5 MB output (over a minute even with
    --top 0): the scan looks at SCAN_WORDS words, the known-value search is bounded."""
    from hostile_shapes import secret_tokens

    vendored = sys.modules[plugin.__name__ + "._vendor.secrets"]
    view = sys.modules[plugin.__name__ + "._vendor.view"]
    plugin.clear_caches()
    doc = secret_tokens(5_000_000)
    assert len(doc["steps"][0]["output"].split()) >= 150_000
    result = plugin.evaluate(doc)
    found = plugin.findings(doc, top=3)
    assert result.error is None and found["score"] == result.score
    assert vendored.word_findings.cache_info().misses <= 2 * (view.SCAN_WORDS + 10)


def test_a_run_of_too_many_steps_is_refused_by_score_and_import(monitor, tmp_path):
    """10 MB of empty steps is 700,000 of them: their views alone took 790 MB. Score and
    import refuse more than MAX_STEPS, in one line, before reading the steps."""
    from hostile_shapes import document

    from monsearch.corpora.readers.jsonio import MAX_STEPS

    path = tmp_path / "empty-steps.json"
    n = MAX_STEPS + 1
    path.write_text(json.dumps(document([{"tool": "x"}] * n), separators=(",", ":")))
    message = f"steps: expected at most {MAX_STEPS} steps, got {n}"
    proc, peak = measured_score("--monitor", monitor, str(path))
    assert proc.returncode == 2 and skipped(proc) == [f"skipped {path}: {message}"]
    assert peak < MEMORY_MB
    imp = subprocess.run(
        [sys.executable, "-m", "monsearch", "corpus", "import", str(path)]
        + ["--format", "stealthbench", "--out", str(tmp_path / "corpus")],
        capture_output=True,
        check=False,
        timeout=HANG_GUARD_S,
    )
    assert imp.returncode == 2 and f"{path}: {message}" in imp.stderr.decode()


def test_a_steps_evidence_is_bounded(plugin):
    """A step of 30,000 secret findings in megabytes of output: its evidence lists 50
    of each kind, counts the rest, and looks for spans in the first megabyte only."""
    from hostile_shapes import secret_tokens

    core = sys.modules[plugin.__name__ + ".core"]
    view = core.build_view(plugin.load(secret_tokens(5_000_000)))
    step = view["steps"][0]
    evidence, more = sys.modules[plugin.__name__ + "._evidence"].step_evidence(step)
    assert len(step["secrets"]) > 20_000
    assert len(evidence) == 50 and more == len(step["secrets"]) - 50
    assert evidence[0]["span"] == [0, len(step["secrets"][0]["value"])]
