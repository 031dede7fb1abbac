"""Resource limits for running one monitor candidate, and applying them to a child process.

Linux only: the limits rely on ``setrlimit`` semantics (RLIMIT_AS, RLIMIT_CPU with
SIGXCPU then SIGKILL) and ``/proc/self/statm``.

rlimits are a resource jail, not a security jail: they bound CPU, memory, files and
file descriptors of the forked child; the language layer (:mod:`.restricted`) is what
keeps a program away from the host.
"""

from __future__ import annotations

import math
import os
import resource
from dataclasses import dataclass

from monsearch.errors import MonsearchError

_MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """Limits for one candidate evaluation (a whole split in one fresh child).

    Defaults suit a split of about 2,500 trajectories: a typical monitor scores it in
    well under a second, so the limits only stop runaway programs.

    - ``wall_s``: wall clock for compile + all trajectories; the child is SIGKILLed past it.
    - ``cpu_s``: RLIMIT_CPU of the child (whole seconds, rounded up).
    - ``memory_mb``: address space the child may add on top of what it inherits.
    - ``per_traj_ms``: wall budget of one ``score()`` call; a call past it counts as a
      failed trajectory (``None`` disables the per-trajectory timer).
    - ``max_error_rate``: share of failed trajectories above which the candidate fails.
    - ``max_output_bytes``: cap on the child's result message.
    - ``max_errors_kept``: how many per-trajectory error messages are kept as artefacts.
    - ``max_print_bytes``: printed text kept per candidate (the rest is dropped).
    - ``max_source_bytes``: programs above this size are refused at compile time.
    - ``nofile``: RLIMIT_NOFILE of the child (raised for oracle backends that need files).
    - ``startup_s``: how long a worker may take to start and build its views.
    - ``setup_s``: wall budget of the child's set-up (compile + module body).
    - ``kill_grace_s``: how long past an overrun (of ``per_traj_ms`` or ``setup_s``) the
      worker waits for the child's own interrupt before it SIGKILLs the child: a
      program that swallows the interrupt or loops inside C code is decided within
      about the per-trajectory budget plus this grace, not at the candidate caps.

    The candidate caps scale with the work (:meth:`caps_for`): a candidate over a few
    trajectories gets a few per-trajectory budgets, never the whole ``wall_s``/``cpu_s``.
    """

    wall_s: float = 60.0
    cpu_s: float = 30.0
    memory_mb: int = 1024
    per_traj_ms: float | None = 500.0
    max_error_rate: float = 0.05
    max_output_bytes: int = 4 * _MIB
    max_errors_kept: int = 5
    max_print_bytes: int = 64 * 1024
    max_source_bytes: int = 64 * 1024
    nofile: int = 32
    startup_s: float = 300.0
    setup_s: float = 2.0
    kill_grace_s: float = 0.2

    def __post_init__(self) -> None:
        positive = {
            "wall_s": self.wall_s,
            "cpu_s": self.cpu_s,
            "memory_mb": self.memory_mb,
            "max_output_bytes": self.max_output_bytes,
            "max_source_bytes": self.max_source_bytes,
            "nofile": self.nofile,
            "startup_s": self.startup_s,
            "setup_s": self.setup_s,
            "kill_grace_s": self.kill_grace_s,
        }
        for name, value in positive.items():
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise MonsearchError(
                    f"sandbox limit {name} must be a positive number, got {value!r}"
                )
        if self.per_traj_ms is not None and not (
            self.per_traj_ms > 0 and math.isfinite(self.per_traj_ms)
        ):
            raise MonsearchError(
                f"sandbox limit per_traj_ms must be positive or None, got {self.per_traj_ms!r}"
            )
        if not 0.0 <= self.max_error_rate <= 1.0:
            raise MonsearchError(f"max_error_rate must be in [0, 1], got {self.max_error_rate!r}")
        if self.max_errors_kept < 0 or self.max_print_bytes < 0:
            raise MonsearchError("max_errors_kept and max_print_bytes must be >= 0")

    @property
    def cpu_seconds(self) -> int:
        """RLIMIT_CPU is in whole seconds."""
        return max(1, math.ceil(self.cpu_s))

    @property
    def overrun_s(self) -> float | None:
        """Wall time after which one ``score()`` call is killed from outside (None: never).

        The in-child interrupt arrives within 1.25x the budget (its tick is a quarter of
        the budget); past that plus the grace, the call is not going to stop by itself.
        """
        if self.per_traj_ms is None:
            return None
        return 1.25 * self.per_traj_ms / 1000.0 + self.kill_grace_s

    def caps_for(self, n: int) -> tuple[float, int]:
        """``(wall seconds, RLIMIT_CPU seconds)`` for a candidate over ``n`` trajectories.

        About the per-trajectory budget times the work plus set-up, capped by
        ``wall_s`` / ``cpu_s``: with a per-trajectory budget, a candidate can never
        legitimately need more, so a runaway is decided in proportion to the work.
        """
        overrun = self.overrun_s
        if overrun is None:
            return self.wall_s, self.cpu_seconds
        work = self.setup_s + self.kill_grace_s + max(1, n) * overrun
        wall = min(self.wall_s, work)
        return wall, max(1, math.ceil(min(self.cpu_s, work)))


def current_address_space() -> int:
    """Bytes of virtual address space this process has mapped now."""
    with open("/proc/self/statm", "rb") as fh:
        pages = int(fh.read().split()[0])
    return pages * os.sysconf("SC_PAGE_SIZE")


def apply_child_limits(
    limits: SandboxLimits, *, oracle_io: bool = False, cpu_seconds: int | None = None
) -> None:
    """Set the rlimits of a freshly forked child, before any untrusted code runs.

    ``oracle_io`` is for an oracle backend that writes its on-disk cache or talks to a
    judge endpoint from inside the child: file writes stay possible (RLIMIT_FSIZE
    capped, not 0) and threads/processes are not forbidden. Programs still cannot
    reach files or sockets; only the backend's own host code can.
    """
    setrl = resource.setrlimit
    setrl(resource.RLIMIT_CORE, (0, 0))
    fsize = 256 * _MIB if oracle_io else 0
    setrl(resource.RLIMIT_FSIZE, (fsize, fsize))
    # Not enforced for root, but it is for everyone else: no forking from the child.
    if not oracle_io:
        setrl(resource.RLIMIT_NPROC, (0, 0))
    cpu = cpu_seconds if cpu_seconds is not None else limits.cpu_seconds
    # Soft limit delivers SIGXCPU (default action: terminate); hard limit SIGKILLs.
    setrl(resource.RLIMIT_CPU, (cpu, cpu + 1))
    # The child inherits the worker's views (copy-on-write); budget what it adds.
    address_space = current_address_space() + limits.memory_mb * _MIB
    setrl(resource.RLIMIT_AS, (address_space, address_space))
    # A live judge needs sockets and its cache database; programs cannot open anything.
    nofile = max(limits.nofile, 256) if oracle_io else limits.nofile
    setrl(resource.RLIMIT_NOFILE, (nofile, nofile))
