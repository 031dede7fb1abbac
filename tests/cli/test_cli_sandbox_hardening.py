"""``monsearch sandbox run`` refuses bad outputs, bad programs and dead judges before any work,
keeps the judge's failures apart from the program's, and logs its start-up on stderr."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from openai_stub_server import StubJudgeServer

from monsearch.cli import cli, main
from monsearch.corpora.store import load_corpus
from monsearch.sandbox.examples.seed_monitor import SEED_MONITOR
from monsearch.synth.generate import synthesize_corpus

ORACLE_PROGRAM = """
def score(traj):
    value = oracle(traj)
    return 0.0 if value is None else value
"""


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("corpus") / "c"
    synthesize_corpus(out, seed=5, size=200)
    return out


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MONSEARCH_CACHE", str(tmp_path / "monsearch-cache"))
    monkeypatch.setenv("MONSEARCH_JUDGE_API_KEY", "test-key")


@pytest.fixture
def oracle_program(tmp_path: Path) -> Path:
    prog = tmp_path / "oracle.py"
    prog.write_text(ORACLE_PROGRAM)
    return prog


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Through the real entry point, which turns MonsearchError into exit code 2."""
    with pytest.raises(SystemExit) as exc:
        main(["sandbox", "run", *args])
    out, err = capsys.readouterr()
    code = exc.value.code
    return (0 if code is None else code), out, err


def invoke(*args: str):
    return CliRunner().invoke(cli, ["sandbox", "run", *args], catch_exceptions=False)


def run_llm(capsys, program, corpus_dir, url, cache):
    """``sandbox run PROGRAM --corpus DIR`` with the llm oracle at ``url``, cache ``cache``."""
    return run_main(capsys, str(program), "--corpus", str(corpus_dir), *llm_args(url, cache))


def llm_args(base_url: str, cache: Path) -> list[str]:
    return [
        "--oracle",
        "llm",
        "--judge-model",
        "stub-judge",
        "--judge-base-url",
        base_url,
        "--oracle-cache",
        str(cache),
    ]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- outputs are checked before any work -------------------------------------------


def test_scores_out_under_a_file_is_refused_before_any_work(capsys, corpus_dir, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    target = blocker / "scores.jsonl"
    code, out, err = run_main(capsys, "--corpus", str(corpus_dir), "--scores-out", str(target))
    assert code == 2 and out == ""
    assert f"cannot write scores file {target}" in err and "is a file, not a folder" in err
    assert "Traceback" not in err
    assert "loading corpus" not in err and "scoring" not in err  # refused first


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write into read-only folders")
def test_scores_out_in_a_read_only_folder_is_refused(capsys, corpus_dir, tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        code, _, err = run_main(
            capsys, "--corpus", str(corpus_dir), "--scores-out", str(folder / "s.jsonl")
        )
    finally:
        folder.chmod(0o755)
    assert code == 2 and "cannot write scores file" in err and "scoring" not in err


def test_scores_out_into_a_missing_folder_creates_it(corpus_dir, tmp_path):
    target = tmp_path / "new" / "deeper" / "scores.jsonl"
    result = invoke("--corpus", str(corpus_dir), "--workers", "1", "--scores-out", str(target))
    assert result.exit_code == 0, result.output
    n_val = len(load_corpus(corpus_dir, ["val"]).split("val"))
    assert len(target.read_text().splitlines()) == n_val


def test_oracle_cache_under_a_file_is_refused_naming_the_path(
    capsys, corpus_dir, tmp_path, oracle_program
):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with StubJudgeServer() as stub:
        code, out, err = run_llm(
            capsys, oracle_program, corpus_dir, stub.base_url, blocker / "cache"
        )
        assert stub.chat_count == 0
    assert code == 2 and out == ""
    assert f"cannot write oracle cache folder {blocker / 'cache'}" in err
    assert "NotADirectoryError" not in err and "scoring" not in err


def test_an_oracle_cache_that_is_not_a_database_is_refused(
    capsys, corpus_dir, tmp_path, oracle_program
):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "oracle-cache.sqlite3").write_text("garbage " * 200)
    with StubJudgeServer() as stub:
        code, _, err = run_llm(capsys, oracle_program, corpus_dir, stub.base_url, cache)
    assert code == 2 and "cannot open the oracle cache" in err and "not a database" in err


# -- the judge is probed before scoring ---------------------------------------------


def test_dead_endpoint_is_exit_2_quickly_naming_the_endpoint(
    capsys, corpus_dir, tmp_path, oracle_program
):
    url = f"http://127.0.0.1:{free_port()}/v1"
    started = time.monotonic()
    code, out, err = run_llm(capsys, oracle_program, corpus_dir, url, tmp_path / "cache")
    elapsed = time.monotonic() - started
    assert code == 2 and out == ""
    assert f"connection refused at {url}" in err
    assert "wall-clock" not in err and "scoring" not in err
    assert elapsed < 20  # it used to burn the 60 s wall-clock limit, then blame the program


def test_a_refused_api_key_is_exit_2(capsys, corpus_dir, tmp_path, oracle_program):
    with StubJudgeServer(api_key="another-key") as stub:
        url = stub.base_url
        code, _, err = run_llm(
            capsys, oracle_program, corpus_dir, stub.base_url, tmp_path / "cache"
        )
        assert stub.chat_count == 0
    assert code == 2 and f"the judge at {url} refused the API key: HTTP 401" in err


# -- judge failures during scoring are the judge's ------------------------------------


def test_a_judge_failing_mid_run_is_reported_as_judge_failures(
    corpus_dir, tmp_path, oracle_program
):
    with StubJudgeServer() as stub:
        url = stub.base_url
        stub.script("ok", "ok", "ok", "status:400")
        result = invoke(
            str(oracle_program),
            "--corpus",
            str(corpus_dir),
            "--workers",
            "1",
            "--json",
            *llm_args(stub.base_url, tmp_path / "cache-json"),
        )
        assert result.exit_code == 1
        report = json.loads(result.stdout)
        assert report["status"] == "oracle_error"
        assert "the program is not to blame" in report["message"]
        assert report["judge_errors"] == 1
        assert f"{stub.base_url} refused the request: HTTP 400" in report["judge_error"]
        # The program's own errors are a different field, and there are none.
        assert report["n_errors"] == 0 and report["errors"] == []

        stub.script("ok", "status:400")
        result = invoke(
            str(oracle_program),
            "--corpus",
            str(corpus_dir),
            "--workers",
            "1",
            *llm_args(stub.base_url, tmp_path / "cache-text"),
        )
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert any(line.startswith("status oracle_error") for line in lines)
    assert any("program errors 0" in line for line in lines)
    judge_line = next(line for line in lines if line.startswith("judge failures"))
    assert judge_line.startswith("judge failures 1 (the judge's, not the program's)")
    assert url in judge_line


def test_oracle_none_says_no_oracle(corpus_dir, oracle_program):
    result = invoke(
        str(oracle_program), "--corpus", str(corpus_dir), "--workers", "1", "--oracle", "none"
    )
    assert result.exit_code == 0, result.output
    n_val = len(load_corpus(corpus_dir, ["val"]).split("val"))
    assert f"oracle: none (no oracle; oracle(traj) answered None to {n_val} call(s))" in (
        result.stdout
    )
    assert "refused past the cap" not in result.stdout
    result = invoke(
        str(oracle_program),
        "--corpus",
        str(corpus_dir),
        "--workers",
        "1",
        "--oracle",
        "none",
        "--json",
    )
    oracle = json.loads(result.stdout)["oracle"]
    assert oracle["no_oracle"] is True and oracle["no_oracle_calls"] == n_val
    assert oracle["refused"] == {} and sum(oracle["counts"].values()) == 0


# -- the program is checked before any corpus or worker --------------------------------


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("def score(traj)\n    return 1.0\n", ":1:16: SyntaxError"),
        ("", ":1:1: the program is empty"),
        ("def score(traj, extra):\n    return 1.0\n", ":1:17: score needs 2 arguments"),
        ('PARAMS = {"w": "high"}\ndef score(t):\n    return 1.0\n', ":1:16: PARAMS['w']"),
    ],
)
def test_a_program_failing_the_check_is_refused_before_the_corpus_loads(tmp_path, source, fragment):
    prog = tmp_path / "p.py"
    prog.write_text(source)
    # The corpus does not even exist: the program is refused before it is looked at.
    result = invoke(str(prog), "--corpus", str(tmp_path / "no-corpus-here"))
    assert result.exit_code == 1
    assert f"{prog}{fragment}" in result.stdout
    assert "nothing was scored" in result.stdout
    assert "loading corpus" not in result.stderr and "starting" not in result.stderr
    result = invoke(str(prog), "--corpus", str(tmp_path / "no-corpus-here"), "--json")
    report = json.loads(result.stdout)
    assert result.exit_code == 1 and report["status"] == "error" and report["corpus"] is None
    assert report["errors"][0]["line"] == int(fragment.split(":")[1])


# -- start-up on stderr, the result alone on stdout --------------------------------------


def test_start_up_stages_are_logged_on_stderr_and_stdout_is_pure_json(corpus_dir):
    n_val = len(load_corpus(corpus_dir, ["val"]).split("val"))
    result = invoke("--corpus", str(corpus_dir), "--workers", "1", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)  # nothing else on stdout
    assert report["status"] == "ok"
    log = result.stderr.splitlines()
    assert log[0].startswith(f"loading corpus {corpus_dir}")
    assert f"starting 1 worker over {n_val} trajectories" in log
    assert f"scoring {n_val} trajectories" in log
    assert log.index(f"scoring {n_val} trajectories") == len(log) - 1
    first_build = [line for line in log if line.startswith("building views")]
    assert first_build == [f"building views of {n_val} trajectories (once; cached for later runs)"]
    # Views are cached: a second run does not build them again.
    again = invoke("--corpus", str(corpus_dir), "--workers", "1", "--json")
    assert not any(line.startswith("building views") for line in again.stderr.splitlines())


def test_more_workers_than_cores_gets_a_warning(corpus_dir, monkeypatch):
    import monsearch.commands.sandbox as sandbox_cmd

    monkeypatch.setattr(sandbox_cmd, "available_cores", lambda: 1)
    result = invoke("--corpus", str(corpus_dir), "--workers", "2", "--json")
    assert result.exit_code == 0, result.output
    assert "warning: --workers 2 is more than the 1 core(s)" in result.stderr
    assert json.loads(result.stdout)["status"] == "ok"
    quiet = invoke("--corpus", str(corpus_dir), "--workers", "1", "--json")
    assert "warning" not in quiet.stderr


# -- the seed monitor, to copy --------------------------------------------------------------


def test_seed_prints_the_built_in_monitor_which_passes_check(tmp_path):
    result = CliRunner().invoke(cli, ["sandbox", "seed"])
    assert result.exit_code == 0
    assert result.stdout == SEED_MONITOR.strip("\n") + "\n"
    copy = tmp_path / "my_monitor.py"
    copy.write_text(result.stdout)
    checked = CliRunner().invoke(cli, ["sandbox", "check", str(copy), "--json"])
    assert checked.exit_code == 0
    assert json.loads(checked.stdout)["params"]["w_secret_stored"] == 4.0
