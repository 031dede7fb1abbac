"""One writer per corpus folder, and the leftovers of killed writers cleaned up.

The writers that compete here are real processes: a helper process takes the
lock (and, like a writer mid-write, makes its temporary folder) and waits for
its stdin to close, so every test decides exactly when the lock is held,
released, or dropped by a ``kill -9``, without sleeping or timing anything.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import run_main
from store_factory import mixed_corpus

from monsearch.corpora import store
from monsearch.corpora.store import (
    CorpusBusyError,
    corpus_lock,
    load_corpus,
    lock_path,
    write_corpus,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="flock and pids are POSIX")

HOLDER = """
import shutil, sys, tempfile
from pathlib import Path
from monsearch.corpora.store import corpus_lock, _temp_prefix

out = Path(sys.argv[1])
with corpus_lock(out):
    tmp = tempfile.mkdtemp(prefix=_temp_prefix(out, "tmp"), dir=out.parent)
    print(tmp, flush=True)
    sys.stdin.read()
    shutil.rmtree(tmp)  # a writer that is not killed cleans up after itself
"""


class Holder:
    """A process that holds the writer lock of ``out`` until released or killed."""

    def __init__(self, out: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(out)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline()  # returns once the lock is held
        assert line, "the lock holder died before taking the lock"
        self.tmp = Path(line.strip())
        self.pid = self.proc.pid

    def release(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            assert self.proc.wait() == 0

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()  # reaped: the pid is gone, not a zombie
        self.proc.stdin.close()
        self.proc.stdout.close()


@pytest.fixture
def holders():
    started: list[Holder] = []

    def start(out: Path) -> Holder:
        h = Holder(out)
        started.append(h)
        return h

    yield start
    for h in started:
        if h.proc.poll() is None:
            h.kill()


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def siblings(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir())


# --------------------------------------------------------------------------- concurrent writers


def test_second_writer_is_refused_while_the_first_holds_the_lock(tmp_path, holders):
    out = tmp_path / "c"
    first = write_corpus(out, mixed_corpus(20), name="first")
    holder = holders(out)
    with pytest.raises(CorpusBusyError, match=f"another monsearch process \\(pid {holder.pid}\\)"):
        write_corpus(out, mixed_corpus(30), name="second")
    # The refused writer changed nothing and touched nothing of the first writer's.
    assert load_corpus(out).content_hash == first.content_hash
    assert holder.tmp.is_dir()
    holder.release()
    # Once the first writer is done, the lock file is gone and the next write goes through.
    assert siblings(out) == ["c"]
    second = write_corpus(out, mixed_corpus(30), name="second")
    assert load_corpus(out).content_hash == second.content_hash != first.content_hash
    assert siblings(out) == ["c"]


def test_cli_writer_refused_with_exit_2_and_one_line(tmp_path, holders, capsys):
    out = tmp_path / "c"
    holder = holders(out)
    code, stdout, err = run_main(
        capsys, "corpus", "synth", "--out", str(out), "--size", "20", "--quiet"
    )
    assert code == 2
    assert err.startswith("error: ") and err.count("\n") == 1
    assert str(out) in err and f"pid {holder.pid}" in err and "is writing this corpus" in err
    assert "Traceback" not in err and stdout == ""
    assert not out.exists()


def test_a_killed_writer_drops_its_lock_and_its_temp_is_removed(tmp_path, holders, capsys):
    out = tmp_path / "c"
    holder = holders(out)
    assert holder.tmp.name.startswith(f".c.tmp-{holder.pid}-")
    holder.kill()  # kill -9 mid-write: no cleanup ran
    assert holder.tmp.is_dir() and lock_path(out).exists()
    code, _, err = run_main(capsys, "corpus", "synth", "--out", str(out), "--size", "20", "--quiet")
    assert code == 0, err
    assert not holder.tmp.exists()
    assert f"removed {holder.tmp}" in err
    assert siblings(out) == ["c"]  # neither the temp, nor a lock file, is left
    assert len(load_corpus(out).trajectories()) == 20


def test_waiting_writer_goes_on_when_the_holder_is_done(tmp_path, holders):
    out = tmp_path / "c"
    holder = holders(out)
    waited: list[str] = []

    def on_wait(who: str) -> None:
        waited.append(who)
        holder.release()  # the first writer finishes while we wait

    with corpus_lock(out, wait=True, on_wait=on_wait):
        write_corpus(out, mixed_corpus(10), name="after")
    assert waited == [f"pid {holder.pid}"]
    assert load_corpus(out).name == "after"
    assert siblings(out) == ["c"]


def test_lock_is_reentrant_in_one_process_and_leaves_no_file(tmp_path):
    out = tmp_path / "c"
    with corpus_lock(out):
        assert lock_path(out).read_text().strip() == str(os.getpid())
        write_corpus(out, mixed_corpus(10), name="inner")  # takes the same lock again
        assert lock_path(out).exists()
    assert siblings(out) == ["c"]


# --------------------------------------------------------------------------- stale temporaries


def test_stale_temp_of_a_dead_writer_is_removed_and_a_live_ones_kept(tmp_path):
    out = tmp_path / "c"
    write_corpus(out, mixed_corpus(10), name="c")
    dead = tmp_path / f".c.tmp-{dead_pid()}-abc123"
    dead.mkdir()
    (dead / "all.jsonl.zst").write_bytes(b"half a corpus")
    unrelated = tmp_path / f".d.tmp-{dead_pid()}-abc123"  # another corpus's temp
    unrelated.mkdir()
    alive = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=-1)
    try:
        live = tmp_path / f".c.tmp-{alive.pid}-def456"
        live.mkdir()
        write_corpus(out, mixed_corpus(12), name="c")
        assert not dead.exists()
        assert live.is_dir()
        assert unrelated.is_dir()
    finally:
        alive.stdin.close()
        alive.wait()
    assert len(load_corpus(out).trajectories()) == 12


def test_temp_without_pid_from_an_older_monsearch_removed_only_when_old(tmp_path):
    out = tmp_path / "c"
    fresh = tmp_path / ".c.tmp-k3j2h1g0"
    old = tmp_path / ".c.tmp-a1b2c3d4"
    fresh.mkdir()
    old.mkdir()
    long_ago = os.stat(old).st_mtime - store.LEGACY_TEMP_MAX_AGE_S - 60
    os.utime(old, (long_ago, long_ago))
    write_corpus(out, mixed_corpus(10), name="c")
    assert fresh.is_dir() and not old.exists()


def test_backup_of_a_dead_writer_is_kept_while_it_is_the_only_copy(tmp_path):
    out = tmp_path / "c"
    write_corpus(out, mixed_corpus(10), name="old")
    # A writer killed between the two renames of a replace: the old corpus sits in
    # its backup folder and there is no corpus at ``out``.
    backup = tmp_path / f".c.old-{dead_pid()}-zz9"
    os.rename(out, backup)
    assert store.remove_stale_temporaries(out) == []
    assert backup.is_dir()
    # Once a corpus is back at ``out``, the backup is a leftover like any other.
    write_corpus(out, mixed_corpus(12), name="new")
    assert not backup.exists()


def test_pid_alive():
    assert store.pid_alive(os.getpid())
    assert not store.pid_alive(dead_pid())
    assert not store.pid_alive(0) and not store.pid_alive(-1)
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        os.waitid(os.P_PID, zombie.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped
        if Path(f"/proc/{zombie.pid}/stat").exists():
            assert not store.pid_alive(zombie.pid)
    finally:
        zombie.wait()
