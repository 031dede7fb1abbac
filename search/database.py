"""openevolve's program database (MAP-Elites per island, ring migration, elite
archive), made deterministic.

openevolve 0.4.0 is not reproducible as shipped (shared/research/openevolve-0.4.0.md
§11): program ids are ``uuid4``, ties are broken by wall-clock timestamps, its
sampling draws from the global ``random``, and island membership is a ``set`` of
id strings whose order follows string hashes. Here:

- every program the search adds has the lineage id and a timestamp equal to its
  sequence number; migrant copies get ids and timestamps from a counter;
- the global ``random`` is reseeded from (run seed, sequence number) before every
  draw (:meth:`ProgramsDatabase.sample`), so a draw depends only on the database's
  state and on which candidate is being proposed — what makes resume-by-replay exact;
- island membership and the elite archive are insertion-ordered sets
  (:class:`OrderedIdSet`) instead of ``set``: iterating them no longer follows string
  hashes, so a run is the same under any ``PYTHONHASHSEED`` and needs no re-exec.

The database is a *view* for parent selection. It may evict programs; the lineage
store (:mod:`.lineage`) never does.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import random
import uuid
from collections.abc import Iterable, Iterator, MutableSet
from dataclasses import dataclass
from typing import Any

from .config import SearchConfig


class OrderedIdSet(MutableSet):
    """A set of program ids that iterates in insertion order (a dict underneath).

    openevolve keeps islands and the archive as ``set``; their iteration order, and so
    every ``random.choice(list(island))``, would depend on the interpreter's string
    hash seed. This set offers the operations openevolve calls on them.
    """

    __slots__ = ("_items",)

    def __init__(self, items: Iterable[str] = ()) -> None:
        self._items: dict[str, None] = dict.fromkeys(items)

    def __contains__(self, item: object) -> bool:
        return item in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"OrderedIdSet({list(self._items)!r})"

    def add(self, item: str) -> None:
        self._items[item] = None

    def discard(self, item: str) -> None:
        self._items.pop(item, None)

    def copy(self) -> OrderedIdSet:
        return OrderedIdSet(self._items)

    def intersection_update(self, other: Iterable[Any]) -> None:
        keep = other if isinstance(other, (set, frozenset, dict, OrderedIdSet)) else set(other)
        self._items = {k: None for k in self._items if k in keep}

    @classmethod
    def _from_iterable(cls, it: Iterable[str]) -> OrderedIdSet:
        return cls(it)


def derived_seed(seed: int, seq: int, purpose: str) -> int:
    """A 64-bit seed for one purpose of one candidate: independent of everything else."""
    digest = hashlib.sha256(f"{seed}:{seq}:{purpose}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


class _Counter:
    """Stands in for ``uuid`` and ``time`` inside openevolve's database module."""

    def __init__(self, seed: int) -> None:
        self._seed = seed
        self._n = 0
        self._t = 0.0

    def uuid4(self) -> uuid.UUID:
        self._n += 1
        return uuid.uuid5(uuid.NAMESPACE_OID, f"monsearch-migrant:{self._seed}:{self._n}")

    def time(self) -> float:
        self._t += 1e-3
        return 1e9 + self._t


@contextlib.contextmanager
def _deterministic_module(seed: int) -> Iterator[_Counter]:
    import openevolve.database as oedb

    counter = _Counter(seed)
    saved = (oedb.uuid, oedb.time)
    oedb.uuid, oedb.time = counter, counter  # type: ignore[assignment]
    try:
        yield counter
    finally:
        oedb.uuid, oedb.time = saved


@dataclass(frozen=True)
class Sampled:
    parent_id: str
    inspiration_ids: tuple[str, ...]
    island: int


class ProgramsDatabase:
    """MAP-Elites islands over the run's programs (openevolve's ``ProgramDatabase``).

    Feature dimensions: program size (openevolve's ``complexity``) and how much the
    program leans on the oracle (``oracle_rho``, raw, binned by openevolve), so that
    programs that escalate and programs that do not both keep a niche.
    """

    def __init__(self, cfg: SearchConfig, seed: int) -> None:
        from openevolve.config import DatabaseConfig
        from openevolve.database import Program

        logging.getLogger("openevolve").setLevel(logging.WARNING)
        self._Program = Program
        self._seed = seed
        self._cfg = cfg
        self._module = _deterministic_module(seed)
        self._counter = self._module.__enter__()
        state = random.getstate()
        try:
            self._db = _Database(
                DatabaseConfig(
                    population_size=cfg.population,
                    archive_size=cfg.archive,
                    num_islands=cfg.islands,
                    migration_interval=cfg.migration_interval,
                    migration_rate=cfg.migration_rate,
                    exploration_ratio=cfg.exploration_ratio,
                    exploitation_ratio=cfg.exploitation_ratio,
                    feature_dimensions=["complexity", "oracle_rho"],
                    feature_bins=6,
                    random_seed=seed,
                    log_prompts=False,
                    cleanup_old_artifacts=False,
                    max_snapshot_artifacts=0,
                ),
                self._counter,
            )
            # Hash-independent iteration (see OrderedIdSet); both start empty.
            self._db.islands = [OrderedIdSet() for _ in self._db.islands]
            self._db.archive = OrderedIdSet()
        finally:
            random.setstate(state)

    def close(self) -> None:
        self._module.__exit__(None, None, None)

    def __len__(self) -> int:
        return len(self._db.programs)

    def add(
        self,
        program_id: str,
        source: str,
        fitness: float,
        oracle_rho: float,
        *,
        seq: int,
        parent_id: str | None,
        generation: int,
        island: int,
    ) -> None:
        """Admit an evaluated program to ``island``, then migrate if it is due."""
        program = self._Program(
            id=program_id,
            code=source,
            language="python",
            parent_id=parent_id,
            generation=generation,
            timestamp=float(seq),
            iteration_found=seq,
            metrics={"combined_score": float(fitness), "oracle_rho": float(oracle_rho)},
            metadata={"island": island},
        )
        with self._seeded(seq, "admit"):
            self._db.add(program, iteration=seq, target_island=island)
            self._db.increment_island_generation(island)
            if self._db.should_migrate():
                self._db.migrate_programs()

    def sample(self, seq: int, island: int, n_inspirations: int) -> Sampled:
        """Parent and inspirations for candidate ``seq``, drawn from ``island``."""
        with self._seeded(seq, "sample"):
            parent, inspirations = self._db.sample_from_island(island, n_inspirations)
        return Sampled(
            _original(parent), tuple(_original(p) for p in inspirations), island % self._cfg.islands
        )

    def best_id(self) -> str | None:
        best = self._db.get_best_program()
        return None if best is None else _original(best)

    def island_stats(self) -> list[dict[str, Any]]:
        return self._db.get_island_stats()

    @contextlib.contextmanager
    def _seeded(self, seq: int, purpose: str) -> Iterator[None]:
        state = random.getstate()
        random.seed(derived_seed(self._seed, seq, purpose))
        try:
            yield
        finally:
            random.setstate(state)


def _original(program: Any) -> str:
    """The lineage id behind a database entry (migrant copies point at their original)."""
    if program.metadata.get("migrant") and program.parent_id:
        return program.metadata.get("origin", program.parent_id)
    return program.id


def _make_database_class() -> type:
    from openevolve.database import Program, ProgramDatabase

    class Database(ProgramDatabase):  # type: ignore[misc, valid-type]
        def __init__(self, config: Any, counter: _Counter) -> None:
            self._counter = counter
            super().__init__(config)

        def _migrate_one(self, program_id: str, target_island: int) -> None:
            # As openevolve's, but with a counter id and timestamp (its default is the
            # wall clock), and the lineage origin kept through chains of migrations.
            migrant = self.programs.get(program_id)
            if migrant is None or migrant.metadata.get("migrant", False):
                return
            if any(
                self.programs[pid].code == migrant.code
                for pid in sorted(self.islands[target_island])
                if pid in self.programs
            ):
                return
            copy = Program(
                id=str(self._counter.uuid4()),
                code=migrant.code,
                changes_description=migrant.changes_description,
                language=migrant.language,
                parent_id=migrant.id,
                generation=migrant.generation,
                timestamp=self._counter.time(),
                iteration_found=migrant.iteration_found,
                metrics=migrant.metrics.copy(),
                metadata={
                    **migrant.metadata,
                    "island": target_island,
                    "migrant": True,
                    "origin": migrant.metadata.get("origin", migrant.id),
                },
            )
            self.add(copy, target_island=target_island)

    return Database


class _LazyDatabase:
    _cls: type | None = None

    def __call__(self, config: Any, counter: _Counter) -> Any:
        if _LazyDatabase._cls is None:
            _LazyDatabase._cls = _make_database_class()
        return _LazyDatabase._cls(config, counter)


_Database = _LazyDatabase()
