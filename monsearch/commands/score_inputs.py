"""What ``monsearch score`` reads: files, folders, globs and stdin, as JSON documents.

Every input named on the command line becomes ``(name, document or InputError)``
pairs, so one unreadable input is reported by name and the others still scored:

- a ``.json`` file is one document, a ``.jsonl`` file one per non-blank line (a
  JSONL file with none is an error: it holds no trajectory);
- either may be zstandard-compressed (``.json.zst``, ``.jsonl.zst``: the parts
  the corpus store writes); it is decompressed as a stream, under the same size
  cap as a plain file (per document, per JSONL line), so a small file that
  decompresses to gigabytes is refused, never held in memory;
- a folder gives every such file in it, at any depth, less the verdict and
  status files of a StealthBench results tree and the manifest of a monsearch
  corpus folder (its parts are read);
- ``-`` is stdin: one JSON document, or JSONL.

Turning a document into a trajectory is the monitor plugin's ``load``, so the
view and the score are exactly those the plugin's users get.
"""

from __future__ import annotations

import glob
import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import zstandard

from monsearch.corpora.errors import InputError
from monsearch.corpora.readers.jsonio import (
    DEFAULT_MAX_BYTES,
    describe,
    iter_jsonl_stream,
    load_json,
    parse_bytes,
)
from monsearch.corpora.readers.stealthbench import (
    METADATA_FILE,
    PANEL_FILE,
    STATUS_FILE,
    VERDICT_FILE,
)
from monsearch.corpora.store import MANIFEST

#: The other JSON files of a StealthBench results tree: verdicts and metadata, not
#: trajectories.
SIDE_FILES = frozenset({VERDICT_FILE, PANEL_FILE, STATUS_FILE, METADATA_FILE})
#: Names of the files a folder is searched for.
SUFFIXES = (".json", ".jsonl", ".json.zst", ".jsonl.zst")
#: The first bytes of a zstandard frame (RFC 8878), whatever the file is called.
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

#: ``(name, JSON value or the error that kept it from being read)``.
Document = tuple[str, Any]


def _is_glob(text: str) -> bool:
    return any(c in text for c in "*?[")


def _listed(folder: Path) -> list[Path]:
    files = sorted(p for p in folder.rglob("*") if p.name.endswith(SUFFIXES) and p.is_file())
    # A corpus folder's manifest describes its parts; it is not a trajectory.
    parts = {p.parent for p in files if p.name.endswith(".jsonl.zst")}
    return [
        p
        for p in files
        if p.name not in SIDE_FILES and not (p.name == MANIFEST and p.parent in parts)
    ]


def expand_inputs(args: tuple[str, ...]) -> Iterator[tuple[str, Path | None, str | None]]:
    """``(name, path or None for stdin, problem)`` for every input named on the command line."""
    for arg in args:
        if arg == "-":
            yield "-", None, None
            continue
        path = Path(arg)
        if not path.exists() and _is_glob(arg):
            matches = sorted(glob.glob(arg, recursive=True))
            if not matches:
                yield arg, None, "no file matches this pattern"
            for m in matches:
                yield from expand_inputs((m,))
            continue
        if path.is_dir():
            files = _listed(path)
            if not files:
                yield arg, None, f"no {', '.join(SUFFIXES)} files in this folder"
            for f in files:
                yield str(f), f, None
            continue
        if not path.is_file():
            yield arg, None, "no such file"
            continue
        yield arg, path, None


def _compressed(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(len(ZSTD_MAGIC)) == ZSTD_MAGIC
    except OSError:
        return False  # reading it properly reports why


def _is_jsonl(path: Path) -> bool:
    name = path.name.removesuffix(".zst")
    return name.endswith(".jsonl")


class _Unzstd(io.RawIOBase):
    """A zstandard file as a stream of its decompressed bytes, in bounded memory.

    zstandard's own stream reader ends quietly where a truncated file ends; this
    one says so. It feeds the decompressor a little input at a time: one block
    of a few bytes can stand for 128 KB of output.
    """

    FEED = 512

    def __init__(self, fh: BinaryIO, name: str) -> None:
        self.fh, self.name = fh, name
        self.dctx = zstandard.ZstdDecompressor()
        self.frame = self.dctx.decompressobj()
        self.in_frame = False  # the current frame has had input, and has not ended
        self.out = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        while not self.out:
            data = self.fh.read(self.FEED)
            if not data:
                if self.in_frame:
                    raise InputError(
                        self.name,
                        "",
                        "zstandard-compressed data",
                        "a file cut short inside a frame",
                    )
                return 0
            self.out = memoryview(self._feed(data))
        n = min(len(buf), len(self.out))
        buf[:n] = self.out[:n]
        self.out = self.out[n:]
        return n

    def _feed(self, data: bytes) -> bytes:
        parts = []
        while data:
            self.in_frame = True
            parts.append(self.frame.decompress(data))
            if not self.frame.eof:
                break
            # A file may hold several frames: the next starts in what this one left.
            data = self.frame.unused_data
            self.frame = self.dctx.decompressobj()
            self.in_frame = False
        return b"".join(parts)


def _decompressed_json(path: Path, name: str, max_bytes: int) -> Any:
    with path.open("rb") as fh, io.BufferedReader(_Unzstd(fh, name)) as stream:
        data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InputError(
            name, "", f"a document of at most {max_bytes} bytes once decompressed", "more"
        )
    return parse_bytes(data, name)


def _jsonl_documents(stream: BinaryIO, name: str, max_bytes: int) -> Iterator[Document]:
    empty = True
    for line, value in iter_jsonl_stream(stream, name, max_bytes=max_bytes):
        empty = False
        yield f"{name}:{line}", value
    if empty:
        expected = "at least one trajectory (a JSON document per line)"
        yield name, InputError(name, "", expected, "none (the file is empty or blank)")


def read_documents(
    path: Path, name: str, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> Iterator[Document]:
    """The JSON documents of one file, each named ``name`` or ``name:line`` (JSONL)."""
    try:
        if not _compressed(path):
            if not _is_jsonl(path):
                yield name, load_json(path, name, max_bytes=max_bytes)
                return
            with path.open("rb") as fh:
                yield from _jsonl_documents(fh, name, max_bytes)
            return
        if not _is_jsonl(path):
            yield name, _decompressed_json(path, name, max_bytes)
            return
        with path.open("rb") as fh, io.BufferedReader(_Unzstd(fh, name)) as stream:
            yield from _jsonl_documents(stream, name, max_bytes)
    except InputError as err:
        yield name, err
    except zstandard.ZstdError as exc:
        yield name, InputError(name, "", "zstandard-compressed data", f"corrupt data ({exc})")
    except OSError as exc:
        yield name, InputError(name, "", "a readable file", exc.strerror or str(exc))


def read_stdin(*, max_bytes: int = DEFAULT_MAX_BYTES) -> Iterator[Document]:
    """Stdin as one JSON document, or as JSONL when it is not one document."""
    data = sys.stdin.buffer.read()
    try:
        yield "-", parse_bytes(data, "-")
        return
    except InputError as err:
        first = err
    if len([ln for ln in data.splitlines() if ln.strip()]) < 2:
        yield "-", first
        return
    yield from _jsonl_documents(io.BytesIO(data), "-", max_bytes)


def error_text(err: InputError, document: Any = None) -> str:
    """``err`` without the input's name (the caller prints it once, before this).

    An error about the document as a whole (``$``) says what the document is,
    described from the document itself when the caller has it.
    """
    got = err.got
    if err.field == "$" and isinstance(document, dict):
        got = describe(document)
    where = f"{err.field}: " if err.field else ""
    return f"{where}expected {err.expected}, got {got}"
