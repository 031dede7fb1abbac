"""Forging run folders, as a red team would: helpers for the run-integrity tests.

Each helper edits a copy of a real run folder the way someone with a text editor or
the ``sqlite3`` shell would. :func:`rechain` goes further: it recomputes the whole
hash chain with monsearch's own (public) recipe, the wholesale rewrite that only a
record kept outside the run folder can catch.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

BACKDOOR = '\nimport_marker = "backdoor"\n'


def copy_run(run_dir: Path, dest: Path) -> Path:
    """A copy of the run folder (the session fixture must stay untouched)."""
    shutil.copytree(run_dir, dest)
    return dest


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def selected(run_dir: Path) -> dict:
    return json.loads((run_dir / "selected.json").read_text())


def rewrite_selected(run_dir: Path, source: str) -> None:
    """selected.json and selected.py hold ``source``, with its hash recomputed."""
    doc = selected(run_dir)
    doc["source"], doc["strategy_hash"] = source, sha(source)
    (run_dir / "selected.json").write_text(json.dumps(doc, indent=2) + "\n")
    (run_dir / "selected.py").write_text(source)


def sql(run_dir: Path, statement: str, *args) -> None:
    db = sqlite3.connect(run_dir / "lineage.sqlite")
    with db:
        db.execute(statement, args)
    db.close()


def edit_source(run_dir: Path, candidate_id: str, source: str) -> None:
    """The candidate's source (and its source_hash) rewritten in lineage.sqlite."""
    sql(run_dir, "UPDATE candidates SET source = ?, source_hash = ? WHERE id = ?",
        source, sha(source), candidate_id)  # fmt: skip


def edit_frozen_record(run_dir: Path, source: str) -> None:
    """The last freezing in the chain names ``source`` (digests left as they were)."""
    from monsearch.search import chain

    db = sqlite3.connect(run_dir / "lineage.sqlite")
    pos, text = db.execute(
        "SELECT pos, record FROM chain WHERE kind = 'frozen' ORDER BY pos DESC LIMIT 1"
    ).fetchone()
    record = json.loads(text)
    record["source"], record["strategy_hash"] = source, sha(source)
    with db:
        db.execute("UPDATE chain SET record = ? WHERE pos = ?", (chain.canonical(record), pos))
    db.close()


def rechain(run_dir: Path) -> None:
    """Recompute every digest and the head of the chain: a consistent forgery."""
    from monsearch.search import chain
    from monsearch.search.lineage import LineageStore

    path = run_dir / "lineage.sqlite"
    with LineageStore(path, readonly=True) as store:
        material = store.candidate_material()
        entries = store.chain_entries()
        uid = store.get_meta("run_uid")
    previous = chain.genesis(uid)
    db = sqlite3.connect(path)
    with db:
        for pos, kind, seq, record, _ in entries:
            if kind == chain.CANDIDATE:
                content = chain.candidate_content(*material[seq])
            else:
                content = chain.frozen_content(record)
            previous = chain.link(previous, kind, content)
            db.execute("UPDATE chain SET digest = ? WHERE pos = ?", (previous, pos))
        db.execute("UPDATE meta SET value = ? WHERE key = 'chain_head'", (previous,))
    db.close()


def make_unchained(run_dir: Path) -> None:
    """The run as monsearch wrote it before the chain: lineage schema 1."""
    db = sqlite3.connect(run_dir / "lineage.sqlite")
    with db:
        db.execute("DROP TABLE chain")
        db.execute("DELETE FROM meta WHERE key IN ('run_uid', 'chain_head', 'chain_length')")
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    db.close()


def _chain_append(db: sqlite3.Connection, uid: str, kind: str, seq, record, content: str) -> None:
    """One entry linked onto the chain with the public recipe, head and length updated."""
    from monsearch.search import chain

    last = db.execute("SELECT pos, digest FROM chain ORDER BY pos DESC LIMIT 1").fetchone()
    pos, previous = (0, chain.genesis(uid)) if last is None else (last[0] + 1, last[1])
    digest = chain.link(previous, kind, content)
    db.execute("INSERT INTO chain VALUES (?, ?, ?, ?, ?)", (pos, kind, seq, record, digest))
    db.execute("UPDATE meta SET value = ? WHERE key = 'chain_head'", (digest,))
    db.execute("UPDATE meta SET value = ? WHERE key = 'chain_length'", (str(pos + 1),))


def append_forged_freezing(run_dir: Path, source: str, candidate_id: str = "c09999") -> str:
    """A forged candidate holding ``source`` appended to the lineage and frozen, chained
    with the public recipe, ``selected.json``/``selected.py`` written to match: the
    history of the run extended, not rewritten. Returns the forged candidate's id."""
    from monsearch.search import chain
    from monsearch.search.lineage import LineageStore

    doc = selected(run_dir)
    path = run_dir / "lineage.sqlite"
    db = sqlite3.connect(path)
    uid = db.execute("SELECT value FROM meta WHERE key = 'run_uid'").fetchone()[0]
    base = db.execute("SELECT seq FROM candidates WHERE id = ?", (doc["id"],)).fetchone()[0]
    seq = db.execute("SELECT MAX(seq) FROM candidates").fetchone()[0] + 1
    with db:
        db.execute(
            "INSERT INTO candidates SELECT ?, ?, parent_ids, generation, island, proposer, "
            "operator, description, ?, ?, diff, status, sandbox_status, fitness, fitness_json, "
            "artifacts_json, spend_json, timings_json FROM candidates WHERE seq = ?",
            (seq, candidate_id, source, sha(source), base),
        )
        db.execute("INSERT INTO scores SELECT ?, val FROM scores WHERE seq = ?", (seq, base))
    db.close()
    with LineageStore(path, readonly=True) as store:
        material = store.candidate_material()[seq]
    record = {**doc, "id": candidate_id, "source": source, "strategy_hash": sha(source)}
    text = chain.canonical(record)
    db = sqlite3.connect(path)
    with db:
        _chain_append(db, uid, chain.CANDIDATE, seq, None, chain.candidate_content(*material))
        _chain_append(db, uid, chain.FROZEN, None, text, chain.frozen_content(text))
    db.close()
    (run_dir / "selected.json").write_text(json.dumps(record, indent=2) + "\n")
    (run_dir / "selected.py").write_text(source)
    return candidate_id


def new_run_uid(run_dir: Path, uid: str = "f" * 32) -> None:
    """Another run id in lineage.sqlite's meta (the chain then needs :func:`rechain`)."""
    sql(run_dir, "UPDATE meta SET value = ? WHERE key = 'run_uid'", uid)


def backdoor_everywhere(run_dir: Path, source: str) -> None:
    """The frozen candidate, its freezing and the selected files all hold ``source``,
    and the chain is recomputed: a consistent rewrite of the run's history."""
    edit_source(run_dir, selected(run_dir)["id"], source)
    edit_frozen_record(run_dir, source)
    rewrite_selected(run_dir, source)
    rechain(run_dir)


def unseal(run_dir: Path) -> None:
    """The run as monsearch wrote it before it sealed its chains (no seal in meta)."""
    sql(run_dir, "DELETE FROM meta WHERE key IN ('chain_seal', 'seal_key')")
