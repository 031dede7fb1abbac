"""Installing llama-cpp-python's server portably (``monsearch llm install``).

llama-cpp-python ships no CPU wheel on the package index: pip compiles llama.cpp from
its source. Left to its defaults that build is native (``-march=native``): on a CPU
that advertises AMX (as some virtual ones do) but traps on it, the server dies of
SIGILL on its first completion. The portable build here turns ``GGML_NATIVE`` off, so
the CPU backend gets the x86-64 baseline llama.cpp picks without it (SSE4.2, AVX,
AVX2, FMA, F16C, BMI2: no AVX-512, no AMX), minus any of those this CPU lacks, and
leaves out the multimodal library (``LLAVA_BUILD``) the text server never loads.
pip's cache is bypassed so an earlier native build cannot be reused for this one.
"""

from __future__ import annotations

import os
import platform
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "LLAMA_CPP_VERSION",
    "REQUIREMENT",
    "cmake_args",
    "cpu_flags",
    "default_python",
    "install_commands",
    "shell_line",
]

LLAMA_CPP_VERSION = "0.3.36"
#: What pyproject's ``local-llm`` extra installs (a test keeps the two equal).
REQUIREMENT = f"llama-cpp-python[server]=={LLAMA_CPP_VERSION}"

#: Always: no -march=native, no multimodal library.
PORTABLE = ("-DGGML_NATIVE=OFF", "-DLLAVA_BUILD=OFF")

# The x86-64 features llama.cpp's CMake turns on when GGML_NATIVE is off, by the
# name /proc/cpuinfo gives them: one this CPU lacks is turned off too.
_BASELINE = (
    ("sse4_2", "GGML_SSE42"),
    ("avx", "GGML_AVX"),
    ("avx2", "GGML_AVX2"),
    ("fma", "GGML_FMA"),
    ("f16c", "GGML_F16C"),
    ("bmi2", "GGML_BMI2"),
)


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str] | None:
    """The CPU's feature flags (Linux), or None where they cannot be read."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return set(value.split())
    return None


def _x86_64() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64")


def cmake_args(
    flags: set[str] | None = None, extra: Sequence[str] = (), *, x86_64: bool | None = None
) -> list[str]:
    """The CMake arguments of the portable build for a CPU with ``flags`` (unknown:
    llama.cpp's baseline as it is); ``extra`` comes last, so it can override."""
    args = list(PORTABLE)
    if (_x86_64() if x86_64 is None else x86_64) and flags is not None:
        args += [f"-D{option}=OFF" for flag, option in _BASELINE if flag not in flags]
    return [*args, *extra]


def install_commands(python: str, args: Sequence[str]) -> list[tuple[list[str], dict[str, str]]]:
    """The two pip runs (command, extra environment): build and install the library
    without pip's cache (a cached native wheel would be reused whatever CMAKE_ARGS
    says), then the server's own dependencies."""
    build = [
        python, "-m", "pip", "install", "--no-cache-dir", "--force-reinstall", "--no-deps",
        "--no-binary", "llama-cpp-python", f"llama-cpp-python=={LLAMA_CPP_VERSION}",
    ]  # fmt: skip
    deps = [python, "-m", "pip", "install", REQUIREMENT]
    return [(build, {"CMAKE_ARGS": " ".join(args)}), (deps, {})]


def shell_line(command: Sequence[str], env: dict[str, str]) -> str:
    """``command`` as one line a shell runs as is."""
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    line = " ".join(shlex.quote(c) for c in command)
    return f"{prefix} {line}" if prefix else line


def default_python() -> str:
    """The Python ``monsearch llm serve`` runs the server with."""
    from .server import ENV_PYTHON

    return os.environ.get(ENV_PYTHON) or sys.executable
