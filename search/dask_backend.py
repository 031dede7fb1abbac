"""Val evaluations on Dask workers: ``monsearch evolve --backend dask|dask-local``.

:func:`dask_pool_factory` gives :class:`~.evaluator.SearchEvaluator` a val pool with
the local pool's interface (``evaluate_many(sources)`` in input order, ``close()``),
whose candidates run on Dask workers instead of local sandbox worker processes.

How the work is split:

- The host strips the labels from the val trajectories (as the local pool does),
  pickles and compresses them once and registers them, with the sandbox limits, the
  oracle config and one view-id secret, as a Dask *worker plugin*. The scheduler
  keeps the plugin and installs it on every worker that joins, a replacement for a
  dead worker included, so the trajectories travel once per worker, never per task,
  and workers need no shared filesystem: the corpus path need not exist on them.
  The workers need the same monsearch (and Python) installed, since the plugin and
  the task are pickled by reference.
- Each Dask worker builds its own :class:`~monsearch.sandbox.evaluate.SandboxPool`
  (one sandbox worker per Dask worker thread) the first time it is needed, and keeps
  it for the plugin's life. The sandbox limits, the fresh forked child per candidate
  and the scrubbed worker environment (``PYTHONHASHSEED=0``) are the SandboxPool's own,
  so they hold on a Dask worker exactly as they do locally, and so do the scores.
- A task evaluates one source and returns its ``CandidateResult``. A candidate that
  kills its own sandbox child is contained by the SandboxPool (a ``crash`` result,
  not a Dask failure). A Dask worker that dies mid-task has its task re-queued by the
  scheduler (up to ``distributed.scheduler.allowed-failures`` deaths per task, 3 by
  default; past that the candidate is recorded as a ``crash``); exceptions inside a
  task (a SandboxPool that failed to start) are retried on another attempt.
  A LocalCluster's nanny restarts a killed worker process.
- Every Dask worker shares one view-id secret, so a candidate sees the same view ids
  wherever it runs.
"""

from __future__ import annotations

import logging
import pickle
import signal
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from monsearch.errors import MonsearchError

#: Retries of a task that raised (not of one whose worker died: Dask re-queues those).
TASK_RETRIES = 2
#: How long to wait for a scheduler and its first worker before giving up.
CONNECT_TIMEOUT_S = 60.0
#: How long candidates may wait on a cluster with no worker at all before the run stops.
NO_WORKERS_TIMEOUT_S = 120.0


class DaskBackendError(MonsearchError):
    """The Dask cluster cannot be used (unreachable scheduler, no workers, lost cluster)."""


def _require_distributed() -> Any:
    try:
        import distributed
    except ImportError:  # pragma: no cover - a declared dependency
        raise DaskBackendError(
            "the Dask backends need the 'distributed' package (pip install distributed)"
        ) from None
    return distributed


def _plugin_base() -> type:
    return _require_distributed().WorkerPlugin


class SandboxPlugin(_plugin_base()):  # type: ignore[misc]
    """What a Dask worker needs to score candidates on one set of trajectories.

    Pickled once on the host; each worker gets its own copy (from the scheduler) and
    builds its SandboxPool lazily, in a task thread: building views takes seconds
    and must not block the worker's event loop.
    """

    idempotent = False

    def __init__(
        self,
        name: str,
        blob: bytes,
        *,
        limits: Any,
        oracle: Any,
        identity: str | None,
        id_key: bytes,
        ignore_sigint: bool = False,
    ) -> None:
        self.name = name
        self.ignore_sigint = ignore_sigint
        self.blob = blob
        self.limits = limits
        self.oracle = oracle
        self.identity = identity
        self.id_key = id_key
        self._pool: Any = None
        self._lock = threading.Lock()
        self._threads = 1

    def __getstate__(self) -> dict[str, Any]:
        # The pool and its lock are per worker, never shipped.
        state = dict(self.__dict__)
        state["_pool"] = None
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def setup(self, worker: Any) -> None:
        self._threads = max(1, int(getattr(worker.state, "nthreads", 1) or 1))
        if self.ignore_sigint and threading.current_thread() is threading.main_thread():
            # A LocalCluster's workers share the terminal's process group: Ctrl-C is
            # the host's to handle (finish the batch in flight), not a worker's death.
            signal.signal(signal.SIGINT, signal.SIG_IGN)

    def teardown(self, worker: Any) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def pool(self) -> Any:
        with self._lock:
            if self._pool is None:
                import zstandard

                from monsearch.sandbox.evaluate import SandboxPool

                trajectories = pickle.loads(  # noqa: S301 - from the run's own host
                    zstandard.ZstdDecompressor().decompress(self.blob)
                )
                self._pool = SandboxPool(
                    trajectories,
                    workers=self._threads,
                    limits=self.limits,
                    oracle=self.oracle,
                    identity=self.identity,
                    id_key=self.id_key,
                )
                # The pool's sandbox workers restart from its own views file, never from this.
                self.blob = b""
            return self._pool


def _plugin(name: str) -> SandboxPlugin:
    from distributed import get_worker

    plugin = get_worker().plugins.get(name)
    if plugin is None:
        raise RuntimeError(f"worker plugin {name!r} is not installed on this Dask worker")
    return plugin


def _warm(name: str) -> int:
    """Build the worker's SandboxPool now (start-up cost paid before the first batch)."""
    return len(_plugin(name).pool().trajectory_ids)


def _evaluate(name: str, source: str) -> Any:
    """One task: score ``source`` on this worker's trajectories."""
    return _plugin(name).pool().evaluate(source)


class DaskPool:
    """A val pool whose candidates run on Dask workers (context manager).

    ``scheduler``: address of an existing scheduler (``--backend dask``); None starts
    a LocalCluster of ``workers`` processes with one thread each (``--backend
    dask-local``), owned by the pool and closed with it.
    """

    def __init__(
        self,
        trajectories: Sequence[Any],
        *,
        workers: int = 2,
        limits: Any = None,
        oracle: Any = None,
        identity: str | None = None,
        progress: Callable[[str, int, int], None] | None = None,
        scheduler: str | None = None,
    ) -> None:
        import zstandard

        from monsearch.sandbox.limits import SandboxLimits
        from monsearch.sandbox.workers import strip_for_sandbox
        from monsearch.views.ids import new_view_id_key

        distributed = _require_distributed()
        if not trajectories:
            raise MonsearchError("the sandbox needs at least one trajectory")
        self.trajectory_ids: tuple[str, ...] = tuple(t.id for t in trajectories)
        if len(set(self.trajectory_ids)) != len(self.trajectory_ids):
            raise MonsearchError("trajectory ids must be unique within a sandbox pool")
        self.limits = limits or SandboxLimits()
        self._token = uuid.uuid4().hex[:12]
        self._name = f"monsearch-val-{self._token}"
        self._submitted = 0
        self._closed = False
        self.cluster: Any = None
        self.client: Any = None
        # Labels never leave the host: workers get what a local sandbox worker gets.
        blob = zstandard.ZstdCompressor(level=3).compress(
            pickle.dumps(strip_for_sandbox(trajectories), protocol=pickle.HIGHEST_PROTOCOL)
        )
        plugin = SandboxPlugin(
            self._name,
            blob,
            limits=self.limits,
            oracle=oracle,
            identity=identity,
            id_key=new_view_id_key(),
            ignore_sigint=scheduler is None,
        )
        try:
            if scheduler is None:
                if progress is not None:
                    progress("starting a Dask LocalCluster", 0, workers)
                import dask

                # The workers' statistical profiler samples every 10 ms: CPU taken from
                # the sandbox children on a machine whose cores they already fill.
                with dask.config.set({"distributed.worker.profile.enabled": False}):
                    self.cluster = distributed.LocalCluster(
                        n_workers=workers,
                        threads_per_worker=1,
                        processes=True,
                        host="127.0.0.1",
                        dashboard_address=None,
                        worker_dashboard_address=None,
                        silence_logs=logging.ERROR,
                        # No dashboard, but the scheduler's health routes still want a
                        # port (8787 by default, taken by any other cluster): any free one.
                        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                    )
                self.client = distributed.Client(self.cluster, set_as_default=False)
            else:
                self.client = distributed.Client(
                    scheduler, timeout=CONNECT_TIMEOUT_S, set_as_default=False
                )
                self.client.wait_for_workers(1, timeout=CONNECT_TIMEOUT_S)
        except BaseException as exc:
            self.close()
            if isinstance(exc, OSError | TimeoutError):
                raise DaskBackendError(
                    f"Dask scheduler {scheduler or '(LocalCluster)'}: {exc}"
                ) from exc
            raise
        try:
            self.client.register_plugin(plugin, name=self._name)
            self._warm_up(progress)
        except BaseException:
            self.close()
            raise

    def _warm_up(self, progress: Callable[[str, int, int], None] | None) -> None:
        """Build every current worker's SandboxPool now, so a failure shows at start."""
        addresses = sorted(self.client.scheduler_info(n_workers=-1)["workers"])
        # A preference, not a pin: a worker that dies now must not leave its task waiting.
        futures = [
            self.client.submit(
                _warm, self._name, key=f"monsearch-warm-{self._token}-{i}",
                workers=[addr], allow_other_workers=True, pure=False, retries=TASK_RETRIES,
            )
            for i, addr in enumerate(addresses)
        ]
        for i, future in enumerate(futures):
            self._result(future)
            if progress is not None:
                progress("building views on Dask workers", i + 1, len(futures))

    @property
    def worker_addresses(self) -> list[str]:
        return sorted(self.client.scheduler_info(n_workers=-1)["workers"])

    def __enter__(self) -> DaskPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Tear down the workers' SandboxPools, disconnect, and stop an owned cluster."""
        if self._closed:
            return
        self._closed = True
        import contextlib

        # Another pool's cluster closing first restores Dask's INFO logging: stay quiet.
        log = logging.getLogger("distributed")
        level = log.level
        if self.cluster is not None:
            log.setLevel(logging.ERROR)
        try:
            if self.client is not None:
                with contextlib.suppress(Exception):
                    self.client.unregister_worker_plugin(self._name)
                with contextlib.suppress(Exception):
                    self.client.close()
            if self.cluster is not None:
                with contextlib.suppress(Exception):
                    self.cluster.close()
        finally:
            log.setLevel(level)

    def evaluate(self, source: str) -> Any:
        return self.evaluate_many([source])[0]

    def evaluate_many(self, sources: Sequence[str]) -> list[Any]:
        """Evaluate candidates over the Dask workers; results in input order."""
        from distributed import KilledWorker

        if self._closed:
            raise MonsearchError("the Dask pool is closed")
        first = self._submitted
        self._submitted += len(sources)
        futures = [
            self.client.submit(
                _evaluate, self._name, source, key=f"monsearch-eval-{self._token}-{first + i}",
                retries=TASK_RETRIES, pure=False,
            )
            for i, source in enumerate(sources)
        ]
        try:
            out = []
            for future in futures:
                try:
                    result = self._result(future)
                except KilledWorker as exc:
                    # Workers died on this candidate again and again: like the local
                    # pool's "worker died twice", the candidate is blamed, the run goes on.
                    result = self._failure("crash", f"Dask workers died evaluating it ({exc})")
                if tuple(result.trajectory_ids) != self.trajectory_ids:
                    raise DaskBackendError("a Dask worker scored a different set of trajectories")
                out.append(result)
            return out
        except (OSError, TimeoutError) as exc:
            raise DaskBackendError(f"lost the Dask cluster: {exc}") from exc
        finally:
            # Interrupted (Ctrl-C, a lost cluster): nothing is left running on the workers.
            pending = [f for f in futures if not f.done()]
            if pending:
                import contextlib

                with contextlib.suppress(Exception):
                    self.client.cancel(pending)

    def _result(self, future: Any) -> Any:
        """A future's result; a cluster left without workers ends the run, never hangs it."""
        idle_since: float | None = None
        while True:
            try:
                return future.result(timeout=2.0)
            except TimeoutError:
                if future.done():
                    # Finished just as the wait timed out (a busy machine), or the task
                    # itself raised TimeoutError: its own result or error, either way.
                    return future.result()
            if self.client.scheduler_info(n_workers=-1)["workers"]:
                idle_since = None
                continue
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since > NO_WORKERS_TIMEOUT_S:
                raise DaskBackendError(
                    f"the Dask cluster has had no worker for {NO_WORKERS_TIMEOUT_S:.0f} s; "
                    "the run stops (resume it when workers are back)"
                )

    def _failure(self, status: str, message: str) -> Any:
        from monsearch.sandbox.evaluate import CandidateResult

        return CandidateResult(
            status=status, scores=None, trajectory_ids=self.trajectory_ids, message=message
        )


def dask_pool_factory(cfg: Any, corpus_path: str | Path | None = None) -> Callable[..., DaskPool]:
    """A val pool factory for :class:`~.evaluator.SearchEvaluator` (``cfg.backend`` dask*).

    ``corpus_path`` is not shipped: the trajectories travel in the worker plugin, so
    remote workers need not see the host's filesystem.
    """
    if cfg.backend not in ("dask", "dask-local"):
        raise MonsearchError(f"backend {cfg.backend!r} is not a Dask backend")
    scheduler = cfg.scheduler if cfg.backend == "dask" else None

    def make(
        trajectories: Sequence[Any],
        *,
        workers: int,
        limits: Any,
        oracle: Any = None,
        identity: str | None = None,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> DaskPool:
        return DaskPool(
            trajectories,
            workers=workers,
            limits=limits,
            oracle=oracle,
            identity=identity,
            progress=progress,
            scheduler=scheduler,
        )

    return make
