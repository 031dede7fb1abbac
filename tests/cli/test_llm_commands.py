"""``monsearch llm models`` and ``monsearch llm install``, through the real entry point.

``install`` runs pip in another Python: here a stand-in "Python" (a shell script)
records the arguments and the CMAKE_ARGS it was given, so the commands the helper
really runs are checked without building llama.cpp (the build itself is measured in
docs/local-llm.md).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from cli_support import run_main
from paths import REPO

from monsearch.local_llm.catalogue import MODELS
from monsearch.local_llm.install import (
    LLAMA_CPP_VERSION,
    PORTABLE,
    REQUIREMENT,
    cmake_args,
    cpu_flags,
)

FULL_X86 = {"sse4_2", "avx", "avx2", "fma", "f16c", "bmi2", "avx512f", "amx_tile", "amx_int8"}


def test_models_fit_80_columns_and_name_every_model(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("MONSEARCH_MODEL_CACHE", str(tmp_path / "m"))
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / MODELS["qwen2.5-coder-0.5b"].file_name).write_bytes(b"GGUF")
    code, out, err = run_main(capsys, "llm", "models")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert all(len(line) <= 80 for line in lines), [len(x) for x in lines]
    for name, entry in MODELS.items():
        (row,) = [line for line in lines if line.startswith(name + " ")]
        assert ("not fetched" in row) == (name != "qwen2.5-coder-0.5b")
        assert f"{entry.size / 1e9:.1f} GB file" in row
        assert any(entry.title in line for line in lines)
    assert lines[-1] == f"cache: {tmp_path / 'm'}"


def test_models_escape_the_cache_path(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("MONSEARCH_MODEL_CACHE", str(tmp_path / "a\x1b]0;x\x07\nerror: forged"))
    code, out, _ = run_main(capsys, "llm", "models")
    assert code == 0 and "\x1b" not in out and "\nerror: forged" not in out
    assert out.splitlines()[-1].endswith("a\\x1b]0;x\\x07\\nerror: forged")


def test_an_unknown_model_name_is_one_escaped_line(capsys):
    code, out, err = run_main(capsys, "llm", "fetch", "x\x1b[2Jy\nerror: forged")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "\x1b" not in err and "no local model named" in err


def test_the_local_llm_extra_is_what_install_builds():
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert config["project"]["optional-dependencies"]["local-llm"] == [REQUIREMENT]


def test_the_portable_build_turns_off_native_multimodal_and_what_the_cpu_lacks():
    assert cmake_args(FULL_X86, x86_64=True) == list(PORTABLE)
    assert PORTABLE == ("-DGGML_NATIVE=OFF", "-DLLAVA_BUILD=OFF")
    old = FULL_X86 - {"avx2", "fma", "f16c", "bmi2", "avx512f", "amx_tile", "amx_int8"}
    assert cmake_args(old, x86_64=True) == [
        *PORTABLE, "-DGGML_AVX2=OFF", "-DGGML_FMA=OFF", "-DGGML_F16C=OFF", "-DGGML_BMI2=OFF",
    ]  # fmt: skip
    assert cmake_args(None, x86_64=True) == list(PORTABLE)  # flags unknown: the baseline
    assert cmake_args(set(), x86_64=False) == list(PORTABLE)  # not x86: no x86 options
    assert cmake_args(FULL_X86, ["-DGGML_AVX512=ON"], x86_64=True)[-1] == "-DGGML_AVX512=ON"


def test_cpu_flags_are_read_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse4_2 avx avx2\nbugs\t\t: none\n")
    assert cpu_flags(info) == {"fpu", "sse4_2", "avx", "avx2"}
    assert cpu_flags(tmp_path / "none") is None


def test_install_dry_run_prints_the_commands(capsys):
    code, out, err = run_main(capsys, "llm", "install", "--dry-run", "--python", "py")
    assert code == 0 and err == ""
    build, deps = out.splitlines()
    assert build.startswith("CMAKE_ARGS='-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF")
    assert "py -m pip install --no-cache-dir --force-reinstall --no-deps" in build
    assert build.endswith(f"llama-cpp-python=={LLAMA_CPP_VERSION}")
    assert deps == f"py -m pip install '{REQUIREMENT}'"


def _fake_python(tmp_path: Path, exit_code: int) -> tuple[Path, Path]:
    log = tmp_path / "calls"
    script = tmp_path / "python"
    script.write_text(f'#!/bin/sh\necho "$CMAKE_ARGS|$*" >> "{log}"\nexit {exit_code}\n')
    script.chmod(0o755)
    return script, log


def test_install_runs_pip_with_the_portable_cmake_args_and_says_how_long(capsys, tmp_path):
    python, log = _fake_python(tmp_path, 0)
    code, out, err = run_main(capsys, "llm", "install", "--python", str(python),
                              "--cmake-arg=-DGGML_AVX512=ON")  # fmt: skip
    assert code == 0, err
    build, deps = log.read_text().splitlines()
    cmake, _, argv = build.partition("|")
    assert cmake.startswith("-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF")
    assert cmake.endswith("-DGGML_AVX512=ON")
    assert argv.startswith("-m pip install --no-cache-dir --force-reinstall --no-deps")
    assert deps == f"|-m pip install {REQUIREMENT}"
    assert out.splitlines()[-1].startswith(f"installed llama-cpp-python {LLAMA_CPP_VERSION}")
    assert " in " in out.splitlines()[-1]


@pytest.mark.parametrize("exit_code", [1, 2])
def test_a_failed_install_is_one_line(capsys, tmp_path, exit_code):
    python, log = _fake_python(tmp_path, exit_code)
    code, _, err = run_main(capsys, "llm", "install", "--python", str(python))
    assert code == 1 and err.count("\n") == 1
    assert err.startswith(f"error: pip failed (exit {exit_code})")
    assert len(log.read_text().splitlines()) == 1  # the second step never ran


def test_install_into_a_python_that_does_not_exist(capsys, tmp_path):
    code, _, err = run_main(capsys, "llm", "install", "--python", str(tmp_path / "none"))
    assert code == 2 and err.count("\n") == 1 and "cannot run" in err
