"""The README's quick start is what CI runs, and every line of it is a real command.

``.ci/quickstart.py`` runs the marked blocks in a fresh clone (non-editable install,
budget made small); this test keeps the blocks, the script and the CLI in step
whenever the README changes: each line must parse against the real commands and
options, and name files that exist in the repository.
"""

from __future__ import annotations

import importlib.util
import shlex
import warnings

import click
import pytest
from paths import REPO

from monsearch.cli import cli

ROOT = REPO
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _script():
    spec = importlib.util.spec_from_file_location("quickstart", ROOT / ".ci" / "quickstart.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def _monsearch_args(line: str) -> list[str] | None:
    """The arguments of the ``monsearch`` invocation in one shell line, if any."""
    for part in line.split("&&"):
        words = shlex.split(part)
        if words and words[0].endswith("bin/monsearch"):
            return words[1:]
    return None


def _rest(ctx: click.Context) -> list[str]:
    # Click 8.2 deprecates protected_args (a group's subcommand and its arguments).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return [*ctx.protected_args, *ctx.args]


def _parse(args: list[str]) -> click.Command:
    """Parse ``args`` as the CLI would, without running anything; the command reached."""
    ctx = cli.make_context("monsearch", list(args), resilient_parsing=False)
    command: click.Command = cli
    rest = _rest(ctx)
    while isinstance(command, click.Group):
        name, sub, rest = command.resolve_command(ctx, rest)
        assert sub is not None, f"no command {name!r}"
        ctx = sub.make_context(name, rest, parent=ctx)
        command, rest = sub, _rest(ctx)
    return command


def test_the_quick_start_blocks_are_what_ci_runs():
    qs = _script()
    first, follow = qs.quick_start(README, 6)
    assert first == [
        "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/monsearch evolve --budget 6"
    ]
    # A non-editable install: the package, not the clone's folders, must be what runs.
    assert " -e " not in first[0] and "install ." in first[0]
    commands = [(_monsearch_args(line) or [""])[0] for line in follow]
    assert commands == ["lineage", "report", "test", "export", "score"]
    assert any("--out monitor-RUN" in line for line in follow)


@pytest.mark.parametrize("which", ["first", "follow"])
def test_every_quick_start_line_parses_against_the_real_cli(which):
    qs = _script()
    first, follow = qs.quick_start(README, 6)
    for line in first if which == "first" else follow:
        args = _monsearch_args(line)
        assert args is not None, line
        args = [a.replace("RUN", "some-run") for a in args]
        assert isinstance(_parse(args), click.Command)


def test_the_quick_start_scores_files_shipped_in_the_repository():
    _, follow = _script().quick_start(README, 6)
    (score,) = [_monsearch_args(line) for line in follow if "score" in line]
    paths = [a for a in score[1:] if not a.startswith("-") and "RUN" not in a]
    assert paths and all((ROOT / p).exists() for p in paths), paths


def test_ci_runs_the_test_command_and_the_quick_start():
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "<!-- test-command -->" in README and "test-command" in run
    assert "quickstart.py" in run
