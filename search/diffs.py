"""Turning a model's answer into a child program: SEARCH/REPLACE diffs or a full rewrite.

The answer format is openevolve's (``<<<<<<< SEARCH`` / ``=======`` / ``>>>>>>> REPLACE``
blocks applied line-wise, or a fenced program), but the parsing is ours: a model's
answer is untrusted input, and openevolve's regular expressions take quadratic (or
worse) time on answers made of unclosed markers: a megabyte of ``<think>`` tags or of
SEARCH/separator lines would hold a worker for minutes. Every step here is one pass
over the answer (marker lines read line by line, reasoning sections cut with one scan
of the tags, SEARCH text found with ``str.find`` on line-aligned text), and an answer
is refused unparsed above a size cap, as is a diff with more blocks than
:data:`MAX_DIFF_BLOCKS` (each block is one search of the program).

Tightened defaults: a reply with neither a diff nor a code fence is rejected instead
of being taken as code (prose would otherwise become the "program"), when several
fences are present the one defining ``score`` wins over a snippet shown before it,
and reasoning models' ``<think>`` sections are dropped before parsing (an unclosed
one to the end of the answer: a model cut off while thinking gave no program).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from openevolve.utils.code_utils import format_diff_summary

from monsearch.sandbox.restricted import DEFAULT_MAX_SOURCE_BYTES

__all__ = [
    "DEFAULT_MAX_ANSWER_CHARS",
    "MAX_DIFF_BLOCKS",
    "ChildTooLarge",
    "ParsedAnswer",
    "apply_blocks",
    "extract_blocks",
    "parse_answer",
    "strip_reasoning",
]

#: Answers longer than this are refused unparsed (``[llm] max_answer_chars``). A monitor
#: program is at most 64 kB (the sandbox's limit); 200,000 characters leave room for
#: reasoning and prose around it, and are some 50,000 tokens, far above usual max_tokens.
DEFAULT_MAX_ANSWER_CHARS = 200_000
#: More SEARCH/REPLACE blocks than this are refused (each one is a search of the program).
MAX_DIFF_BLOCKS = 100

# The fence body is lazy up to the next ```: each match ends where the next one may start,
# and an unclosed fence costs one scan to the end (no other fence can start after it).
# The opener's runs are possessive: backtracking between its two blank runs would make a
# ``` followed by a long run of spaces quadratic.
_FENCE = re.compile(r"```[ \t]*+([A-Za-z0-9_+-]*+)[ \t]*+\r?\n(.*?)```", re.DOTALL)
_SCORE_DEF = re.compile(r"^def\s+score\s*\(", re.MULTILINE)
_SEARCH, _SEP, _REPLACE = "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"
_DIFF_MARK = re.compile(r"^[ \t]*(<<<<<<< SEARCH|>>>>>>> REPLACE)[ \t]*\r?$", re.MULTILINE)
_THINK_TAG = re.compile(r"<(/?)think>", re.IGNORECASE)
_MAX_IDEA_CHARS = 240


@dataclass(frozen=True)
class ParsedAnswer:
    """The child source (None on failure), how it was made, and why it failed."""

    source: str | None
    kind: str  # "diff" | "rewrite" | "none"
    error: str | None = None
    #: A short human-readable summary of the change (diff summary or "full rewrite").
    summary: str = ""
    #: The model's one-line explanation, when it gave one before its code.
    idea: str = ""
    blocks: int = 0
    applied: int = 0


def _idea(text: str) -> str:
    """The first prose line of the answer (the prompt asks for ``Idea: ...`` first)."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        s = text[start:end].strip()
        start = end + 1
        if not s:
            continue
        if s.startswith(("```", "<<<<<<<", "=======", ">>>>>>>")):
            return ""
        if s.lower().startswith("idea:"):
            s = s[5:].strip()
        return s[:_MAX_IDEA_CHARS]
    return ""


def _pick_fence(text: str) -> str | None:
    """The fenced program of a rewrite: the last fence defining ``score``, else the first
    ``python`` fence, else the first fence; None without any fence."""
    fences = [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(text)]
    if not fences:
        return None
    with_score = [body for lang, body in fences if _SCORE_DEF.search(body)]
    if with_score:
        return with_score[-1].strip()
    python = [body for lang, body in fences if lang == "python"]
    return (python or [fences[0][1]])[0].strip()


def strip_reasoning(text: str) -> str:
    """Drop ``<think>...</think>`` sections (reasoning models served by vLLM, Ollama): drafts
    in them would otherwise be parsed as the answer. An unclosed ``<think>`` runs to the end
    (the model was cut off while thinking). Some chat templates omit the opening tag, so
    text up to the last lone ``</think>`` goes too. One scan of the tags: linear time."""
    kept: list[str] = []
    pos = 0  # start of the text not yet kept or dropped
    opened: int | None = None  # where the <think> being skipped began
    for m in _THINK_TAG.finditer(text):
        closing = m.group(1) == "/"
        if opened is None and not closing:
            kept.append(text[pos : m.start()])
            opened = m.start()
        elif opened is not None and closing:
            opened, pos = None, m.end()
        elif opened is None and closing:
            # A lone </think>: what came before it was reasoning whose opening tag the
            # template swallowed.
            kept, pos = [], m.end()
        # A <think> inside a section being skipped is part of that section.
    if opened is None:
        kept.append(text[pos:])
    return "".join(kept)


def _normalise(source: str) -> str:
    return source.replace("\r\n", "\n").strip("\n") + "\n"


def _marker(line: str) -> str | None:
    s = line.strip(" \t\r")
    return s if s in (_SEARCH, _SEP, _REPLACE) else None


def extract_blocks(text: str) -> list[tuple[str, str]]:
    """The ``(search, replace)`` blocks of ``text``, read line by line (linear time).

    A marker is a whole line (spaces around it allowed). Raises ``ValueError`` for a
    marker out of sequence (a separator or REPLACE outside a block, a second separator,
    an unfinished block): a separator absorbed into replacement text would otherwise be
    inserted as code. Search and replace texts lose trailing whitespace, as openevolve's.
    """
    blocks: list[tuple[str, str]] = []
    state = "outside"  # -> "search" -> "replace" -> "outside"
    search: list[str] = []
    replace: list[str] = []
    for line in text.split("\n"):
        mark = _marker(line)
        if state == "outside":
            if mark == _SEARCH:
                state, search = "search", []
            elif mark is not None:
                raise ValueError("Unmatched SEARCH/REPLACE delimiter outside a diff block")
        elif state == "search":
            if mark == _SEP:
                state, replace = "replace", []
            elif mark is not None:
                raise ValueError("Malformed SEARCH/REPLACE delimiter sequence")
            else:
                search.append(line)
        else:
            if mark == _REPLACE:
                blocks.append(("\n".join(search).rstrip(), "\n".join(replace).rstrip()))
                state = "outside"
            elif mark is not None:
                raise ValueError("Malformed SEARCH/REPLACE delimiter sequence")
            else:
                replace.append(line)
    if state != "outside":
        raise ValueError("Unmatched SEARCH/REPLACE delimiter: a block is not finished")
    return blocks


def _find_lines(lines: list[str], needle: list[str]) -> int:
    """Index of the first occurrence of ``needle`` as consecutive whole lines, or -1.

    ``str.find`` on newline-framed text: the match is line-aligned because both sides are
    framed by newlines and no line holds one; CPython's search is linear (two-way) for
    long needles, where a slice comparison at every line would be quadratic.
    """
    hay = "\n" + "\n".join(lines) + "\n"
    at = hay.find("\n" + "\n".join(needle) + "\n")
    return -1 if at < 0 else hay.count("\n", 0, at)


class ChildTooLarge(ValueError):
    """Applying the blocks made the program longer than the sandbox accepts."""


def apply_blocks(
    source: str, blocks: list[tuple[str, str]], *, max_chars: int | None = None
) -> tuple[str, int]:
    """Apply each block at the first place its SEARCH lines match (exactly, else ignoring
    trailing whitespace per line, as models drop or add it); blocks that match nowhere are
    skipped. Returns the new text and the number of blocks applied.

    Raises :class:`ChildTooLarge` as soon as the text grows past ``max_chars``: the sandbox
    would refuse it, and searching an ever longer text block after block is what would
    make a many-block answer quadratic.
    """
    lines = source.split("\n")
    size = len(source)
    applied = 0
    for search, replace in blocks:
        needle = search.split("\n")
        at = _find_lines(lines, needle)
        if at < 0:
            at = _find_lines([ln.rstrip() for ln in lines], [ln.rstrip() for ln in needle])
        if at < 0:
            continue
        new = replace.split("\n")
        size += len(replace) - sum(len(ln) + 1 for ln in lines[at : at + len(needle)]) + 1
        lines[at : at + len(needle)] = new
        applied += 1
        if max_chars is not None and size > max_chars:
            raise ChildTooLarge(
                f"the diff makes the program longer than {max_chars:,} characters "
                "(the sandbox's limit)"
            )
    return "\n".join(lines), applied


def parse_answer(
    parent_source: str,
    text: str | None,
    *,
    max_chars: int | None = DEFAULT_MAX_ANSWER_CHARS,
) -> ParsedAnswer:
    """Apply ``text`` (a model's answer) to ``parent_source``; never raises.

    SEARCH/REPLACE blocks are tried first (prose and fences around them are
    ignored); blocks that do not match the parent are skipped as openevolve does,
    but at least one must apply and the result must differ from the parent.
    Otherwise a fenced program is a full rewrite. An answer over ``max_chars``
    characters (None: no cap) is refused without being read.
    """
    if text is None or not text.strip():
        return ParsedAnswer(None, "none", "empty answer")
    if max_chars is not None and len(text) > max_chars:
        return ParsedAnswer(
            None,
            "none",
            f"the answer is {len(text):,} characters, over the cap of {max_chars:,} "
            "([llm] max_answer_chars); refused unparsed",
        )
    text = strip_reasoning(text.replace("\r\n", "\n"))
    if not text.strip():
        return ParsedAnswer(None, "none", "the answer holds only reasoning (<think>), no program")
    idea = _idea(text)
    if _DIFF_MARK.search(text):
        try:
            blocks = extract_blocks(text)
        except ValueError as exc:
            return ParsedAnswer(None, "diff", f"malformed SEARCH/REPLACE answer: {exc}", idea=idea)
        if not blocks:
            return ParsedAnswer(
                None,
                "diff",
                "malformed SEARCH/REPLACE answer: no complete "
                "'<<<<<<< SEARCH / ======= / >>>>>>> REPLACE' block",
                idea=idea,
            )
        if len(blocks) > MAX_DIFF_BLOCKS:
            return ParsedAnswer(
                None,
                "diff",
                f"{len(blocks)} SEARCH/REPLACE blocks, more than the {MAX_DIFF_BLOCKS} accepted",
                idea=idea,
                blocks=len(blocks),
            )
        try:
            child, applied = apply_blocks(
                parent_source, blocks, max_chars=max(DEFAULT_MAX_SOURCE_BYTES, len(parent_source))
            )
        except ChildTooLarge as exc:
            return ParsedAnswer(None, "diff", str(exc), idea=idea, blocks=len(blocks))
        if applied == 0:
            return ParsedAnswer(
                None,
                "diff",
                f"none of the {len(blocks)} SEARCH block(s) matched the parent program",
                idea=idea,
                blocks=len(blocks),
            )
        if child.strip() == parent_source.strip():
            return ParsedAnswer(
                None, "diff", "the diff did not change the parent program", idea=idea
            )
        summary = format_diff_summary(blocks, max_line_len=80, max_lines=6)
        if applied < len(blocks):
            summary = f"{applied} of {len(blocks)} blocks applied\n{summary}"
        return ParsedAnswer(_normalise(child), "diff", None, summary, idea, len(blocks), applied)
    code = _pick_fence(text)
    if code is None:
        # Some models answer with bare code; accept it only if it looks like a monitor.
        # The sandbox's check then decides; prose around it fails there with a line number.
        if _SCORE_DEF.search(text):
            code = text.strip()
        else:
            return ParsedAnswer(
                None,
                "none",
                "malformed answer: no SEARCH/REPLACE block and no ```python fenced program",
                idea=idea,
            )
    if not code.strip():
        return ParsedAnswer(None, "rewrite", "the fenced program is empty", idea=idea)
    if code.strip() == parent_source.strip():
        return ParsedAnswer(None, "rewrite", "the rewrite is identical to the parent", idea=idea)
    return ParsedAnswer(_normalise(code), "rewrite", None, "full rewrite", idea)
