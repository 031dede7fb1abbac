"""The files a folder import reads, found without following links.

A symbolic link inside the tree, to a file or to a folder, may point anywhere on the
machine (a key file, another user's runs), and whoever wrote the tree chose where. An
import reads the tree's own files only: every link it meets where it looks for
trajectories (a file with a trajectory's name, or any folder) is left unread and
listed as skipped with what it points to, never followed silently; ``--strict`` refuses
the tree at the first. The source named on the command line is the user's own choice
and is read even when it is a link.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from monsearch.corpora.errors import InputError

#: Characters of a link's target quoted in the reason.
_TARGET_CHARS = 200


def tree_files(root: Path, wanted: Callable[[str], bool]) -> tuple[list[Path], list[InputError]]:
    """The regular files under ``root`` (at any depth) whose name is ``wanted``, sorted by
    their path relative to ``root``, and one error per link met on the way (a wanted
    name that is a link, or a linked folder), in the same order."""
    files: list[Path] = []
    links: list[tuple[str, InputError]] = []
    # os.walk does not descend into linked folders (followlinks=False); it lists them
    # with the folders, and links to files (or to nothing) with the files.
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        for name in dirnames:
            p = here / name
            if p.is_symlink():
                links.append((_key(p, root), _link_error(p, root, folder=True)))
        for name in filenames:
            if not wanted(name):
                continue
            p = here / name
            if p.is_symlink():
                links.append((_key(p, root), _link_error(p, root, folder=False)))
            elif p.is_file():
                files.append(p)
    files.sort(key=lambda p: _key(p, root))
    links.sort(key=lambda kv: kv[0])
    return files, [err for _, err in links]


def _key(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _link_error(path: Path, root: Path, *, folder: bool) -> InputError:
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    shown = target if len(target) <= _TARGET_CHARS else target[: _TARGET_CHARS - 3] + "..."
    try:
        inside = path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # a link loop
        inside = False
    where = "within the tree" if inside else "outside the tree"
    if folder:
        return InputError(
            str(path),
            "",
            "a folder of the tree itself",
            f"a linked folder (to {shown}, {where}); links are not followed",
        )
    return InputError(
        str(path),
        "",
        "a file of the tree itself",
        f"a symbolic link (to {shown}, {where}); links are not followed",
    )
