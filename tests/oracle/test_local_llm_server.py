"""``monsearch llm serve`` and :class:`LocalServer` against stand-in servers.

The stand-in (``fake_llama_server``) is started by the real command line through
``python -m llama_cpp.server``; what it does is picked per test (serve, die of
SIGILL on the first completion, sleep in the model load, ignore SIGTERM, print
control sequences). The tests wait on the files it writes (its pid, "loading"),
never on a clock: every deadline below is a hang guard.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fake_llama_server import install
from llm_stub_server import StubLLMServer
from paths import TESTS

from monsearch.local_llm.processes import group_members
from monsearch.local_llm.server import (
    LocalServer,
    PortTaken,
    ServerDied,
    describe_exit,
    free_port,
)

GUARD_S = 180.0


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """Environment for a stand-in server: returns (env, state folder); the tests in
    this process see it through ``os.environ`` too."""
    state = tmp_path / "state"
    state.mkdir()
    root = install(tmp_path / "fake")
    path = os.pathsep.join([str(root), str(TESTS)])
    monkeypatch.setenv("PYTHONPATH", path)
    monkeypatch.setenv("FAKE_LLAMA_STATE", str(state))
    monkeypatch.setenv("FAKE_LLAMA_MODE", "ok")
    monkeypatch.delenv("MONSEARCH_LLAMA_PYTHON", raising=False)
    yield state
    # A failing test must not leave its stand-in behind (what serve should have done).
    if (state / "pid").exists():
        pid = int((state / "pid").read_text())
        with contextlib.suppress(OSError):
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)


@pytest.fixture
def model(tmp_path) -> Path:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF")
    return path


def _wait_for(path: Path) -> str:
    end = time.monotonic() + GUARD_S
    while not path.exists():
        assert time.monotonic() < end, f"{path.name} never appeared"
        time.sleep(0.05)
    return path.read_text()


def _alive(pid: int) -> bool:
    """A process that still runs (a zombie waiting for its parent does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def _gone(*pids: int) -> bool:
    end = time.monotonic() + GUARD_S
    while any(_alive(p) for p in pids):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def _lines(proc: subprocess.Popen[str], n: int) -> list[str]:
    """The next ``n`` lines of ``proc``'s stdout; a test fails (not hangs) on fewer."""
    got: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for _ in range(n):
            got.put(proc.stdout.readline())

    threading.Thread(target=read, daemon=True).start()
    try:
        return [got.get(timeout=GUARD_S) for _ in range(n)]
    except queue.Empty:
        raise AssertionError(f"fewer than {n} lines on stdout") from None


def _serve(*args: str, python: str = sys.executable) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "monsearch", "llm", "serve", "--python", python, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# --------------------------------------------------------------------------- library


def test_ready_only_after_a_completion_and_stopped_with_its_group(fake, model, monkeypatch):
    monkeypatch.setenv("FAKE_LLAMA_MODE", "child")
    server = LocalServer(model, "tiny", log_path=fake / "log")
    with server:
        assert server.owns_port() is True
        pid, child = server.process.pid, int(_wait_for(fake / "child"))
        assert _alive(child)
    assert _gone(pid, child)
    assert not group_members(pid)


def test_a_server_that_dies_on_its_first_completion_says_why(fake, model, monkeypatch):
    monkeypatch.setenv("FAKE_LLAMA_MODE", "sigill")
    server = LocalServer(model, "tiny", log_path=fake / "log")
    with pytest.raises(ServerDied) as caught:
        server.start(timeout_s=GUARD_S)
    message = str(caught.value)
    assert "died of SIGILL" in message and "on its first completion" in message
    assert "AMX" in message and "monsearch llm install" in message
    assert "\n" not in message
    assert server.process.returncode == -signal.SIGILL


def test_a_foreign_server_on_the_port_is_refused_before_starting(fake, model):
    foreign = StubLLMServer(models=("tiny",)).start()  # answers /v1/models like ours would
    try:
        port = int(foreign.base_url.rsplit(":", 1)[1].split("/")[0])
        server = LocalServer(model, "tiny", port=port, log_path=fake / "log")
        with pytest.raises(PortTaken, match=f"port {port} .* in use by another process"):
            server.start(timeout_s=GUARD_S)
        assert server.process is None
        assert not (fake / "pid").exists()  # nothing was started
    finally:
        foreign.stop()


def test_a_port_taken_after_the_check_is_found_by_its_owner(fake, model, monkeypatch):
    """The race the first check cannot close: a server of someone else takes the port
    between the check and the bind. Ours fails to bind (or never binds); the port is
    answered by a socket outside our process group, which is refused."""
    monkeypatch.setenv("FAKE_LLAMA_MODE", "load")  # ours never binds
    foreign = StubLLMServer(models=("tiny",)).start()
    port = int(foreign.base_url.rsplit(":", 1)[1].split("/")[0])

    class Racing(LocalServer):
        def check(self) -> None:  # the port was free when checked
            pass

    server = Racing(model, "tiny", port=port, log_path=fake / "log")
    try:
        with pytest.raises(PortTaken, match="another process"):
            server.start(timeout_s=GUARD_S)
        # Stopped, with its group (it may be refused before it even wrote its pid).
        assert server.process.poll() is not None and _gone(server.process.pid)
        assert not group_members(server.process.pid)
    finally:
        foreign.stop()


def test_describe_exit_names_signals_from_either_form():
    assert "SIGILL" in describe_exit(-4) and "illegal instruction" in describe_exit(-4)
    assert "SIGILL" in describe_exit(132)  # as a shell reports it
    assert "out-of-memory" in describe_exit(-9)
    assert describe_exit(3) == "exited with code 3"


# --------------------------------------------------------------------------- command


def test_serve_answers_and_prints_what_to_use(fake, model):
    proc = _serve("--model", str(model), "--alias", "tiny", "--log", str(fake / "log"))
    try:
        first, use, command, options = _lines(proc, 4)
        assert first.startswith("serving tiny at http://127.0.0.1:")
        assert use == "use it with:\n"
        assert "--proposer offline:0.7,llm:0.3" in command
        assert "--llm-model tiny" in options
        pid = int((fake / "pid").read_text())
        proc.send_signal(signal.SIGHUP)  # the terminal closed
        _, err = proc.communicate(timeout=GUARD_S)
    finally:
        proc.kill()
    assert proc.returncode == 0 and "stopped (SIGHUP)" in err
    assert _gone(pid)


@pytest.mark.parametrize(("mode", "sig"), [("load", signal.SIGTERM), ("load", signal.SIGHUP),
                                           ("stubborn", signal.SIGTERM)])  # fmt: skip
def test_serve_stops_while_the_model_loads(fake, model, monkeypatch, mode, sig):
    """SIGTERM and SIGHUP end the start-up at once, and the server's whole group with
    it, even one that ignores SIGTERM (SIGKILL after the grace period)."""
    monkeypatch.setenv("FAKE_LLAMA_MODE", mode)
    proc = _serve("--model", str(model), "--log", str(fake / "log"))
    try:
        _wait_for(fake / "loading")
        pid = int((fake / "pid").read_text())
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=GUARD_S)
    finally:
        proc.kill()
    assert proc.returncode == 128 + sig, err
    assert f"stopped ({sig.name}) before the server was ready" in err
    assert "Traceback" not in err and out == ""
    assert _gone(pid) and not group_members(pid)


def test_serve_refuses_a_missing_model_before_any_start_line(fake, tmp_path):
    proc = _serve("--model", str(tmp_path / "none.gguf"))
    out, err = proc.communicate(timeout=GUARD_S)
    assert proc.returncode == 2
    assert err.strip().splitlines() == [f"error: no model file at {tmp_path / 'none.gguf'}"]
    assert out == "" and not (fake / "pid").exists()


def test_serve_refuses_a_port_in_use_in_one_line(fake, model):
    foreign = StubLLMServer(models=("tiny",)).start()
    port = foreign.base_url.rsplit(":", 1)[1].split("/")[0]
    try:
        proc = _serve("--model", str(model), "--port", port)
        out, err = proc.communicate(timeout=GUARD_S)
    finally:
        foreign.stop()
    assert proc.returncode == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"port {port} on 127.0.0.1 is already in use" in lines[0]
    assert not (fake / "pid").exists()


def test_serve_refuses_a_python_without_llama_cpp_before_starting(model, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = subprocess.run([sys.executable, "-c", "import llama_cpp"], env=env, check=False,
                           capture_output=True)  # fmt: skip
    if probe.returncode == 0:
        pytest.skip("llama-cpp-python is installed here: this checks its absence")
    proc = subprocess.run(
        [sys.executable, "-m", "monsearch", "llm", "serve", "--model", str(model)],
        capture_output=True, text=True, env=env, timeout=GUARD_S,
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "monsearch llm install" in proc.stderr
    assert "starting" not in proc.stderr


def test_a_dying_server_is_one_escaped_line(fake, model, monkeypatch):
    monkeypatch.setenv("FAKE_LLAMA_MODE", "noisy")
    proc = _serve("--model", str(model), "--alias", "\x1b[31mred\x1b[0m",
                  "--log", str(fake / "log"))  # fmt: skip
    out, err = proc.communicate(timeout=GUARD_S)
    assert proc.returncode == 1 and out == ""
    assert "\x1b" not in err and "\r" not in err and "\x07" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 2, lines  # the start line and the error
    assert lines[1].startswith("error: the llama.cpp server exited with code 3 while starting")
    assert "\\x1b]0;owned\\x07" in lines[1]


def test_serve_escapes_the_alias_it_prints(fake, model):
    proc = _serve("--model", str(model), "--alias", "a\x1b]0;t\x07b",
                  "--log", str(fake / "log"))  # fmt: skip
    try:
        lines = _lines(proc, 4)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=GUARD_S)
    finally:
        proc.kill()
    text = "".join(lines) + err
    assert "\x1b" not in text and "\x07" not in text
    assert "serving a\\x1b]0;t\\x07b at" in lines[0]
    assert proc.returncode == 0


def test_the_port_given_is_the_one_served(fake, model):
    port = free_port()
    server = LocalServer(model, "tiny", port=port, log_path=fake / "log")
    with server:
        assert server.base_url == f"http://127.0.0.1:{port}/v1"
        assert server.owns_port() is True


def test_a_log_that_cannot_be_written_is_one_line(fake, model, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    proc = _serve("--model", str(model), "--log", str(blocker / "log"))
    out, err = proc.communicate(timeout=GUARD_S)
    assert proc.returncode == 2 and out == "" and "Traceback" not in err
    (line,) = err.strip().splitlines()  # refused before the start line
    assert line.startswith("error: cannot write the server's log")
    assert not (fake / "pid").exists()
