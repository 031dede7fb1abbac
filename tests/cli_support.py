"""Shared helpers for tests that drive the real ``monsearch`` entry point."""

from __future__ import annotations

from pathlib import Path

from monsearch.cli import main

FIXTURES = Path(__file__).parent / "fixtures"
SB_RESULTS = FIXTURES / "stealthbench" / "results"


def run_main(capsys, *args: str) -> tuple[int, str, str]:
    """The real entry point: exit code (0 when it returns), stdout, stderr."""
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


class WorkStarted(AssertionError):
    """A command started its work before checking its options and outputs."""


def refuse_work(monkeypatch, what: str, *, load: bool = False) -> None:
    """Make generating and reading (and with ``load``, loading a corpus) fail the test."""
    from monsearch.corpora import store
    from monsearch.synth import generate as gen_mod

    def refuse(*args, **kwargs):
        raise WorkStarted(f"the command started working before checking its {what}")

    monkeypatch.setattr(gen_mod, "generate", refuse)
    monkeypatch.setattr(gen_mod, "synthesize_corpus", refuse)
    monkeypatch.setattr("monsearch.corpora.readers.read_any", refuse)
    if load:
        monkeypatch.setattr(store, "load_corpus", refuse)
