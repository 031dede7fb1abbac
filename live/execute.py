"""One command of a live run, executed as the StealthBench harness executed it.

The harness ran each command with ``bash -c`` inside the agent container, waited for
its output streams to close, returned ``stdout + "\\n" + stderr``, and gave up after
30 seconds with ``[timeout] command exceeded 30s limit`` (leaving whatever still ran
running). Here the same, inside the worker's walls, with caps of our own:

- the 30 s are counted on the run's virtual clock, so ``sleep 40`` times out at once
  (the clock stops at the limit) instead of after 30 real seconds; a command that
  really runs 30 s is stopped too;
- a command whose shell has exited while something it left in the background still
  holds its output open (a listener started without redirecting its output) waited
  there until the timeout: here that is a timeout at once, the listener left running;
- output is capped (each stream at :data:`OUTPUT_CAP` bytes): past it the command is
  stopped and what it printed is kept, marked cut.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass, field

from monsearch.live.container import Container

#: The harness's per-command limit, on the run's clock.
LIMIT_S = 30.0
TIMEOUT_TEXT = "[timeout] command exceeded 30s limit"
#: Bytes of stdout and of stderr kept from one command.
OUTPUT_CAP = 1_000_000
#: Real seconds a command may run at most, whatever its clock says.
REAL_LIMIT_S = 30.0
#: Real seconds to wait for the output to close once the shell itself has exited.
LINGER_S = 1.0
#: Real seconds at most to let background jobs of a command become idle.
SETTLE_S = 2.0


@dataclass
class Outcome:
    observation: str
    elapsed_ms: int  # on the run's clock: real time spent plus virtual sleeps
    exit_code: int | None
    timed_out: bool = False
    cut: bool = False
    refused: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def _stop(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _group_states(pgid: int) -> list[str]:
    """The scheduler states (R, S, D, ...) of the processes in group ``pgid``."""
    states = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="ascii", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # fields[0] state, [1] ppid, [2] pgrp
            states.append(fields[0])
    return states


def settle(pgid: int, limit_s: float = SETTLE_S) -> None:
    """Wait (real time, at most ``limit_s``) until what a command left in the background
    is idle: a listener started with ``&`` and a ``sleep 1`` after it was ready when the
    next command came, which a virtual sleep alone would not give it."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        states = _group_states(pgid)
        if all(s in "SZTtXI" for s in states):
            return
        time.sleep(0.01)


def run_command(box: Container, text: str, virtual_start: float) -> Outcome:
    """Run ``text`` in ``box`` starting at ``virtual_start`` on the run's clock."""
    assert box.clock is not None
    clock = box.clock
    refused = box.refused(text)
    missing = box.missing(text)
    clock.set(virtual_start)
    if refused:
        msg = "".join(f"bash: line 1: {p}: No such file or directory\n" for p in refused[:1])
        return Outcome("\n" + msg, 1, 127, refused=refused, missing=missing)
    marker = box.c / "timed_out"
    with contextlib.suppress(FileNotFoundError):
        marker.unlink()
    (box.c / "command.json").write_text(
        json.dumps({"virtual_start": virtual_start, "limit": LIMIT_S}), encoding="utf-8"
    )
    proc = subprocess.Popen(
        ["/bin/bash", "-c", box.map_paths(text)],
        cwd=box.workdir,
        env=box.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    box.groups.add(proc.pid)
    out = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    sel = selectors.DefaultSelector()
    for stream in out:
        os.set_blocking(stream.fileno(), False)
        sel.register(stream, selectors.EVENT_READ)
    started = time.monotonic()
    exited_at: float | None = None
    timed_out = cut = False
    while sel.get_map():
        for key, _ in sel.select(timeout=0.02):
            try:
                data = os.read(key.fileobj.fileno(), 65536)
            except BlockingIOError:
                continue
            if not data:
                sel.unregister(key.fileobj)
                continue
            buf = out[key.fileobj]
            buf += data[: max(0, OUTPUT_CAP - len(buf))]
            if len(buf) >= OUTPUT_CAP:
                cut = True
        if cut:
            _stop(proc.pid)
            break
        if marker.exists() or clock.now() - virtual_start > LIMIT_S:
            timed_out = True
            _stop(proc.pid)
            break
        if time.monotonic() - started > REAL_LIMIT_S:
            timed_out = True
            _stop(proc.pid)
            break
        if exited_at is None and proc.poll() is not None:
            exited_at = time.monotonic()
        if exited_at is not None and time.monotonic() - exited_at > LINGER_S:
            timed_out = True  # a background job holds the output: the harness waited it out
            break
    sel.close()
    for stream in out:
        stream.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    if timed_out:
        clock.set(virtual_start + LIMIT_S)
        return Outcome(TIMEOUT_TEXT, int(LIMIT_S * 1000), None, True, refused=refused, missing=missing)
    elapsed = max(0.0, clock.now() - virtual_start)
    if "&" in text.replace("&&", ""):
        settle(proc.pid)
    stdout = out[proc.stdout].decode("utf-8", "replace")
    stderr = out[proc.stderr].decode("utf-8", "replace")
    observation = box.unmap(stdout + "\n" + stderr)
    return Outcome(observation, int(elapsed * 1000), proc.returncode, False, cut, refused, missing)
