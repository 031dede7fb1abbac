"""Every corpus command that writes, pointed at outputs it cannot write.

Each must stop before doing any work, with one line ``error: ...`` that names the
path and the reason, and exit code 2: no traceback, no generation or import
first. The tests run the real entry point (``monsearch.cli.main``, or
``python -m monsearch`` in a child process where the child must not have
root's power to write anywhere).

"Before any work" is checked by making the work itself fail the test: the
generator and the readers are replaced by functions that raise.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import SB_RESULTS, WorkStarted, refuse_work, run_main

from monsearch.corpora.store import load_corpus
from monsearch.synth import generate as gen_mod


def assert_named_error(code: int, err: str, path: Path | str, *reason: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err
    assert err.startswith("error: ") and err.count("\n") == 1, err  # exactly one line
    assert str(path) in err, err
    for part in reason:
        assert part in err, err


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if a command generates or reads anything."""
    refuse_work(monkeypatch, "output")


@pytest.fixture
def a_file(tmp_path) -> Path:
    path = tmp_path / "plain-file"
    path.write_text("not a folder\n")
    return path


def _write_commands(out: Path) -> dict[str, list[str]]:
    return {
        "synth": ["corpus", "synth", "--out", str(out), "--size", "20", "--quiet"],
        "import": ["corpus", "import", str(SB_RESULTS), "--out", str(out), "--quiet"],
        "import-split": [
            "corpus",
            "import",
            str(SB_RESULTS),
            "--out",
            str(out),
            "--seed",
            "1",
            "--quiet",
        ],
    }


# --------------------------------------------------------------------------- --out under a file


@pytest.mark.parametrize("command", ["synth", "import", "import-split"])
def test_out_under_a_regular_file(command, a_file, no_work, capsys):
    out = a_file / "corpus"
    code, stdout, err = run_main(capsys, *_write_commands(out)[command])
    assert_named_error(code, err, out, f"{a_file} is a file, not a folder")
    assert stdout == ""


@pytest.mark.parametrize("command", ["synth", "import"])
def test_out_deep_under_a_regular_file(command, a_file, no_work, capsys):
    out = a_file / "a" / "b" / "corpus"
    code, _, err = run_main(capsys, *_write_commands(out)[command])
    assert_named_error(code, err, out, f"{a_file} is a file")


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
@pytest.mark.parametrize("command", ["synth", "import"])
def test_out_where_nothing_can_be_created(command, no_work, capsys):
    # /proc refuses new entries to everyone, root included.
    out = Path("/proc/monsearch-test-corpus")
    code, _, err = run_main(capsys, *_write_commands(out)[command])
    assert_named_error(code, err, out, "cannot create a folder in /proc")


@pytest.mark.parametrize("command", ["synth", "import"])
def test_out_is_a_folder_that_is_not_a_corpus(command, tmp_path, no_work, capsys):
    out = tmp_path / "notes"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    code, _, err = run_main(capsys, *_write_commands(out)[command])
    assert_named_error(code, err, out, "not a monsearch corpus; refusing to replace it")
    assert (out / "mine.txt").read_text() == "keep me"


def test_split_of_a_corpus_under_a_file_names_the_path(a_file, capsys):
    code, _, err = run_main(capsys, "corpus", "split", str(a_file / "c"), "--seed", "1")
    assert_named_error(code, err, a_file / "c", "no such corpus directory")


# --------------------------------------------------------------------------- read-only folders

PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER = 1, 2, 3


def _drop_root_file_powers() -> None:
    """In the child, before exec: root loses the capabilities that ignore permissions."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def run_cli_without_write_power(*args: str) -> subprocess.CompletedProcess:
    """``python -m monsearch ARGS`` in a process that permission bits apply to.

    As a normal user that is any process; as root (CI containers) the child drops
    the capabilities that let root write into a read-only folder.
    """
    preexec = _drop_root_file_powers if os.geteuid() == 0 else None
    env = {**os.environ, "COLUMNS": "200"}
    try:
        return subprocess.run(
            [sys.executable, "-m", "monsearch", *args],
            capture_output=True,
            text=True,
            preexec_fn=preexec,
            env=env,
            timeout=600,
        )
    except subprocess.SubprocessError as exc:
        if "preexec_fn" in str(exc) or isinstance(exc.__cause__, OSError):
            pytest.skip(f"cannot drop root's file capabilities here: {exc}")
        raise


@pytest.fixture
def read_only(tmp_path):
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    yield folder
    folder.chmod(0o755)


@pytest.mark.skipif(sys.platform != "linux", reason="capability dropping is Linux-only")
@pytest.mark.parametrize("command", ["synth", "import"])
def test_out_in_a_read_only_folder(command, read_only):
    out = read_only / "corpus"
    res = run_cli_without_write_power(*_write_commands(out)[command])
    assert_named_error(res.returncode, res.stderr, out, "permission denied", str(read_only))
    assert res.stdout == ""
    assert list(read_only.iterdir()) == []


@pytest.mark.skipif(sys.platform != "linux", reason="capability dropping is Linux-only")
def test_split_of_a_corpus_in_a_read_only_folder(tmp_path, capsys):
    folder = tmp_path / "shared"
    folder.mkdir()
    code, _, err = run_main(capsys, "corpus", "import", str(SB_RESULTS), "--out", str(folder / "c"))
    assert code == 0, err
    before = load_corpus(folder / "c").manifest
    folder.chmod(0o555)
    try:
        res = run_cli_without_write_power("corpus", "split", str(folder / "c"), "--seed", "1")
    finally:
        folder.chmod(0o755)
    assert_named_error(res.returncode, res.stderr, folder / "c", "permission denied")
    after = load_corpus(folder / "c").manifest
    assert after.assignment_hash == before.assignment_hash and not after.is_split
    assert sorted(p.name for p in folder.iterdir()) == ["c"]


# --------------------------------------------------------------------------- the cache


@pytest.fixture
def no_default_corpus(monkeypatch, no_work):
    """Commands that fall back on the default corpus must not find one built already."""
    monkeypatch.delenv("MONSEARCH_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)


CACHE_COMMANDS = {
    "stats": ["corpus", "stats"],
    "stats-json": ["corpus", "stats", "--json"],
    "show": ["corpus", "show"],
    "trajectory": ["corpus", "trajectory", "some-id"],
    "sandbox-view": ["sandbox", "view", "some-id"],
    "evolve": ["evolve", "--budget", "2", "--runs-dir", "/nonexistent-never-created"],
}


@pytest.mark.parametrize("command", sorted(CACHE_COMMANDS))
def test_monsearch_cache_is_a_file(command, a_file, no_default_corpus, monkeypatch, capsys):
    monkeypatch.setenv("MONSEARCH_CACHE", str(a_file))
    code, stdout, err = run_main(capsys, *CACHE_COMMANDS[command])
    assert_named_error(code, err, a_file, "is a file, not a folder", "MONSEARCH_CACHE")
    assert stdout == ""


def test_monsearch_cache_under_a_file(a_file, no_default_corpus, monkeypatch, capsys):
    monkeypatch.setenv("MONSEARCH_CACHE", str(a_file / "cache"))
    code, _, err = run_main(capsys, "corpus", "stats")
    assert_named_error(code, err, a_file / "cache", f"{a_file} is a file, not a folder")


@pytest.mark.skipif(sys.platform != "linux", reason="XDG_CACHE_HOME is the Linux cache setting")
def test_xdg_cache_home_is_a_file(a_file, no_default_corpus, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(a_file))
    code, _, err = run_main(capsys, "corpus", "show")
    assert_named_error(code, err, a_file, "is a file, not a folder")


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_monsearch_cache_where_nothing_can_be_created(no_default_corpus, monkeypatch, capsys):
    monkeypatch.setenv("MONSEARCH_CACHE", "/proc/monsearch-test-cache")
    code, _, err = run_main(capsys, "corpus", "stats")
    assert_named_error(code, err, "/proc/monsearch-test-cache", "cannot create a folder in /proc")


def test_a_writable_cache_is_still_used(tmp_path, monkeypatch, capsys):
    # The check does not get in the way: a default corpus already in the cache is
    # used as it is, not written again.
    monkeypatch.setenv("MONSEARCH_CACHE", str(tmp_path / "cache"))
    target = gen_mod.default_corpus_path(0)
    gen_mod.synthesize_corpus(target, seed=0, size=20)

    def refuse(*args, **kwargs):
        raise WorkStarted("rebuilt the cached corpus")

    monkeypatch.setattr(gen_mod, "synthesize_corpus", refuse)
    code, out, err = run_main(capsys, "corpus", "stats", "--json")
    assert code == 0, err
    assert '"content_hash"' in out


# --------------------------------------------------------------------------- the paths helper


def test_paths_helpers_name_the_path_and_reason(tmp_path, a_file):
    from monsearch.commands.paths import (
        UnwritablePathError,
        ensure_writable_dir,
        ensure_writable_file,
    )

    with pytest.raises(UnwritablePathError, match="it is a folder") as e:
        ensure_writable_file(tmp_path, "scores file")
    assert e.value.exit_code == 2 and str(tmp_path) in str(e.value)
    with pytest.raises(UnwritablePathError, match="it exists and is not a folder"):
        ensure_writable_dir(a_file, "corpus folder")
    with pytest.raises(UnwritablePathError, match=f"cannot write scores file {a_file}/x"):
        ensure_writable_file(a_file / "x", "scores file")
    with pytest.raises(UnwritablePathError, match="does not exist"):
        ensure_writable_file(tmp_path / "missing" / "scores.jsonl", "scores file", parents=False)
    # Fine: a new file in a new folder, an existing file (left as it was), a new folder.
    ensure_writable_file(tmp_path / "new" / "scores.jsonl", "scores file")
    ensure_writable_file(a_file, "scores file")
    ensure_writable_dir(tmp_path / "new" / "corpus", "corpus folder")
    assert a_file.read_text() == "not a folder\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain-file"]  # no probe left
