"""The live corpus from the library's side: build it (once), find the configured one.

``live_corpus(apps)`` plays the synthetic plans against a StealthBench checkout's real
apps (:mod:`monsearch.live`) into the cache, like the default synthetic corpus: a
second call with the same checkout, code, seed and size reuses it. Unless told
otherwise it also becomes the **configured live source**: the corpus a default
``monsearch evolve`` searches on beside the synthetic one (a small record in the
cache folder names it).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The record in the cache folder that names the configured live corpus.
SOURCE_RECORD = "live-source.json"


@dataclass(frozen=True)
class LiveCorpus:
    """A live corpus on disk and what its build reported (``report``: counts, runs left
    out and why, refusals, speed, fidelity; None when it came from the cache)."""

    path: Path
    content_hash: str
    counts: dict[str, int]
    report: dict[str, Any] | None
    cached: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "content_hash": self.content_hash,
            "counts": dict(self.counts),
            "cached": self.cached,
            "report": self.report,
        }


def _fingerprint(paths: Sequence[Path]) -> str:
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(p.as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def live_corpus_path(
    apps: str | Path, seed: int, size: int, tasks: Sequence[str] | None = None, benign_mix: str | None = None,
    judge: str | None = None,
) -> Path:
    """Where the cached live corpus for this checkout, code, seed and size lives
    (``judge``: the judge giving its oracle verdicts, model and endpoint, if one does)."""
    from monsearch.live.checkout import Checkout
    from monsearch.synth.generate import GENERATOR_VERSION, _source_fingerprint, cache_dir

    checkout = Checkout(apps, list(tasks) if tasks else None)
    app_files = []
    for t in checkout.tasks.values():
        folder = t.app.parent.parent
        app_files += [f for f in (t.app, folder / "task.yaml", folder / "docker-compose.yaml") if f.is_file()]
    live_root = Path(__file__).resolve().parents[2] / "live"
    if not live_root.is_dir():  # installed: the live package sits beside this one
        import monsearch.live as live_pkg

        live_root = Path(live_pkg.__file__).resolve().parent
    code = _fingerprint([p for p in live_root.rglob("*.py")])
    key = (
        f"live-v{GENERATOR_VERSION}-{_source_fingerprint()}-{code}-{_fingerprint(app_files)}"
        f"-s{seed}-n{size}" + ("-" + "-".join(sorted(checkout.tasks)) if tasks else "")
        + ("" if benign_mix in (None, "paper") else "-mix-" + hashlib.sha256(str(benign_mix).encode()).hexdigest()[:8])
        + ("" if judge is None else "-judge-" + hashlib.sha256(judge.encode()).hexdigest()[:8])
    )
    return cache_dir() / "corpora" / key


def live_corpus(
    apps: str | Path,
    out: str | Path | None = None,
    *,
    size: int | None = None,
    seed: int = 0,
    workers: int | None = None,
    tasks: Sequence[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    configure: bool = True,
    benign_mix: str | None = None,
    oracle: Any = None,
    judge_progress: Callable[[int, int], None] | None = None,
) -> LiveCorpus:
    """Play the live corpus (see the module doc); ``out``: a folder of your own instead
    of the cache (never reused: always played). ``configure``: record it as the live
    source of default runs. ``oracle``: an llm
    :class:`~monsearch.oracle.session.OracleConfig` whose judge gives the runs' oracle
    verdicts (default: the simulated judge's)."""
    import os

    from monsearch.corpora.store import MANIFEST, corpus_lock, read_manifest
    from monsearch.live.generate import DEFAULT_SIZE, generate_live

    size = DEFAULT_SIZE if size is None else size
    workers = workers or max(2, os.cpu_count() or 2)
    judge = None if oracle is None else f"{oracle.llm.model}@{oracle.llm.base_url}"
    target = Path(out) if out is not None else live_corpus_path(apps, seed, size, tasks, benign_mix, judge)
    if out is None and (target / MANIFEST).is_file():
        manifest = read_manifest(target)
        result = LiveCorpus(target, manifest.content_hash, _counts(target), None, True)
    else:
        with corpus_lock(target, wait=True):
            built = generate_live(
                apps, target, size=size, seed=seed, workers=workers, tasks=tasks,
                progress=progress, benign_mix=benign_mix, oracle=oracle, judge_progress=judge_progress,
            )  # fmt: skip
        result = LiveCorpus(built.path, built.content_hash, built.counts, built.report, False)
    if configure:
        configure_live_source(result.path, apps=apps, seed=seed, size=size)
    return result


def _counts(folder: Path) -> dict[str, int]:
    from monsearch.corpora.store import read_manifest

    manifest = read_manifest(folder)
    return {name: part.count for name, part in manifest.parts.items()}


def configure_live_source(path: str | Path, **facts: Any) -> Path:
    """Record ``path`` as the live corpus default runs search on beside the synthetic one."""
    from monsearch.files import atomic_write
    from monsearch.synth.generate import cache_dir

    record = {"path": str(Path(path).resolve()), **{k: str(v) for k, v in facts.items()}}
    return atomic_write(cache_dir() / SOURCE_RECORD, json.dumps(record, indent=1) + "\n")


def configured_live_corpus() -> Path | None:
    """The configured live corpus, if one is recorded and still on disk."""
    from monsearch.corpora.store import MANIFEST
    from monsearch.synth.generate import cache_dir

    try:
        record = json.loads((cache_dir() / SOURCE_RECORD).read_text(encoding="utf-8"))
        path = Path(record["path"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return path if (path / MANIFEST).is_file() else None
