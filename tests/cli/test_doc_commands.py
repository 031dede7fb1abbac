"""Every command the README and the documentation show is one the CLI accepts.

Each shell line of a fenced block (```bash, ```sh, ```console or a bare fence; ```text
blocks are output and synopses) in README.md and docs/ is split into its commands, and
every ``monsearch`` command (``.venv/bin/monsearch`` too) is parsed against the real
click commands, options and types, without running. The quick start's blocks are also
checked by ``test_readme_quickstart.py``, with CI's own reading of them. Scripts a block
runs (``python bench/x.py``, ``python docs/x.py``) must exist, and every Python block must
be valid Python. The references are generated (mkdocs-click, mkdocstrings), so what
is checked here is that they cover everything: the CLI page documents the whole
command tree, and the API page every public name of ``monsearch``.
"""

from __future__ import annotations

import ast
import re
import shlex
import warnings
from pathlib import Path

import click
import pytest
from paths import REPO

import monsearch
import monsearch.api
from monsearch.cli import cli

DOCS = REPO / "docs"
PAGES = [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]
_FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```", re.S | re.M)
_SHELL = {"", "bash", "sh", "shell", "console"}
_CONTROL = {"&&", "||", "|", ";", "&", "(", ")"}
_REDIRECT = {">", ">>", "<", ">&", "<&", ">|"}
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _blocks(page: Path) -> list[tuple[str, str]]:
    """(info string, text) of each fenced block of ``page``."""
    return [(m.group(1), m.group(2)) for m in _FENCE.finditer(page.read_text("utf-8"))]


def _shell_lines(lang: str, text: str) -> list[str]:
    """A block's command lines: continuations joined, console prompts only."""
    lines = []
    for raw in text.replace("\\\n", " ").splitlines():
        line = raw.strip()
        if lang == "console":
            if not line.startswith("$ "):
                continue  # output
            line = line[2:]
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


def _commands(line: str) -> list[list[str]]:
    """The simple commands of one shell line, as words (redirections dropped)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    commands: list[list[str]] = [[]]
    words = list(lexer)
    i = 0
    while i < len(words):
        word = words[i]
        if word in _CONTROL:
            commands.append([])
        elif word in _REDIRECT:
            if commands[-1] and commands[-1][-1].isdigit():
                commands[-1].pop()  # the 2 of 2>
            i += 1  # the redirection's target
        else:
            commands[-1].append(word)
        i += 1
    out = []
    for words_ in commands:
        while words_ and _ASSIGN.match(words_[0]):
            words_ = words_[1:]  # VAR=value before a command
        if words_:
            out.append(words_)
    return out


def _monsearch_args(words: list[str]) -> list[str] | None:
    if words[0] == "monsearch" or words[0].endswith("/monsearch"):
        return words[1:]
    return None


def documented_commands() -> list[tuple[str, str, list[str]]]:
    """(page, line, arguments) of every monsearch command in a shell block."""
    found = []
    for page in PAGES:
        for lang, text in _blocks(page):
            if lang not in _SHELL:
                continue
            for line in _shell_lines(lang, text):
                for words in _commands(line):
                    args = _monsearch_args(words)
                    if args is not None:
                        found.append((str(page.relative_to(REPO)), line, args))
    return found


def _rest(ctx: click.Context) -> list[str]:
    # Click 8.2 deprecates protected_args (a group's subcommand and its arguments).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return [*ctx.protected_args, *ctx.args]


def parse(args: list[str]) -> click.Command:
    """Parse ``args`` as the CLI would, without running anything; the command reached."""
    ctx = cli.make_context("monsearch", list(args))
    command: click.Command = cli
    rest = _rest(ctx)
    while isinstance(command, click.Group):
        if not rest:
            return command  # a group alone prints its help
        name, sub, rest = command.resolve_command(ctx, rest)
        assert sub is not None, f"no command {name!r}"
        ctx = sub.make_context(name, rest, parent=ctx)
        command, rest = sub, _rest(ctx)
    return command


def _all_commands(group: click.Group = cli, prefix: str = "monsearch") -> dict[str, click.Command]:
    out: dict[str, click.Command] = {}
    for name, sub in group.commands.items():
        out[f"{prefix} {name}"] = sub
        if isinstance(sub, click.Group):
            out.update(_all_commands(sub, f"{prefix} {name}"))
    return out


@pytest.fixture
def paths_need_not_exist(monkeypatch):
    """Documents name files of the reader's (``results``, ``my_monitor.py``): parse them
    as paths without asking the file system whether they exist here."""
    for command in [cli, *_all_commands().values()]:
        for param in command.params:
            if isinstance(param.type, click.Path):
                monkeypatch.setattr(param.type, "exists", False)


COMMANDS = documented_commands()


def test_the_documents_show_many_commands():
    pages = {page for page, _, _ in COMMANDS}
    # A change to the block reader that finds nothing must not pass as "all parse".
    assert len(COMMANDS) >= 30, len(COMMANDS)
    assert {"README.md", "docs/tutorial.md", "docs/getting-started.md"} <= pages


@pytest.mark.parametrize(
    "page, line, args", COMMANDS, ids=[f"{p}: {line}" for p, line, _ in COMMANDS]
)
def test_every_documented_command_parses(paths_need_not_exist, page, line, args):
    try:
        command = parse(args)
    except click.exceptions.Exit as exc:  # --help, --version
        assert exc.exit_code == 0, f"{page}: {line}"
        return
    except click.UsageError as exc:
        pytest.fail(f"{page}: `{line}` does not parse: {exc.format_message()}")
    assert isinstance(command, click.Command)


def test_a_wrong_command_line_is_caught(paths_need_not_exist):
    # The check itself: what the CLI would refuse, parse() refuses.
    for args in (["evolve", "--budgett", "3"], ["corpus", "imprt", "x"], ["evolve", "--budget", "N"]):
        with pytest.raises(click.UsageError):
            parse(args)


def test_the_command_splitter_reads_shell_lines():
    line = "MONSEARCH_LEDGER=l .venv/bin/monsearch test r --json > out.json && monsearch runs | head"
    assert _commands(line) == [[".venv/bin/monsearch", "test", "r", "--json"],
                               ["monsearch", "runs"], ["head"]]
    assert _commands("monsearch sandbox seed > my_monitor.py  # copy it") == [
        ["monsearch", "sandbox", "seed"]]
    assert _commands("monsearch corpus stats 2>/dev/null") == [["monsearch", "corpus", "stats"]]


def test_scripts_the_documents_run_exist():
    scripts = set()
    for page in PAGES:
        for lang, text in _blocks(page):
            if lang in _SHELL:
                scripts.update(re.findall(r"\b((?:bench|docs|examples|\.ci)/[\w/.-]+\.py)\b", text))
    assert scripts, "no script found: the reader is broken"
    missing = sorted(s for s in scripts if not (REPO / s).is_file())
    assert not missing, missing


def test_every_python_block_is_valid_python():
    for page in PAGES:
        for lang, text in _blocks(page):
            if lang == "python":
                try:
                    ast.parse(text)
                except SyntaxError as exc:
                    pytest.fail(f"{page.relative_to(REPO)}: {exc}\n{text}")


def test_the_cli_reference_documents_every_command():
    # mkdocs-click renders the group it is given with all its subcommands, at any depth.
    page = (DOCS / "reference" / "cli.md").read_text("utf-8")
    directive = re.search(r"::: mkdocs-click\n((?:    .*\n)+)", page)
    assert directive, "docs/reference/cli.md has no mkdocs-click block"
    options = dict(re.findall(r":(\w+): (\S+)", directive.group(1)))
    assert (options["module"], options["command"]) == ("monsearch.cli", "cli")
    assert options.get("prog_name") == "monsearch"
    assert options.get("list_subcommands") == "true"


def test_the_api_reference_documents_every_public_name():
    page = (DOCS / "reference" / "api.md").read_text("utf-8")
    documented = set(re.findall(r"^::: ([\w.]+)$", page, re.M))
    names = set(monsearch.api.__all__) | set(monsearch._API)
    missing = []
    for name in sorted(names):
        obj = getattr(monsearch.api, name)
        where = f"{obj.__module__}.{obj.__qualname__}"
        if where not in documented:
            missing.append(f"{name} ({where})")
    assert not missing, f"docs/reference/api.md lacks '::: ...' for: {', '.join(missing)}"


def test_ci_builds_the_site_strictly():
    run = (REPO / ".ci" / "run").read_text("utf-8")
    assert ".[docs]" in run and "mkdocs build --strict" in run
    # --quiet hides the warnings, and mkdocs then no longer counts them as failures.
    assert "--quiet" not in run and " -q " not in run.split("mkdocs build", 1)[1].split("\n", 1)[0]


def test_getting_started_lists_every_command():
    # The summary table is written by hand: a new command must get its row.
    page = (DOCS / "getting-started.md").read_text("utf-8")
    rows = " ".join(line for line in page.splitlines() if line.startswith("| `"))
    missing = [
        name for name, command in _all_commands().items()
        if not isinstance(command, click.Group)
        and f"`{name.removeprefix('monsearch ')}`" not in rows
    ]
    assert not missing, f"docs/getting-started.md's command table lacks: {', '.join(missing)}"
