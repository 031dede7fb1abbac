"""Public entry point: evaluate monitor programs over a split in isolated workers.

::

    with SandboxPool(corpus.split("val"), limits=SandboxLimits(wall_s=30)) as pool:
        result = pool.evaluate(source, params={"w_secret": 2.5})
        if result.ok:
            result.scores  # numpy float64, aligned with pool.trajectory_ids

The pool never sees labels: it strips panel and oracle verdicts and meta from the
trajectories before they reach a worker, and the programs see only views. Oracle
answers reach a program only through the oracle backend (``oracle=OracleConfig``).

Statuses of a :class:`CandidateResult`:

- ``ok``: every trajectory scored, or few enough failed (at most
  ``limits.max_error_rate``); failed trajectories get the fallback score (the
  lowest valid score of the candidate, 0.0 if none) and are counted in ``n_errors``;
- ``error``: compile error, module-level exception, or too many trajectories raised;
- ``timeout``: wall-clock or CPU limit, or too many per-trajectory budget overruns;
- ``memory``: MemoryError / address-space limit;
- ``crash``: the program's process died from a signal or sent no valid result;
- ``invalid``: no ``score`` function, or a non-numeric or non-finite score;
- ``oracle_error``: the oracle (the judge behind ``oracle(traj)``) failed during the
  run; the program is not to blame and its scores are not comparable.

Views are built once per set of trajectories and cached on disk
(:mod:`.view_cache`); each pool salts the ids its programs see with a secret of its
own, so a view id never gives the real trajectory id back.

Linux only (fork, rlimits, ``prctl``); CPython only (RestrictedPython).
"""

from __future__ import annotations

import contextlib
import math
import numbers
import os
import pickle
import queue
import shutil
import tempfile
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from monsearch.errors import MonsearchError
from monsearch.sandbox.limits import SandboxLimits
from monsearch.sandbox.restricted import CompileReport, compile_program, extract_params
from monsearch.sandbox.workers import (
    DEFAULT_COMPACT_DEPTH,
    WorkerDied,
    WorkerHandle,
    WorkerTimeout,
    strip_for_sandbox,
    unpack_result,
    worker_environment,
)

STATUSES = ("ok", "error", "timeout", "memory", "crash", "invalid", "oracle_error")
#: ``cache_dir`` default of :class:`SandboxPool`: monsearch's cache folder.
DEFAULT_CACHE = object()
#: Extra seconds the host waits for a worker beyond the candidate's wall limit.
WORKER_GRACE_S = 15.0

__all__ = [
    "STATUSES",
    "CandidateResult",
    "CompileReport",
    "SandboxLimits",
    "SandboxPool",
    "compile_program",
    "extract_params",
    "finalise",
]


@dataclass
class CandidateResult:
    """What evaluating one program over one split produced."""

    status: str
    scores: np.ndarray | None
    trajectory_ids: tuple[str, ...]
    n_errors: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    oracle: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0
    cpu_s: float = 0.0
    message: str = ""
    n_timeouts: int = 0
    output: str = ""
    #: Resource use of the child: ``max_rss_kb``, ``minor_faults`` (copy-on-write copies).
    usage: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready artefacts (scores omitted: store them separately)."""
        return {
            "status": self.status,
            "n": len(self.trajectory_ids),
            "n_errors": self.n_errors,
            "n_timeouts": self.n_timeouts,
            "errors": list(self.errors),
            "oracle": dict(self.oracle),
            "wall_s": self.wall_s,
            "cpu_s": self.cpu_s,
            "message": self.message,
            "output": self.output,
            "usage": dict(self.usage),
        }


def _float(value: Any) -> float:
    return float(value) if type(value) in (int, float) and math.isfinite(value) else 0.0


def _int(value: Any) -> int:
    return value if type(value) is int and value >= 0 else 0


def _usage(value: Any) -> dict[str, int]:
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if type(v) is int and v >= 0}


def _errors(value: Any, keep: int) -> list[dict[str, Any]]:
    out = []
    if isinstance(value, list):
        for item in value[:keep]:
            if not isinstance(item, dict):
                continue
            line = item.get("line")
            col = item.get("col")
            entry = {
                "kind": str(item.get("kind", ""))[:40],
                "message": str(item.get("message", ""))[:2000],
                "trajectory_id": item.get("trajectory_id")
                if isinstance(item.get("trajectory_id"), str)
                else None,
                "line": line if type(line) is int else None,
            }
            if type(col) is int:
                entry["col"] = col
            out.append(entry)
    return out


def finalise(
    header: Mapping[str, Any], raw_scores: bytes, ids: tuple[str, ...], limits: SandboxLimits
) -> CandidateResult:
    """Apply the error-rate rule and the fallback score to a worker's answer."""
    status = header.get("status")
    keep = max(limits.max_errors_kept, 20) if status == "error" else limits.max_errors_kept
    result = CandidateResult(
        status="crash",
        scores=None,
        trajectory_ids=ids,
        errors=_errors(header.get("errors"), keep),
        oracle=header.get("oracle") if isinstance(header.get("oracle"), dict) else {},
        wall_s=_float(header.get("wall_s")),
        cpu_s=_float(header.get("cpu_s")),
        message=str(header.get("message", ""))[:4000],
        n_timeouts=_int(header.get("n_timeouts")),
        output=str(header.get("output", ""))[:8192],
        usage=_usage(header.get("usage")),
    )
    if status in ("error", "timeout", "memory", "crash", "invalid"):
        result.status = status
        result.n_errors = _int(header.get("n_errors"))
        return result
    judge_errors = _int(result.oracle.get("judge_errors"))
    if status == "done" and judge_errors:
        result.status = "oracle_error"
        result.n_errors = _int(header.get("n_errors"))
        first = str(result.oracle.get("judge_error") or "")[:1000]
        result.message = (
            f"the oracle judge failed on {judge_errors} call(s); the program is not to blame"
            + (f": {first}" if first else "")
        )
        return result
    if status != "done":
        result.message = f"unknown result status {status!r}"
        return result
    n = len(ids)
    scores = np.frombuffer(raw_scores, dtype=np.float64).copy() if raw_scores else np.empty(0)
    if scores.shape != (n,):
        result.message = "result has the wrong number of scores"
        return result
    if np.isinf(scores).any():
        result.status = "invalid"
        result.message = "non-finite scores in the result"
        return result
    failed = np.isnan(scores)
    n_errors = int(failed.sum())
    result.n_errors = n_errors
    if n_errors > limits.max_error_rate * n:
        timeouts = result.n_timeouts
        result.status = "timeout" if timeouts * 2 > n_errors else "error"
        first = result.errors[0]["message"] if result.errors else ""
        result.message = (
            f"score() failed on {n_errors} of {n} trajectories "
            f"(limit {limits.max_error_rate:.1%}); first: {first}"
        )[:4000]
        return result
    if n_errors:
        valid = scores[~failed]
        scores[failed] = float(valid.min()) if valid.size else 0.0
        result.message = (
            f"{n_errors} of {n} trajectories failed and got the fallback score (the minimum)"
        )
    result.status = "ok"
    result.scores = scores
    return result


class SandboxPool:
    """Worker processes holding the views of one set of trajectories (context manager).

    ``workers`` defaults to the number of cores. Candidates are spread over the
    workers; each runs in a fresh child forked from its worker. A worker that dies
    or stops answering is killed and replaced (it reloads the views) and the run goes
    on; the host process survives anything a program does.

    ``identity`` names the trajectories' content for the view cache (e.g. corpus
    content hash, split and assignment hash); without it the stripped trajectories
    are hashed. ``cache_dir`` is where views are cached (default: monsearch's cache
    folder; ``None``: no cache). ``id_key`` is the secret that salts view ids (default:
    random per pool). ``progress(stage, done, total)`` reports start-up stages.
    ``compact_depth``: levels of view containers each worker re-allocates densely
    after loading (:func:`.compact_views`; None: every level, slow to start).
    ``slots``: a semaphore shared with other pools, held while a candidate runs, so
    that pools used at the same time run no more candidates at once than it allows
    (more than there are cores only stretches each one's wall-clock budgets).
    """

    def __init__(
        self,
        trajectories: Sequence[Any],
        *,
        workers: int | None = None,
        limits: SandboxLimits | None = None,
        oracle: Any | None = None,
        identity: str | None = None,
        cache_dir: Any = DEFAULT_CACHE,
        id_key: bytes | None = None,
        progress: Callable[[str, int, int], None] | None = None,
        compact_depth: int | None = DEFAULT_COMPACT_DEPTH,
        slots: threading.Semaphore | None = None,
    ) -> None:
        from monsearch.views.cache import ensure_views_file, views_key
        from monsearch.views.ids import new_view_id_key

        if not trajectories:
            raise MonsearchError("the sandbox needs at least one trajectory")
        ids = tuple(t.id for t in trajectories)
        if len(set(ids)) != len(ids):
            raise MonsearchError("trajectory ids must be unique within a sandbox pool")
        self.trajectory_ids: tuple[str, ...] = ids
        self.limits = limits or SandboxLimits()
        self.oracle = oracle
        self._slots = slots
        self.n_workers = max(1, workers or os.cpu_count() or 1)
        self._tmp = Path(tempfile.mkdtemp(prefix="monsearch-sandbox-"))
        self._cwd = self._tmp / "cwd"
        self._cwd.mkdir()
        self._logs = self._tmp / "logs"
        self._logs.mkdir()
        self._all: list[WorkerHandle] = []
        self._finalizer = weakref.finalize(self, _shutdown, self._all, self._tmp)
        stripped = strip_for_sandbox(trajectories)
        blob = None if identity else pickle.dumps(stripped, protocol=pickle.HIGHEST_PROTOCOL)
        if cache_dir is DEFAULT_CACHE:
            from monsearch.cache import cache_dir as default_cache_dir

            cache_dir = default_cache_dir()
        try:
            views_path, self.views_cached = ensure_views_file(
                stripped,
                views_key(ids, identity, blob),
                Path(cache_dir) if cache_dir is not None else None,
                self._tmp,
                progress,
            )
            views_path = _pin(views_path, self._tmp / "views.pkl")
        except BaseException:
            self._finalizer()
            raise
        backend = getattr(oracle, "backend", None)
        self.id_key = id_key if id_key is not None else new_view_id_key()
        self._init_blob = pickle.dumps(
            {
                "ids": ids,
                "views_path": str(views_path),
                "id_key": self.id_key,
                # Only a live judge needs the trajectories themselves (for its prompt).
                "trajectories": stripped if backend == "llm" else None,
                "limits": self.limits,
                "oracle": oracle,
                "compact_depth": compact_depth,
            },
            protocol=pickle.HIGHEST_PROTOCOL,
        )
        self._env = worker_environment()
        self._lock = threading.Lock()
        self._refill_lock = threading.Lock()
        self._spawned = 0
        self._idle: queue.Queue[WorkerHandle] = queue.Queue()
        self._closed = False
        self.replacements = 0
        try:
            handles = [self._spawn() for _ in range(self.n_workers)]
            for i, handle in enumerate(handles):
                handle.wait_ready(self.limits.startup_s)
                self._idle.put(handle)
                if progress is not None:
                    progress("starting workers", i + 1, len(handles))
        except BaseException:
            self.close()
            raise

    # -- lifecycle

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop every worker and remove the pool's temporary folders."""
        self._closed = True
        self._finalizer()

    @property
    def worker_pids(self) -> list[int]:
        with self._lock:
            return [h.pid for h in self._all if h.proc.poll() is None]

    @property
    def view_ids(self) -> tuple[str, ...]:
        """The opaque ids programs see, aligned with :attr:`trajectory_ids` (host side only)."""
        from monsearch.views.ids import view_id

        return tuple(view_id(i, self.id_key) for i in self.trajectory_ids)

    @property
    def workdir(self) -> Path:
        """The (empty) working directory of the workers and their children."""
        return self._cwd

    def _spawn(self) -> WorkerHandle:
        with self._lock:
            self._spawned += 1
            log = self._logs / f"worker-{self._spawned}.log"
        handle = WorkerHandle(self._init_blob, env=self._env, cwd=self._cwd, log_path=log)
        with self._lock:
            self._all.append(handle)
        return handle

    def _retire(self, handle: WorkerHandle) -> None:
        handle.kill()
        with self._lock:
            if handle in self._all:
                self._all.remove(handle)

    def _replace(self, handle: WorkerHandle) -> WorkerHandle:
        self._retire(handle)
        with self._lock:
            self.replacements += 1
        fresh = self._spawn()
        fresh.wait_ready(self.limits.startup_s)
        return fresh

    def _refill(self) -> None:
        """Start workers lost earlier (e.g. to an interrupted request), up to ``n_workers``."""
        with self._refill_lock:
            with self._lock:
                missing = self.n_workers - len(self._all)
            for _ in range(missing):
                handle = self._spawn()
                handle.wait_ready(self.limits.startup_s)
                with self._lock:
                    self.replacements += 1
                self._idle.put(handle)

    def _take(self) -> WorkerHandle:
        while True:
            try:
                handle = self._idle.get(timeout=0.5)
            except queue.Empty:
                with self._lock:
                    if not self._all:
                        raise MonsearchError("the sandbox pool has no live workers left") from None
                continue
            if handle.proc.poll() is None:
                return handle
            try:  # died while idle: replace it before handing it a candidate
                return self._replace(handle)
            except BaseException:
                self._retire(handle)
                raise

    # -- evaluation

    def evaluate(
        self, source: str, *, params: Mapping[str, float] | None = None
    ) -> CandidateResult:
        """Score every trajectory with ``source`` (optionally with PARAMS overridden)."""
        if self._closed:
            raise MonsearchError("the sandbox pool is closed")
        request = {"op": "eval", "source": source, "params": _plain_params(params)}
        if self._slots is None:
            return self._evaluate(request)
        with self._slots:
            return self._evaluate(request)

    def _evaluate(self, request: Mapping[str, Any]) -> CandidateResult:
        timeout = self.limits.wall_s + WORKER_GRACE_S
        self._refill()
        handle = self._take()
        in_sync = False  # False while a request may be pending on the worker's pipe
        try:
            for attempt in range(2):
                try:
                    raw = handle.request(request, timeout)
                except WorkerTimeout:
                    handle = self._replace(handle)
                    in_sync = True
                    return self._failure(
                        "timeout", "the sandbox worker stopped answering and was replaced"
                    )
                except WorkerDied:
                    handle = self._replace(handle)
                    if attempt == 0:
                        continue  # the worker's death is not the candidate's fault: retry once
                    in_sync = True
                    return self._failure("crash", "the sandbox worker died twice on this candidate")
                in_sync = True
                try:
                    header, scores = unpack_result(raw, len(self.trajectory_ids))
                except (ValueError, UnicodeDecodeError) as exc:
                    return self._failure(
                        "crash", f"malformed answer from the sandbox worker: {exc}"
                    )
                return finalise(header, scores, self.trajectory_ids, self.limits)
            raise AssertionError("unreachable")  # pragma: no cover
        finally:
            if in_sync and handle.proc.poll() is None:
                self._idle.put(handle)
            else:
                # Interrupted mid-request (or the worker is gone): its pipe may still
                # hold a stale answer, so it is never reused. _refill replaces it.
                self._retire(handle)

    def evaluate_many(
        self, sources: Sequence[str], *, params: Sequence[Mapping[str, float] | None] | None = None
    ) -> list[CandidateResult]:
        """Evaluate several programs concurrently over the workers; results in input order."""
        if params is not None and len(params) != len(sources):
            raise MonsearchError("params must have one entry per source")
        plist = list(params) if params is not None else [None] * len(sources)
        if len(sources) <= 1 or self.n_workers == 1:
            return [self.evaluate(s, params=p) for s, p in zip(sources, plist, strict=True)]
        with ThreadPoolExecutor(max_workers=self.n_workers, thread_name_prefix="sandbox") as pool:
            futures = [
                pool.submit(self.evaluate, s, params=p) for s, p in zip(sources, plist, strict=True)
            ]
            return [f.result() for f in futures]

    def _failure(self, status: str, message: str) -> CandidateResult:
        return CandidateResult(
            status=status, scores=None, trajectory_ids=self.trajectory_ids, message=message
        )


def _plain_params(params: Mapping[str, Any] | None) -> dict[str, int | float] | None:
    """PARAMS overrides as plain JSON numbers (numpy scalars from a tuner included)."""
    if not params:
        return None
    out: dict[str, int | float] = {}
    for name, value in params.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise MonsearchError(f"PARAMS override {name!r} must be a number, got {value!r}")
        out[str(name)] = int(value) if isinstance(value, numbers.Integral) else float(value)
    return out


def _pin(path: Path, pinned: Path) -> Path:
    """The pool's own link to its views file: a replacement worker started hours later
    must still find it after other runs pruned the shared cache."""
    if path.parent == pinned.parent:
        return path
    try:
        os.link(path, pinned)
    except OSError:
        shutil.copyfile(path, pinned)
    return pinned


def _shutdown(handles: list[WorkerHandle], tmp: Path) -> None:
    for handle in list(handles):
        with contextlib.suppress(Exception):
            handle.close()
    handles.clear()
    shutil.rmtree(tmp, ignore_errors=True)
