"""Regenerate the trajectory transcripts the documentation shows.

A transcript in README.md or a page under docs/ is a ``text`` code block right after a
marker naming the trajectory (and any further options of the command)::

    <!-- transcript: syn-storefront-upload-0-003015 -->
    ```text
    # syn-storefront-upload-0-003015  task=storefront-upload  ...
    ```

Its text is exactly what ``monsearch corpus trajectory ID [OPTIONS]`` prints now for
that train or val trajectory of the embedded default corpus (built once and cached).
The generator changes, and with it the corpus: ``tests/cli/test_doc_transcripts.py``
fails when a block no longer matches, and this script brings every block up to date:

    python docs/transcripts.py            # rewrite the stale blocks
    python docs/transcripts.py --check    # list them, exit 1 if any

Run it with the project's Python from the repository's root. A marked id that is no
longer in train or val (the splits are drawn again with the corpus) is reported, never
replaced: pick another trajectory (``monsearch corpus trajectories``).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: A marker, then (blank lines allowed) the fenced text block it names.
MARKED = re.compile(
    r"<!-- transcript: (?P<args>[^\n]*?) -->[ \t]*\n(?:[ \t]*\n)*"
    r"(?P<open>```text\n)(?P<body>.*?)(?P<close>^```[ \t]*$)",
    re.S | re.M,
)
#: Any fenced text block, to find transcripts that carry no marker.
BLOCK = re.compile(r"^```text\n(?P<body>.*?)^```[ \t]*$", re.S | re.M)
#: The first line ``monsearch corpus trajectory`` prints.
HEADER = re.compile(r"^# \S+  task=\S+  generator=")


@dataclass(frozen=True)
class Transcript:
    """One marked block: where it is, the command's arguments and the text it shows."""

    path: Path
    args: tuple[str, ...]
    body: str
    start: int  # of the body in the file's text
    end: int


def documents(root: Path = ROOT) -> list[Path]:
    """README.md and every Markdown page under docs/."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def marked(path: Path) -> list[Transcript]:
    text = path.read_text(encoding="utf-8")
    return [
        Transcript(path, tuple(shlex.split(m["args"])), m["body"], m.start("body"), m.end("body"))
        for m in MARKED.finditer(text)
    ]


def unmarked(path: Path) -> list[str]:
    """The first lines of transcript blocks in ``path`` that no marker names."""
    text = path.read_text(encoding="utf-8")
    named = {m.start("open") for m in MARKED.finditer(text)}
    return [
        m["body"].split("\n", 1)[0]
        for m in BLOCK.finditer(text)
        if HEADER.match(m["body"]) and m.start() not in named
    ]


class TranscriptError(Exception):
    """The command refused the marked arguments (e.g. an id not in train or val)."""


def render(args: tuple[str, ...]) -> str:
    """What ``monsearch corpus trajectory ARGS`` prints now, as a block's text."""
    proc = subprocess.run(
        [sys.executable, "-m", "monsearch", "corpus", "trajectory", *args],
        capture_output=True,
        text=True,
        # Not from the repository's root: ``-m`` would import its folders, not the install.
        cwd=tempfile.gettempdir(),
        env={**os.environ, "COLUMNS": "80"},
        check=False,
    )
    if proc.returncode != 0:
        raise TranscriptError(f"monsearch corpus trajectory {shlex.join(args)}: {proc.stderr.strip()}")
    return proc.stdout


def stale(root: Path = ROOT) -> list[tuple[Transcript, str]]:
    """Every marked block whose text differs from what the command prints now, with
    that text."""
    out = []
    for path in documents(root):
        for t in marked(path):
            now = render(t.args)
            if now != t.body:
                out.append((t, now))
    return out


def refresh(root: Path = ROOT) -> list[Transcript]:
    """Rewrite every stale block with what the command prints now; the blocks rewritten."""
    done = []
    for path in documents(root):
        text = path.read_text(encoding="utf-8")
        found = marked(path)
        for t in reversed(found):  # from the end: earlier offsets stay valid
            now = render(t.args)
            if now != t.body:
                text = text[: t.start] + now + text[t.end :]
                done.append(t)
        if done and any(t.path == path for t in done):
            path.write_text(text, encoding="utf-8")
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="list stale blocks, change nothing")
    args = parser.parse_args(argv)
    problems = [f"{p.relative_to(ROOT)}: unmarked transcript {line!r}"
                for p in documents() for line in unmarked(p)]  # fmt: skip
    try:
        if args.check:
            problems += [
                f"{t.path.relative_to(ROOT)}: stale transcript {shlex.join(t.args)}"
                for t, _ in stale()
            ]
        else:
            for t in refresh():
                print(f"{t.path.relative_to(ROOT)}: rewrote {shlex.join(t.args)}")
    except TranscriptError as exc:
        problems.append(str(exc))
    for line in problems:
        print(line, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
