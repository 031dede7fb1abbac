"""Views built once and cached on disk: reused, validated, never stale, never required."""

from __future__ import annotations

import numpy as np
from sandbox_support import BENIGN, make_trajectories

from monsearch.sandbox.evaluate import SandboxPool
from monsearch.views.cache import MAX_ENTRIES, ensure_views_file, views_key

TRAJS = make_trajectories(12)


def test_second_pool_reuses_the_views_and_scores_the_same(tmp_path):
    with SandboxPool(TRAJS, workers=1, cache_dir=tmp_path) as first:
        a = first.evaluate(BENIGN)
        assert not first.views_cached
    with SandboxPool(TRAJS, workers=1, cache_dir=tmp_path) as second:
        b = second.evaluate(BENIGN)
        assert second.views_cached
    with SandboxPool(TRAJS, workers=1, cache_dir=None) as uncached:
        c = uncached.evaluate(BENIGN)
    assert a.ok and np.array_equal(a.scores, b.scores) and np.array_equal(a.scores, c.scores)
    assert len(list((tmp_path / "views").glob("*.pkl"))) == 1


def test_the_key_follows_content_identity_and_order():
    ids = [t.id for t in TRAJS]
    base = views_key(ids, "corpus-abc/val", None)
    assert views_key(ids, "corpus-abc/val", None) == base
    assert views_key(ids, "corpus-abd/val", None) != base
    assert views_key(ids[::-1], "corpus-abc/val", None) != base
    assert views_key(ids, None, b"blob-1") != views_key(ids, None, b"blob-2")


def test_a_corrupt_or_truncated_cache_file_is_rebuilt(tmp_path):
    path, cached = ensure_views_file(TRAJS, "k" * 32, tmp_path, tmp_path / "fallback")
    assert not cached and path.is_file()
    assert ensure_views_file(TRAJS, "k" * 32, tmp_path, tmp_path / "fallback")[1]
    path.write_bytes(path.read_bytes()[:100])
    again, cached = ensure_views_file(TRAJS, "k" * 32, tmp_path, tmp_path / "fallback")
    assert not cached and again == path
    pools = tmp_path / "pools"
    with SandboxPool(TRAJS, workers=1, cache_dir=pools) as pool:
        before = pool.evaluate(BENIGN).scores
    (entry,) = (pools / "views").glob("*.pkl")
    entry.write_bytes(entry.read_bytes()[:-10])
    with SandboxPool(TRAJS, workers=1, cache_dir=pools) as pool:
        assert not pool.views_cached
        assert np.array_equal(pool.evaluate(BENIGN).scores, before)


def test_an_unwritable_cache_falls_back_to_the_pools_own_folder(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    with SandboxPool(TRAJS, workers=1, cache_dir=blocker / "cache") as pool:
        assert pool.evaluate(BENIGN).ok and not pool.views_cached


def test_old_entries_are_pruned(tmp_path):
    for i in range(MAX_ENTRIES + 3):
        ensure_views_file(TRAJS[:2], f"{i:032d}", tmp_path, tmp_path / "fallback")
    assert len(list((tmp_path / "views").glob("*.pkl"))) == MAX_ENTRIES
    assert len(list((tmp_path / "views").glob("*.sha256"))) == MAX_ENTRIES


def test_views_in_the_cache_hold_no_salted_id(tmp_path):
    import pickle

    path, _ = ensure_views_file(TRAJS, "z" * 32, tmp_path, tmp_path / "fallback")
    views = pickle.loads(path.read_bytes())
    assert {v["id"] for v in views} == {""}


def test_the_code_fingerprint_covers_every_module_of_the_view(tmp_path):
    # An edit to any module the view is built from must change the key (the list of
    # names it used to hash missed expansions.py, and would miss any module split off).
    import shutil
    from pathlib import Path

    from monsearch.views import cache

    folder = tmp_path / "views"
    source = Path(cache.__file__).parent
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns("__pycache__"))
    assert cache._code_fingerprint(source) == cache.VIEW_CODE_FINGERPRINT
    before = cache._code_fingerprint(folder)
    for name in ("expansions.py", "python_calls.py", "shell_words.py", "request.py"):
        path = folder / name
        original = path.read_text(encoding="utf-8")
        path.write_text(original + "\n# edited\n", encoding="utf-8")
        assert cache._code_fingerprint(folder) != before, name
        path.write_text(original, encoding="utf-8")
    assert cache._code_fingerprint(folder) == before
