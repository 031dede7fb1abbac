"""The program database draws the same parents under any string hash seed.

openevolve keeps islands and the archive as ``set``s of id strings; iterating them
follows the interpreter's hash seed. monsearch swaps in an insertion-ordered set, so
the search needs no ``PYTHONHASHSEED`` and no re-exec of the command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from monsearch.search.config import SearchConfig
from monsearch.search.database import OrderedIdSet, ProgramsDatabase

_SCRIPT = r"""
import json
from monsearch.search.config import SearchConfig
from monsearch.search.database import ProgramsDatabase

db = ProgramsDatabase(SearchConfig(islands=3, population=12, archive=6, migration_interval=4), 5)
draws = []
for seq in range(60):
    island = seq % 3
    db.add(f"cand-{seq:03d}-{'xyz'[seq % 3] * (seq % 7)}", f"def score(t):\n    return {seq}\n",
           (seq * 37 % 101) / 101, 0.0, seq=seq, parent_id=None, generation=seq // 3,
           island=island)
    s = db.sample(seq, island, 3)
    draws.append([s.parent_id, list(s.inspiration_ids), s.island])
print(json.dumps({"draws": draws, "best": db.best_id()}))
"""


def _draws(hash_seed: str) -> dict:
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, check=True,
        timeout=300,
    )
    return json.loads(out.stdout)


def test_sampling_does_not_follow_the_hash_seed():
    first = _draws("1")
    assert len(first["draws"]) == 60
    # Enough programs that eviction, migration and archive sampling all took part.
    assert len({d[0] for d in first["draws"]}) > 10
    for seed in ("2", "977", "random"):
        assert _draws(seed) == first


def test_ordered_id_set_keeps_insertion_order_and_set_semantics():
    s = OrderedIdSet(["b", "a", "c"])
    s.add("a")
    s.add("d")
    s.discard("zz")
    assert list(s) == ["b", "a", "c", "d"]
    assert "c" in s and len(s) == 4
    s.intersection_update({"d": 1, "b": 2})
    assert list(s) == ["b", "d"]
    diff = OrderedIdSet(["x", "y", "z"]) - {"y"}
    assert isinstance(diff, OrderedIdSet) and list(diff) == ["x", "z"]
    copy = s.copy()
    copy.add("q")
    assert list(s) == ["b", "d"] and frozenset(copy) == {"b", "d", "q"}


def test_the_database_uses_ordered_sets():
    db = ProgramsDatabase(SearchConfig(), 0)
    try:
        assert all(isinstance(i, OrderedIdSet) for i in db._db.islands)
        assert isinstance(db._db.archive, OrderedIdSet)
    finally:
        db.close()
