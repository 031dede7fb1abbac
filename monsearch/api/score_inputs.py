"""What :func:`monsearch.score` reads: files, folders, globs and stdin, as JSON documents.

Every input named (on the command line, or in the call) becomes ``(name, document or InputError)``
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
- ``-`` is stdin: one JSON document, or JSONL; read as a stream, never more than
  the size cap (and one byte) at a time, so 200 MB piped in is refused, not held;
- a glob (``runs/**/*.json``) is expanded without following links to folders
  (:mod:`monsearch.api.safe_glob`: a link loop would never end).

Agents write these files, so nothing is opened before it is known to be a regular
file (a FIFO would block the read forever): FIFOs, sockets and devices are refused
by name, and the check is made again on the open descriptor.

Turning a document into a trajectory is the monitor plugin's ``load``, so the
view and the score are exactly those the plugin's users get.
"""

from __future__ import annotations

import io
import stat
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import zstandard

from monsearch.api.safe_glob import MAX_FOLDERS, GlobTooLargeError, has_magic, safe_glob
from monsearch.corpora.errors import InputError
from monsearch.corpora.readers.jsonio import (
    DEFAULT_MAX_BYTES,
    describe,
    file_kind,
    iter_jsonl_stream,
    open_regular,
    parse_bytes,
    read_capped,
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


def _listed(folder: Path) -> list[tuple[Path, str | None]]:
    """The files of ``folder`` a score reads, at any depth, each with why it cannot be
    read (None when it can). Path.rglob does not descend through links to folders."""
    found = []
    for p in folder.rglob("*"):
        if not p.name.endswith(SUFFIXES):
            continue
        try:
            mode = p.stat().st_mode
        except OSError as exc:
            found.append((p, f"expected a readable file, got {exc.strerror or exc}"))
            continue
        if stat.S_ISDIR(mode):
            continue
        found.append((p, None if stat.S_ISREG(mode) else _not_regular(mode)))
    found.sort()
    # A corpus folder's manifest describes its parts; it is not a trajectory.
    parts = {p.parent for p, _ in found if p.name.endswith(".jsonl.zst")}
    return [
        (p, problem)
        for p, problem in found
        if p.name not in SIDE_FILES and not (p.name == MANIFEST and p.parent in parts)
    ]


def _not_regular(mode: int) -> str:
    return f"expected a regular file, got {file_kind(mode)}"


def expand_inputs(args: Iterable[str]) -> Iterator[tuple[str, Path | None, str | None]]:
    """``(name, path or None for stdin, problem)`` for every input named."""
    for arg in args:
        if arg == "-":
            yield "-", None, None
        else:
            yield from _expand(arg, may_glob=True)


def _expand(arg: str, *, may_glob: bool) -> Iterator[tuple[str, Path | None, str | None]]:
    """One path named by the user (``may_glob``: a pattern if nothing has that name),
    or matched by a pattern."""
    path = Path(arg)
    try:
        mode = path.stat().st_mode
    except OSError as exc:  # missing, a link loop, a path through a file, no permission...
        if may_glob and has_magic(arg):
            yield from _globbed(arg)
        elif isinstance(exc, FileNotFoundError):
            yield arg, None, "no such file"
        else:
            yield arg, None, f"expected a readable file, got {exc.strerror or exc}"
        return
    if stat.S_ISDIR(mode):
        files = _listed(path)
        if not files:
            yield arg, None, f"no {', '.join(SUFFIXES)} files in this folder"
        for f, problem in files:
            yield str(f), (f if problem is None else None), problem
    elif stat.S_ISREG(mode):
        yield arg, path, None
    else:
        yield arg, None, _not_regular(mode)


def _globbed(pattern: str) -> Iterator[tuple[str, Path | None, str | None]]:
    try:
        matches = safe_glob(pattern)
    except GlobTooLargeError:
        yield pattern, None, f"this pattern lists more than {MAX_FOLDERS} folders"
        return
    if not matches:
        yield pattern, None, "no file matches this pattern"
    for m in matches:
        yield from _expand(m, may_glob=False)  # (a match named "*.json" is that file)


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


def _decompressed_json(fh: BinaryIO, name: str, max_bytes: int) -> Any:
    with io.BufferedReader(_Unzstd(fh, name)) as stream:
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
        with open_regular(path, name) as fh:
            compressed = fh.read(len(ZSTD_MAGIC)) == ZSTD_MAGIC
            fh.seek(0)
            if not compressed:
                if not _is_jsonl(path):
                    yield name, parse_bytes(read_capped(fh, name, max_bytes), name)
                    return
                yield from _jsonl_documents(fh, name, max_bytes)
                return
            if not _is_jsonl(path):
                yield name, _decompressed_json(fh, name, max_bytes)
                return
            with io.BufferedReader(_Unzstd(fh, name)) as stream:
                yield from _jsonl_documents(stream, name, max_bytes)
    except InputError as err:
        yield name, err
    except zstandard.ZstdError as exc:
        yield name, InputError(name, "", "zstandard-compressed data", f"corrupt data ({exc})")
    except OSError as exc:
        yield name, InputError(name, "", "a readable file", exc.strerror or str(exc))


class _Rest(io.RawIOBase):
    """What was read of a stream already, then the rest of the stream."""

    def __init__(self, head: bytes, stream: BinaryIO) -> None:
        self.head = memoryview(head)
        self.stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        if self.head:
            n = min(len(buf), len(self.head))
            buf[:n] = self.head[:n]
            self.head = self.head[n:]
            return n
        data = self.stream.read(len(buf))
        buf[: len(data)] = data
        return len(data)


def read_stdin(
    *, max_bytes: int = DEFAULT_MAX_BYTES, stream: BinaryIO | None = None
) -> Iterator[Document]:
    """Stdin as one JSON document, or as JSONL when it is not one document.

    At most ``max_bytes`` and one byte are read before deciding: more than that is not
    one document under the cap, so it is JSONL, read line by line under the same cap
    per line (an over-long line is skipped in chunks, never held), unless its first
    line is not a JSON document by itself: then it is one document over the cap, and
    it is refused without reading further.
    """
    source = sys.stdin.buffer if stream is None else stream
    head = source.read(max_bytes + 1)
    if len(head) <= max_bytes:
        try:
            yield "-", parse_bytes(head, "-")
            return
        except InputError as err:
            first = err
        if len([ln for ln in head.splitlines() if ln.strip()]) < 2:
            yield "-", first
            return
        yield from _jsonl_documents(io.BytesIO(head), "-", max_bytes)
        return
    if not _starts_with_a_document(head, max_bytes):
        expected = f"a document of at most {max_bytes} bytes (or JSONL lines of at most that)"
        yield "-", InputError("-", "", expected, "more")
        return
    with io.BufferedReader(_Rest(head, source)) as rest:
        yield from _jsonl_documents(rest, "-", max_bytes)


def _starts_with_a_document(head: bytes, max_bytes: int) -> bool:
    """Whether the first non-blank line of ``head`` is a JSON value by itself."""
    for line in head.split(b"\n"):
        if line.strip():
            if len(line) > max_bytes:
                return False
            try:
                parse_bytes(line, "-")
            except InputError:
                return False
            return True
    return False


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
