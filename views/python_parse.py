"""Agent Python code to statements, cheaply: parse caches, rendering, and the regex fallback.

Agents resend the same code with a few new lines, so parsing is cached per chunk of
top-level statements (:func:`_parse_body`); the ``global`` names of a function and the
source of an unknown value (how it prints) are cached per node. Code that does not
parse at all is read with regexes (:func:`_regex_requests`).
"""

from __future__ import annotations

import ast
import functools
import re
import sys

from monsearch.views.request import (
    Request,
    normalise_url,
)

_GLOBALS: dict[int, tuple[ast.AST, tuple[str, ...]]] = {}
_HOLDS_STATEMENTS = (ast.stmt, ast.excepthandler, ast.match_case)


def _globals_of(fn: ast.AST) -> tuple[str, ...]:
    """Names a function declares ``global`` (not in nested functions), cached per node."""
    hit = _GLOBALS.get(id(fn))
    if hit is not None and hit[0] is fn:
        return hit[1]
    names: list[str] = []
    todo = list(getattr(fn, "body", ()) if not isinstance(fn, ast.Lambda) else ())
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Global):
            names.extend(node.names)
        elif not isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
        ):
            # Only statements hold a ``global``, and they sit in list fields (body,
            # orelse, handlers, cases...): skipping expressions keeps the walk short
            # and visits the statements in the same order.
            for field in node._fields:
                value = getattr(node, field, None)
                if type(value) is list:
                    todo.extend(x for x in value if isinstance(x, _HOLDS_STATEMENTS))
    if len(_GLOBALS) > 4096:
        _GLOBALS.clear()
    _GLOBALS[id(fn)] = (fn, tuple(names))
    return _GLOBALS[id(fn)][1]

#: Node -> (node, its rendered source, stack room ``ast.unparse`` needed for it). The
#: parsed chunks are cached, so an unknown value's source recurs across trajectories.
_SRC: dict[int, tuple[ast.AST, str, int]] = {}


def _src(node: ast.AST) -> str:
    try:
        # The check costs the frame ``ast.unparse`` would: no limit is met sooner.
        hit = _SRC.get(id(node))
        if hit is not None and hit[0] is node and _stack_room(hit[2]):
            return hit[1]
        text = ast.unparse(node)
    except (ValueError, TypeError, AttributeError, RecursionError):
        return "?"
    short = text if len(text) <= 80 else text[:77] + "..."
    if len(_SRC) > 4096:
        _SRC.clear()
    # Rendering never takes more than a few frames per node of the tree, nor the tree
    # more nodes than its source has characters: with this much room it cannot fail.
    _SRC[id(node)] = (node, short, 8 * len(text) + 100)
    return short


def _stack_room(frames: int) -> bool:
    """Whether at least ``frames`` frames fit on the stack before the recursion limit
    (a cached result is used only where computing it again would give the same)."""
    top = sys.getrecursionlimit() - frames
    if top <= 0:
        return False
    try:
        sys._getframe(top)
    except ValueError:
        return True
    return False


# --------------------------------------------------------------------------- regex fallback

_RX_LIB = re.compile(
    r"""(?:requests|httpx|session|s|client)\.(get|post|put|patch|delete|head|options)\(\s*[fr]?['"]([^'"]+)['"]"""
)
_RX_URLOPEN = re.compile(r"""urlopen\(\s*[fr]?['"]([^'"]+)['"]""")
_RX_REQUEST = re.compile(
    r"""Request\(\s*[fr]?['"]([^'"]+)['"](?:[^)]*?method\s*=\s*['"](\w+)['"])?""", re.S
)


def _regex_requests(code: str) -> list[Request]:
    out: list[Request] = []
    for m in _RX_LIB.finditer(code):
        out.append(
            Request(
                method=m.group(1).upper(), url=normalise_url(m.group(2)), client="python_requests"
            )
        )
    for m in _RX_REQUEST.finditer(code):
        out.append(
            Request(
                method=(m.group(2) or "GET").upper(),
                url=normalise_url(m.group(1)),
                client="python_urllib",
            )
        )
    if not any(r.client == "python_urllib" for r in out):
        for m in _RX_URLOPEN.finditer(code):
            out.append(Request(method="GET", url=normalise_url(m.group(1)), client="python_urllib"))
    return out


@functools.lru_cache(maxsize=2048)
def _parse(code: str) -> ast.Module | None:
    """``ast.parse`` with a cache (the reader never mutates the tree); None if unparsable."""
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


# ----------------------------------------------------------------- statement-level parse cache
#
# Agents resend the same helper functions, imports and constants with a few new
# lines at the end, so most of a new text was already parsed as part of an
# earlier one. ``_parse_body`` splits a text into chunks of whole top-level
# statements and parses only the chunks it has not seen, all in one go; the
# reader uses only the statements (never their positions), so the result is
# ``_parse(code).body`` up to line numbers.

#: Chunk text -> its top-level statements (parsed on their own, they give these).
_CHUNKS: dict[str, tuple[ast.stmt, ...]] = {}
_CHUNKS_MAX = 16384
#: Longer chunks are not cached (see ``_parse_body``).
_CHUNK_MAX_LEN = 1000
#: Where a chunk may start: a line beginning with a letter or ``_`` that is not a
#: clause continuing the statement before it (a guess; ``_file_chunks`` checks).
_CHUNK_START = re.compile(r"\n(?=[A-Za-z_])(?!else|elif|except|finally)")


def _chunks(code: str) -> list[str]:
    """``code`` cut before lines that may start a top-level statement (``"\\n".join`` gives it back)."""
    parts = _CHUNK_START.split(code)
    if len(parts) == 1 or "@" not in code:
        return parts
    # A decorated definition stays in the chunk of its decorators.
    out = [parts[0]]
    for part in parts[1:]:
        last = out[-1]
        if last.startswith("@", last.rfind("\n") + 1):
            out[-1] = last + "\n" + part
        else:
            out.append(part)
    return out


def _file_chunks(texts: list[str], tree: ast.Module) -> bool:
    """File the statements of ``tree`` (``texts`` joined, parsed) under each text.

    False when a text after the first does not open exactly with a top-level
    statement: then the texts are not each a sequence of whole statements.
    """
    body = tree.body
    groups: list[tuple[ast.stmt, ...]] = []
    k = 0
    line = 1
    for n, text in enumerate(texts):
        end = line + text.count("\n") + 1  # first line of the next text
        if n:
            # A text after the first must open with an undecorated statement at column 0.
            if k >= len(body):
                return False
            st = body[k]
            if st.lineno != line or st.col_offset or getattr(st, "decorator_list", None):
                return False
        j = k
        while j < len(body) and body[j].lineno < end:
            j += 1
        groups.append(tuple(body[k:j]))
        k = j
        line = end
    if k != len(body):
        return False
    if len(_CHUNKS) + len(texts) > _CHUNKS_MAX:
        _CHUNKS.clear()
    for text, stmts in zip(texts, groups, strict=True):
        _CHUNKS[text] = stmts
        if "global" not in text:
            _note_no_globals(stmts)
    return True


def _note_no_globals(stmts: tuple[ast.stmt, ...]) -> None:
    """Functions and methods of a text without the word ``global`` declare none:
    file that in :func:`_globals_of`'s cache, which then need not walk them."""
    for st in stmts:
        for fn in st.body if type(st) is ast.ClassDef else (st,):
            if type(fn) is ast.FunctionDef or type(fn) is ast.AsyncFunctionDef:
                if len(_GLOBALS) > 4096:
                    _GLOBALS.clear()
                _GLOBALS[id(fn)] = (fn, ())


def _shallow_stack() -> bool:
    """Whether any chunk parses here as it would at any other depth where chunks are used.

    ``ast.parse`` fails on an AST deeper than about 3 * (recursion limit - stack
    depth) levels, and a chunk of at most _CHUNK_MAX_LEN characters is at most
    about that many levels deep: with the stack less than ``room`` frames deep,
    such a chunk always parses if it parses at all, so sharing chunks between
    texts cannot change whether one of them parses.
    """
    room = sys.getrecursionlimit() - (_CHUNK_MAX_LEN + 10) // 3 - 100
    if room <= 0:
        return False
    try:
        sys._getframe(room)
    except ValueError:
        return True
    return False


@functools.lru_cache(maxsize=2048)
def _parse_body(code: str) -> list[ast.stmt] | None:
    """The top-level statements of ``code`` as ``_parse(code).body``; None if unparsable."""
    # ``\r`` breaks lines for the parser but not for ``_chunks``; ``from __future__
    # import barry_as_FLUFL`` changes how later statements parse: whole text then.
    # Long chunks and deep stacks too: see ``_shallow_stack``. ``ast.parse`` is
    # called from here, at the stack depth ``_parse`` had, for the same reason.
    parts = _chunks(code) if "\r" not in code and "__future__" not in code else [code]
    if len(parts) > 1 and max(map(len, parts)) <= _CHUNK_MAX_LEN and _shallow_stack():
        missing = [p for p in dict.fromkeys(parts) if p not in _CHUNKS]
        filed = not missing
        if missing:
            try:
                filed = _file_chunks(missing, ast.parse("\n".join(missing)))
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                filed = False
        if filed:
            body: list[ast.stmt] = []
            for p in parts:
                found = _CHUNKS.get(p)
                if found is None:
                    break
                body += found
            else:
                return body
    try:
        return ast.parse(code).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
