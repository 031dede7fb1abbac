"""Turning a model's answer into a child program: SEARCH/REPLACE diffs or a full rewrite.

Thin wrappers over :mod:`openevolve.utils.code_utils` (``extract_diffs``,
``apply_diff_blocks``, ``parse_full_rewrite``) that never raise and say why an
answer is unusable. Two of openevolve's defaults are tightened: a reply with
neither a diff nor a code fence is rejected instead of being taken as code
(prose would otherwise become the "program"), when several fences are present
the one defining ``score`` wins over a snippet shown before it, and reasoning
models' ``<think>`` sections are dropped before parsing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from openevolve.utils.code_utils import (
    apply_diff_blocks,
    extract_diffs,
    format_diff_summary,
    parse_full_rewrite,
)

__all__ = ["ParsedAnswer", "parse_answer"]

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n(.*?)```", re.DOTALL)
_SCORE_DEF = re.compile(r"^def\s+score\s*\(", re.MULTILINE)
_DIFF_MARK = re.compile(r"^[ \t]*(<<<<<<< SEARCH|>>>>>>> REPLACE)[ \t]*\r?$", re.MULTILINE)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
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
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        if s.startswith(("```", "<<<<<<<", "=======", ">>>>>>>")):
            return ""
        if s.lower().startswith("idea:"):
            s = s[5:].strip()
        return s[:_MAX_IDEA_CHARS]
    return ""


def _pick_fence(text: str) -> str | None:
    """The fenced program of a rewrite: the last fence defining ``score``, else openevolve's
    choice (the first ``python`` fence, else the first fence); None without any fence."""
    fences = [(lang.lower(), body) for lang, body in _FENCE.findall(text)]
    if not fences:
        return None
    with_score = [body for lang, body in fences if _SCORE_DEF.search(body)]
    if with_score:
        return with_score[-1].strip()
    return parse_full_rewrite(text, "python")


def _strip_reasoning(text: str) -> str:
    """Drop ``<think>...</think>`` sections (reasoning models served by vLLM, Ollama): drafts
    in them would otherwise be parsed as the answer. Some chat templates omit the opening
    tag, so text up to a lone ``</think>`` goes too."""
    text = _THINK.sub("", text)
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    return text


def _normalise(source: str) -> str:
    return source.replace("\r\n", "\n").strip("\n") + "\n"


def parse_answer(parent_source: str, text: str | None) -> ParsedAnswer:
    """Apply ``text`` (a model's answer) to ``parent_source``; never raises.

    SEARCH/REPLACE blocks are tried first (prose and fences around them are
    ignored); blocks that do not match the parent are skipped as openevolve does,
    but at least one must apply and the result must differ from the parent.
    Otherwise a fenced program is a full rewrite.
    """
    if text is None or not text.strip():
        return ParsedAnswer(None, "none", "empty answer")
    text = _strip_reasoning(text.replace("\r\n", "\n"))
    if not text.strip():
        return ParsedAnswer(None, "none", "the answer holds only reasoning (<think>), no program")
    idea = _idea(text)
    if _DIFF_MARK.search(text):
        try:
            blocks = extract_diffs(text)
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
        child, applied = apply_diff_blocks(parent_source, blocks)
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
