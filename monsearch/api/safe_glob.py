"""Glob patterns expanded as ``glob.glob(pattern, recursive=True)`` does, but bounded.

The standard library's ``**`` follows symbolic links to folders, so a link that points
back up the tree (``ln -s .. up``) makes a walk that never ends: two such links give
2**40 paths before the system refuses a path. Agents write the trees ``monsearch
score`` is pointed at, so here ``**`` never goes through a link to a folder (as
``Path.rglob``; the link itself is listed when ``**`` ends the pattern), and a walk
that lists more than :data:`MAX_FOLDERS` folders stops with
:class:`GlobTooLargeError`. Everything else is
``glob.glob``'s behaviour: names beginning with a dot match only a pattern beginning
with one, ``**`` matches zero or more folders, a pattern ending in ``/`` matches
folders, results are in the order the folders list them.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator

#: Folders one pattern may list before it is refused.
MAX_FOLDERS = 100_000


class GlobTooLargeError(Exception):
    """The pattern would list more than :data:`MAX_FOLDERS` folders."""


def has_magic(text: str) -> bool:
    return any(c in text for c in "*?[")


def _hidden(name: str) -> bool:
    return name[:1] == "."


class _Walk:
    """One pattern's expansion, counting the folders it lists."""

    def __init__(self, max_folders: int) -> None:
        self.left = max_folders

    def listdir(self, folder: str, dironly: bool) -> list[tuple[str, bool]]:
        """``(name, is a folder that is not a link)`` for the entries of ``folder``
        (folders and links to them only, when ``dironly``)."""
        self.left -= 1
        if self.left < 0:
            raise GlobTooLargeError
        out = []
        try:
            with os.scandir(folder or os.curdir) as entries:
                for entry in entries:
                    try:
                        if not dironly or entry.is_dir():
                            out.append((entry.name, entry.is_dir(follow_symlinks=False)))
                    except OSError:
                        continue
        except OSError:
            return []
        return out

    def iglob(self, pathname: str, dironly: bool) -> Iterator[str]:
        dirname, basename = os.path.split(pathname)
        if not has_magic(pathname):
            if basename:
                if os.path.lexists(pathname):
                    yield pathname
            elif os.path.isdir(dirname):
                yield pathname
            return
        if not dirname:
            yield from self.in_dir("", basename, dironly)
            return
        if dirname != pathname and has_magic(dirname):
            dirs: Iterator[str] = self.iglob(dirname, True)
        else:
            dirs = iter([dirname])
        for folder in dirs:
            for name in self.in_dir(folder, basename, dironly):
                yield os.path.join(folder, name)

    def in_dir(self, folder: str, pattern: str, dironly: bool) -> Iterator[str]:
        if pattern == "**":
            if not folder or os.path.isdir(folder):
                yield ""
            yield from self.rlist(folder, dironly)
        elif has_magic(pattern):
            names = [name for name, _ in self.listdir(folder, dironly)]
            if not _hidden(pattern):
                names = [n for n in names if not _hidden(n)]
            yield from fnmatch.filter(names, pattern)
        elif pattern:
            if os.path.lexists(os.path.join(folder, pattern)):
                yield pattern
        elif os.path.isdir(folder):
            yield pattern

    def rlist(self, folder: str, dironly: bool) -> Iterator[str]:
        for name, real_dir in self.listdir(folder, dironly):
            if _hidden(name) or (dironly and not real_dir):
                continue
            yield name
            if real_dir:  # never through a link: that is how walks become endless
                path = os.path.join(folder, name) if folder else name
                for sub in self.rlist(path, dironly):
                    yield os.path.join(name, sub)


def safe_glob(pattern: str, *, max_folders: int = MAX_FOLDERS) -> list[str]:
    """The paths ``pattern`` matches (``**`` recursive), sorted; see the module docstring."""
    walk = _Walk(max_folders)
    found = list(walk.iglob(pattern, False))
    # glob.iglob drops the empty match a pattern starting with "**" gives for "here".
    return sorted(p for p in found if p)
