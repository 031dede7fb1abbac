"""Persistent worker processes that hold the views, and a fresh forked child per candidate.

Process layout (Linux only: fork, rlimits, ``prctl(PR_SET_PDEATHSIG)``)::

    host (SandboxPool, threads)  --pipes-->  worker  (python -m monsearch.sandbox.workers)
                                                |  builds the views ONCE, then per request:
                                                +--fork-->  child: rlimits, compile, score all, exit

* A worker is a fresh interpreter started with a scrubbed environment (no host
  secrets, ``PYTHONHASHSEED=0`` so set/dict iteration is the same in every worker
  and run) in an empty working directory. It loads the read-only views the host
  built once (:mod:`.view_cache`: a pickle file, host -> worker is the trusted
  direction), gives each view its pool-salted opaque id (:func:`.view_ids.view_id`),
  freezes them out of the GC's reach, and waits.
* For each candidate the worker forks a child. The child moves its result pipe to
  fd 3, points fds 0-2 at /dev/null, closes everything else, asks to die with the
  worker, sets its rlimits, then compiles and runs the program over every view and
  writes one result message (JSON header + raw doubles, size-capped) and
  ``os._exit``s: no finalizer of a sandbox object ever runs, and nothing the program
  did (poisoned globals, suspended generators, C-level crashes) outlives it.
* The worker enforces the wall clock (SIGKILL to the child's process group), reaps
  the child, classifies how it ended and answers the host. Nothing coming from a
  child is ever unpickled: JSON and doubles only, validated.
* The worker also watches each ``score()`` call from outside: the child writes which
  trajectory it is scoring and since when into a few bytes of memory shared with the
  worker (:data:`PROGRESS_SLOTS`); a call that overran its per-trajectory budget and
  did not stop within ``kill_grace_s`` (a program that swallows the interrupt, or a
  loop inside C code that never returns to the interpreter) gets the child SIGKILLed,
  status ``timeout`` naming the trajectory. The candidate's wall and CPU caps scale
  with the number of trajectories (:meth:`.SandboxLimits.caps_for`).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import math
import mmap
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import time
from array import array
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from monsearch.errors import MonsearchError
from monsearch.sandbox.limits import SandboxLimits, apply_child_limits
from monsearch.views.frozen import FrozenDict

_FRAME = struct.Struct(">Q")
_HEADER = struct.Struct(">I")
_MAGIC = b"MSR1"
MAX_REQUEST_BYTES = 16 * 1024 * 1024
MAX_REPLY_HEADER_BYTES = 16 * 1024 * 1024

#: Exit codes of a child that could not send a normal result.
EXIT_OK = 0
EXIT_MEMORY = 71
EXIT_INTERNAL = 70

_PR_SET_PDEATHSIG = 1
_RESULT_FD = 3
#: int64 slots shared between a worker and its child: phase, trajectory index, start
#: of the current call (ns), time spent waiting on the oracle's judge (ns).
PROGRESS_SLOTS = 4
#: Levels of view containers a worker re-allocates densely after loading them.
DEFAULT_COMPACT_DEPTH = 1
#: How often the worker looks at the child's progress while it waits for the result.
WATCH_INTERVAL_S = 0.05


class WorkerDied(MonsearchError):
    """The worker process ended or broke the protocol."""


class WorkerTimeout(MonsearchError):
    """The worker did not answer in time."""


# --------------------------------------------------------------------------- framing


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    """Read exactly ``n`` bytes; EOFError at end of stream, TimeoutError past ``deadline``."""
    chunks: list[bytes] = []
    remaining = n
    while remaining:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise TimeoutError
            ready, _w, _x = select.select([fd], [], [], wait)
            if not ready:
                raise TimeoutError
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def write_frame(fd: int, payload: bytes) -> None:
    write_all(fd, _FRAME.pack(len(payload)) + payload)


def read_frame(fd: int, deadline: float | None = None, max_bytes: int | None = None) -> bytes:
    (size,) = _FRAME.unpack(read_exact(fd, _FRAME.size, deadline))
    if max_bytes is not None and size > max_bytes:
        raise EOFError(f"frame of {size} bytes exceeds {max_bytes}")
    return read_exact(fd, size, deadline)


def pack_result(header: Mapping[str, Any], scores: bytes) -> bytes:
    """A result message: magic, header length, JSON header, raw float64 scores."""
    blob = json.dumps(header, allow_nan=False, separators=(",", ":")).encode("utf-8")
    return _MAGIC + _HEADER.pack(len(blob)) + blob + scores


def unpack_result(data: bytes, n: int) -> tuple[dict[str, Any], bytes]:
    """Parse and validate a result message; ValueError when it is malformed."""
    if len(data) < 8 or data[:4] != _MAGIC:
        raise ValueError("malformed result message")
    (size,) = _HEADER.unpack(data[4:8])
    if size > MAX_REPLY_HEADER_BYTES or 8 + size > len(data):
        raise ValueError("malformed result header")
    header = json.loads(data[8 : 8 + size])
    if not isinstance(header, dict):
        raise ValueError("result header is not an object")
    scores = data[8 + size :]
    if len(scores) not in (0, 8 * n):
        raise ValueError(f"result has {len(scores)} score bytes, expected {8 * n}")
    return header, scores


# --------------------------------------------------------------------------- child side


def _die_with_parent(parent: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the worker died before prctl took effect
        os._exit(EXIT_INTERNAL)


def _child_main(
    result_fd: int, request: Mapping[str, Any], state: WorkerState, parent: int
) -> None:
    """Runs in the forked child; never returns."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)  # its own group, so the worker can kill it with anything it spawned
    _die_with_parent(parent)
    if result_fd != _RESULT_FD:
        os.dup2(result_fd, _RESULT_FD)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(_RESULT_FD + 1, max(os.sysconf("SC_OPEN_MAX"), 1024))
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGXCPU, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    limits = state.limits
    apply_child_limits(limits, oracle_io=state.oracle_io, cpu_seconds=state.cpu_cap)
    # Imported lazily: runner pulls in RestrictedPython, which the worker preloads.
    from monsearch.sandbox.runner import run_program

    session = state.new_oracle_session()
    params = request.get("params") or None
    header, scores = run_program(
        state.views,
        state.ids,
        request["source"],
        params=params,
        limits=limits,
        oracle_session=session,
        progress=state.progress,
    )
    data = pack_result(header, scores.tobytes())
    if len(data) > limits.max_output_bytes:
        slim = {k: v for k, v in header.items() if k not in ("errors", "output", "oracle")}
        slim["truncated"] = True
        data = pack_result(slim, scores.tobytes())
        if len(data) > limits.max_output_bytes:
            data = pack_result(
                {"status": "invalid", "message": "result larger than max_output_bytes"}, b""
            )
    write_all(_RESULT_FD, data)
    os._exit(EXIT_OK)


# --------------------------------------------------------------------------- worker side


class WorkerState:
    """What a worker holds: views (built once), ids, limits, oracle configuration."""

    def __init__(self, init: Mapping[str, Any]) -> None:
        from monsearch.views.cache import load_views

        self.limits: SandboxLimits = init["limits"]
        self.oracle_config = init.get("oracle")
        self.ids: tuple[str, ...] = tuple(init["ids"])
        started = time.perf_counter()
        self.views = load_views(Path(init["views_path"]), self.ids, init["id_key"])
        # Re-allocating the top levels densely costs ~0.1 s and saves most of the
        # copy-on-write page copies a candidate's child makes (see compact_views).
        depth = init.get("compact_depth", DEFAULT_COMPACT_DEPTH)
        self.views = compact_views(self.views, max_depth=depth)
        self.compacted_fully = depth is None
        self.build_s = time.perf_counter() - started
        self.wall_cap, self.cpu_cap = self.limits.caps_for(len(self.ids))
        # Shared with every child (MAP_SHARED, anonymous): the child's progress.
        self._progress_map = mmap.mmap(-1, 8 * PROGRESS_SLOTS)
        self.progress = memoryview(self._progress_map).cast("q")
        backend = getattr(self.oracle_config, "backend", None)
        # A live judge writes its disk cache and opens sockets from inside the child.
        self.oracle_io = backend == "llm"
        # Only a live judge needs the trajectories themselves (to build its prompt).
        trajectories = init.get("trajectories") or ()
        self.trajectories_by_id = {t.id: t for t in trajectories} if backend == "llm" else None
        if self.oracle_config is not None:
            import monsearch.oracle.session  # noqa: F401 - preload before forking children
        import monsearch.sandbox.runner  # noqa: F401 - preload RestrictedPython and helpers

    def new_oracle_session(self) -> Any | None:
        if self.oracle_config is None:
            return None
        from monsearch.oracle.session import OracleSession

        return OracleSession(self.oracle_config, self.trajectories_by_id)

    def evaluate(self, request: Mapping[str, Any]) -> bytes:
        """Fork a child for one candidate; return the classified result message."""
        try:
            return self._evaluate(request)
        except OSError as exc:  # e.g. fork refused: the candidate is not to blame, but say so
            return pack_result(
                {"status": "crash", "message": f"cannot run the candidate: {exc}"}, b""
            )

    def _evaluate(self, request: Mapping[str, Any]) -> bytes:
        limits = self.limits
        n = len(self.ids)
        for slot in range(PROGRESS_SLOTS):
            self.progress[slot] = 0
        read_fd, write_fd = os.pipe()
        started = time.monotonic()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child, which never returns
            code = EXIT_INTERNAL
            try:
                os.close(read_fd)
                _child_main(write_fd, request, self, parent)
            except MemoryError:
                code = EXIT_MEMORY
            except BaseException:
                code = EXIT_INTERNAL
            os._exit(code)
        os.close(write_fd)
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)  # also done by the child; whichever runs first wins
        watch = _OverrunWatch(self.progress, limits)
        data, timed_out, too_big = _collect(
            read_fd, started + self.wall_cap, limits.max_output_bytes, watch
        )
        os.close(read_fd)
        if timed_out or too_big or watch.overrun is not None:
            _kill_group(pid)
        status, rusage = _reap(pid)
        wall = time.monotonic() - started
        cpu = rusage.ru_utime + rusage.ru_stime
        if watch.overrun is not None:
            header, scores = watch.result(self.ids), b""
        else:
            header, scores = classify_child(
                status,
                data,
                n=n,
                limits=limits,
                timed_out=timed_out,
                too_big=too_big,
                cpu_s=cpu,
                wall_cap=self.wall_cap,
                cpu_cap=self.cpu_cap,
            )
        header["wall_s"] = round(wall, 6)
        header["cpu_s"] = round(cpu, 6)
        header["usage"] = {
            "max_rss_kb": int(rusage.ru_maxrss),
            "minor_faults": int(rusage.ru_minflt),
        }
        return pack_result(header, scores)


def compact_views(
    views: Sequence[Any], intern_max: int = 64, max_depth: int | None = None
) -> tuple[Any, ...]:
    """Equal views re-allocated densely, so forked children copy fewer pages.

    Every object a program reads gets its reference count written, and in a forked
    child each write to a shared page copies that page. Views loaded from a pickle lie
    view after view (each view's whole tree together), so the top-level views a
    program touches for every trajectory sit on as many pages as there are views.
    Re-creating the containers level by level (all top-level views together, then
    all of their children, ...) and interning short strings packs them into far fewer
    pages. ``max_depth`` limits the re-allocated levels: on a ``val`` split depth 1
    takes about 0.1 s and cuts a trivial program's faults tenfold and the seed
    monitor's by a third; every level (None) takes seconds for no further gain.
    The values are unchanged.
    """
    if not issubclass(FrozenDict, dict):  # pragma: no cover - layout trick needs a dict subclass
        return tuple(views)
    memo: dict[int, Any] = {}
    pending: deque[tuple[Any, Any, int]] = deque()
    fill = dict.update  # the C method: fills a fresh shell without the read-only override
    limit = math.inf if max_depth is None else max_depth

    def convert(value: Any, depth: int) -> Any:
        if depth > limit:
            return value
        t = type(value)
        if t is FrozenDict:
            shell = memo.get(id(value))
            if shell is None:
                shell = memo[id(value)] = FrozenDict()
                pending.append((value, shell, depth))
            return shell
        if t is tuple and value:
            copy = memo.get(id(value))
            if copy is None:
                copy = memo[id(value)] = tuple([convert(v, depth + 1) for v in value])
            return copy
        if t is str and len(value) <= intern_max:
            return sys.intern(value)
        return value

    out = tuple(convert(v, 0) for v in views)
    while pending:
        original, shell, depth = pending.popleft()
        fill(shell, {k: convert(v, depth + 1) for k, v in original.items()})
    return out


def release_free_memory(collect: bool = True) -> None:
    """Return freed heap memory to the OS, so forks copy smaller page tables.

    ``collect`` first runs the cyclic GC (about 0.2 s over a ``val`` split's views):
    needed after :func:`compact_views` left the originals as garbage, not after a plain
    load, which leaves almost none.
    """
    if collect:
        gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)


class _OverrunWatch:
    """Reads the child's shared progress; decides when a call overran beyond saving."""

    def __init__(self, progress: Any, limits: SandboxLimits) -> None:
        from monsearch.sandbox.runner import PHASE_SCORING, PHASE_SETUP

        self.progress = progress
        self.limits = limits
        self.budgets = {PHASE_SETUP: limits.setup_s + limits.kill_grace_s}
        if limits.overrun_s is not None:
            self.budgets[PHASE_SCORING] = limits.overrun_s
        self.setup = PHASE_SETUP
        #: ``(phase, trajectory index, seconds it had run)`` once an overrun is seen.
        self.overrun: tuple[int, int, float] | None = None

    def judge_s(self) -> float:
        """Seconds the child has waited on the oracle's judge: added to its wall allowance."""
        from monsearch.sandbox.runner import JUDGE_SLOT

        return max(0, self.progress[JUDGE_SLOT]) / 1e9

    def check(self) -> bool:
        """True when the child must be killed now."""
        phase = self.progress[0]
        budget = self.budgets.get(phase)
        if budget is None:
            return False
        index, started_ns = self.progress[1], self.progress[2]
        elapsed = (time.monotonic_ns() - started_ns) / 1e9
        if started_ns and elapsed > budget:
            self.overrun = (phase, index, elapsed)
            return True
        return False

    def result(self, ids: Sequence[str]) -> dict[str, Any]:
        assert self.overrun is not None
        phase, index, elapsed = self.overrun
        limits = self.limits
        if phase == self.setup:
            message = (
                f"compiling and running the module body took over {limits.setup_s:g} s "
                f"(set-up budget) and did not stop; the program process was killed "
                f"after {elapsed:.2f} s"
            )
            return {"status": "timeout", "message": message, "errors": []}
        traj = ids[index] if 0 <= index < len(ids) else None
        message = (
            f"score() on trajectory {traj} overran its per-trajectory budget of "
            f"{limits.per_traj_ms:g} ms and did not stop (it swallows the interrupt or "
            f"loops inside a builtin); the program process was killed after {elapsed:.2f} s"
        )
        error = {"kind": "timeout", "message": message, "trajectory_id": traj, "line": None}
        return {
            "status": "timeout",
            "message": message,
            "errors": [error],
            "n_errors": 1,
            "n_timeouts": 1,
        }


def _collect(
    fd: int, deadline: float, cap: int, watch: _OverrunWatch | None = None
) -> tuple[bytes, bool, bool]:
    """Drain the child's result pipe until EOF, the deadline, more than ``cap`` bytes,
    or (with ``watch``) an overrun the child did not recover from."""
    chunks: list[bytes] = []
    total = 0
    while True:
        wait = deadline - time.monotonic()
        if watch is not None:
            wait += watch.judge_s()
        if wait <= 0:
            return b"".join(chunks), True, False
        if watch is not None:
            if watch.check():
                return b"", False, False
            wait = min(wait, WATCH_INTERVAL_S)
        ready, _w, _x = select.select([fd], [], [], wait)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks), False, False
        chunks.append(chunk)
        total += len(chunk)
        if total > cap:
            return b"", False, True


def _kill_group(pid: int) -> None:
    for kill, target in ((os.killpg, pid), (os.kill, pid)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(target, signal.SIGKILL)


def _reap(pid: int, grace_s: float = 5.0) -> tuple[int, Any]:
    """Wait for the child; SIGKILL it if it has not exited within ``grace_s``."""
    deadline = time.monotonic() + grace_s
    delay = 0.0005
    while True:
        done, status, rusage = os.wait4(pid, os.WNOHANG)
        if done:
            return status, rusage
        if time.monotonic() > deadline:
            _kill_group(pid)
            _done, status, rusage = os.wait4(pid, 0)
            return status, rusage
        time.sleep(delay)
        delay = min(delay * 2, 0.02)


_SIGNAL_MESSAGES = {
    signal.SIGXCPU: "CPU time limit exceeded",
    signal.SIGXFSZ: "tried to write a file",
    signal.SIGSEGV: "crashed (segmentation fault)",
    signal.SIGBUS: "crashed (bus error)",
    signal.SIGABRT: "aborted",
    signal.SIGILL: "crashed (illegal instruction)",
    signal.SIGFPE: "crashed (floating point exception)",
}


def classify_child(
    status: int,
    data: bytes,
    *,
    n: int,
    limits: SandboxLimits,
    timed_out: bool,
    too_big: bool,
    cpu_s: float,
    wall_cap: float | None = None,
    cpu_cap: int | None = None,
) -> tuple[dict[str, Any], bytes]:
    """Turn how a child ended (wait status, result bytes) into a header and scores."""
    wall_cap = limits.wall_s if wall_cap is None else wall_cap
    cpu_cap = limits.cpu_seconds if cpu_cap is None else cpu_cap
    if timed_out:
        return {
            "status": "timeout",
            "message": f"wall-clock limit of {wall_cap:g} s exceeded",
        }, b""
    if too_big:
        return {
            "status": "invalid",
            "message": f"result larger than {limits.max_output_bytes} bytes",
        }, b""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_s >= cpu_cap - 0.05):
            return {
                "status": "timeout",
                "message": f"CPU limit of {cpu_cap} s exceeded",
            }, b""
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        message = _SIGNAL_MESSAGES.get(sig, f"killed by {name}")
        return {"status": "crash", "message": f"program process {message} ({name})"}, b""
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
    if code == EXIT_MEMORY:
        return {
            "status": "memory",
            "message": f"memory limit of {limits.memory_mb} MB exceeded",
        }, b""
    if code != EXIT_OK:
        return {"status": "crash", "message": f"program process exited with code {code}"}, b""
    try:
        header, scores = unpack_result(data, n)
    except (ValueError, UnicodeDecodeError) as exc:
        return {"status": "crash", "message": f"program process sent no valid result ({exc})"}, b""
    if header.get("status") == "done" and not scores:
        return {"status": "crash", "message": "program process sent no scores"}, b""
    return header, scores


def worker_main() -> None:
    """Entry point of a worker process (``python -m monsearch.sandbox.workers``)."""
    proto_in, proto_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)  # stray prints must not corrupt the protocol
    os.close(null)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the host decides when workers stop
    try:
        init = pickle.loads(read_frame(proto_in))  # noqa: S301 - from the host (trusted)
    except EOFError:
        os._exit(0)
    state = WorkerState(init)
    del init
    release_free_memory(collect=state.compacted_fully)
    gc.freeze()  # views move to the permanent generation: children's GC skips them
    write_frame(
        proto_out,
        json.dumps({"ready": True, "n": len(state.ids), "build_s": state.build_s}).encode(),
    )
    while True:
        try:
            request = json.loads(read_frame(proto_in, max_bytes=MAX_REQUEST_BYTES))
        except EOFError:
            break
        if request.get("op") != "eval":
            break
        write_frame(proto_out, state.evaluate(request))
    os._exit(0)


# --------------------------------------------------------------------------- host side


def worker_environment() -> dict[str, str]:
    """The scrubbed environment of a worker: nothing from the host's environment.

    (An llm oracle's endpoint and key travel inside its resolved ``OracleConfig``.)
    """
    return {
        "PATH": os.defpath,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def strip_for_sandbox(trajectories: Sequence[Any]) -> list[Any]:
    """Trajectories without panel verdicts, oracle verdicts or meta: workers never get labels."""
    return [replace(t, panel=(), oracle=(), meta={}) for t in trajectories]


class WorkerHandle:
    """Host-side handle of one worker process (used by one thread at a time)."""

    def __init__(
        self, init_blob: bytes, *, env: Mapping[str, str], cwd: Path, log_path: Path
    ) -> None:
        self.log_path = log_path
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-s", "-B", "-P", "-m", "monsearch.sandbox.workers"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=dict(env),
                cwd=cwd,
                close_fds=True,
                start_new_session=True,
            )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        self.info: dict[str, Any] = {}
        try:
            write_frame(self._in, init_blob)
        except OSError as exc:
            self.kill()
            raise WorkerDied(f"sandbox worker failed to start: {exc}; {self.log_tail()}") from exc

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def wait_ready(self, timeout: float) -> dict[str, Any]:
        try:
            self.info = json.loads(
                read_frame(self._out, time.monotonic() + timeout, MAX_REQUEST_BYTES)
            )
        except (EOFError, TimeoutError, ValueError) as exc:
            self.kill()
            raise WorkerDied(
                f"sandbox worker did not start ({type(exc).__name__}); worker log: {self.log_tail()}"
            ) from exc
        return self.info

    def request(self, request: Mapping[str, Any], timeout: float) -> bytes:
        """Send one request and return the raw result message."""
        try:
            write_frame(self._in, json.dumps(request).encode("utf-8"))
            return read_frame(self._out, time.monotonic() + timeout)
        except TimeoutError as exc:
            raise WorkerTimeout("sandbox worker did not answer in time") from exc
        except (EOFError, OSError) as exc:
            raise WorkerDied(f"sandbox worker died ({type(exc).__name__})") from exc

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]
        try:
            self.proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            self.kill()
        self._close_pipes()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5.0)
        self._close_pipes()

    def _close_pipes(self) -> None:
        for pipe in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError, AttributeError):
                pipe.close()  # type: ignore[union-attr]


def decode_scores(raw: bytes) -> array:
    scores = array("d")
    scores.frombytes(raw)
    return scores


if __name__ == "__main__":
    worker_main()
