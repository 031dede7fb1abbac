"""Shell tokens to a tree: simple commands, pipelines, ``for`` / ``while`` / ``until``
loops, groups, ``if`` / ``case`` and functions; and the plain fast path, which plans a text
of simple commands and separators without building nodes.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from monsearch.views.command import _MAX_DEPTH
from monsearch.views.shell_words import (
    _OP,
    ARITH,
    OP,
    WORD,
    Token,
    _quoted,
    _read_heredoc,
    tokenize,
    unquote_simple,
)

_KEYWORDS_END = {"done", "fi", "esac", "}", "then", "do", "else", "elif", ";;"}


@dataclass(slots=True)
class Simple:
    words: list[str]
    redirects: list[tuple[str, str | None, Token]]  # (op, raw target word, token)
    raw: str


@dataclass(slots=True)
class Pipeline:
    parts: list[object]
    background: bool = False


@dataclass(slots=True)
class ForLoop:
    var: str
    items: list[str] | None  # raw words; None for ``for (( ))``
    arith: str | None
    body: list[object]
    redirects: list[tuple[str, str | None, Token]] = field(default_factory=list)


@dataclass(slots=True)
class WhileLoop:
    cond: list[object]
    body: list[object]
    until: bool = False
    redirects: list[tuple[str, str | None, Token]] = field(default_factory=list)


@dataclass(slots=True)
class Group:
    body: list[object]
    redirects: list[tuple[str, str | None, Token]] = field(default_factory=list)


@dataclass(slots=True)
class FuncDef:
    name: str
    body: list[object]


class _Parser:
    def __init__(self, tokens: list[Token]):
        self.toks = tokens
        self.i = 0
        self.depth = 0

    def peek(self) -> Token | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def at_word(self, *words: str) -> bool:
        t = self.peek()
        return t is not None and t.kind == WORD and t.text in words

    def skip_seps(self) -> None:
        while (t := self.peek()) is not None and t.kind == OP and t.text in (";", "\n", "&", ";;"):
            self.i += 1

    def parse_list(self, stops: frozenset[str] | set[str]) -> list[object]:
        nodes: list[object] = []
        self.depth += 1
        try:
            while self.i < len(self.toks):
                self.skip_seps()
                t = self.peek()
                if t is None:
                    break
                if t.kind == WORD and t.text in stops:
                    break
                if t.kind == OP and t.text == ")" and ")" in stops:
                    break
                if self.depth > _MAX_DEPTH * 4:
                    self.i = len(self.toks)
                    break
                before = self.i
                pipe = self.parse_pipeline(stops)
                if pipe.parts:
                    nodes.append(pipe)
                if self.i == before:  # no progress: drop the stray token
                    self.i += 1
        finally:
            self.depth -= 1
        return nodes

    def parse_pipeline(self, stops: frozenset[str] | set[str]) -> Pipeline:
        pipe = Pipeline([])
        while True:
            t = self.peek()
            if t is not None and t.kind == WORD and t.text == "!":
                self.i += 1
            node = self.parse_command(stops)
            if node is not None:
                pipe.parts.append(node)
            t = self.peek()
            if t is not None and t.kind == OP and t.text in ("|", "|&"):
                self.i += 1
                while (t2 := self.peek()) is not None and t2.kind == OP and t2.text == "\n":
                    self.i += 1
                continue
            if t is not None and t.kind == OP and t.text in ("&&", "||"):
                self.i += 1
                while (t2 := self.peek()) is not None and t2.kind == OP and t2.text == "\n":
                    self.i += 1
                # && / || chains run sequentially: represent as separate pipelines
                return pipe
            if t is not None and t.kind == OP and t.text == "&":
                pipe.background = True
                self.i += 1
            return pipe

    def parse_redirects(self) -> list[tuple[str, str | None, Token]]:
        reds: list[tuple[str, str | None, Token]] = []
        while (t := self.peek()) is not None and t.kind == OP and _is_redirect(t.text):
            self.i += 1
            if t.text.startswith("<<") and t.text not in ("<<<",):
                reds.append((t.text.split(" ")[0], None, t))
                continue
            target = None
            if not t.text.endswith("&1") and not t.text.endswith("&2") and not t.text.endswith("-"):
                nt = self.peek()
                if nt is not None and nt.kind == WORD:
                    target = nt.text
                    self.i += 1
            reds.append((t.text, target, t))
        return reds

    def parse_command(self, stops: frozenset[str] | set[str]) -> object | None:
        t = self.peek()
        if t is None:
            return None
        if t.kind == OP and t.text == "(":
            self.i += 1
            body = self.parse_list(stops | {")"})
            if (t2 := self.peek()) is not None and t2.kind == OP and t2.text == ")":
                self.i += 1
            return Group(body, self.parse_redirects())
        if t.kind == ARITH:
            self.i += 1
            return None
        if t.kind == WORD:
            w = t.text
            if w == "for":
                return self.parse_for(stops)
            if w in ("while", "until"):
                self.i += 1
                cond = self.parse_list(stops | {"do"})
                if self.at_word("do"):
                    self.i += 1
                body = self.parse_list(stops | {"done"})
                if self.at_word("done"):
                    self.i += 1
                return WhileLoop(cond, body, w == "until", self.parse_redirects())
            if w == "if":
                self.i += 1
                body: list[object] = []
                while True:
                    body += self.parse_list(stops | {"then", "fi", "elif", "else"})
                    if self.at_word("then", "elif", "else"):
                        self.i += 1
                        continue
                    if self.at_word("fi"):
                        self.i += 1
                    break
                return Group(body, self.parse_redirects())
            if w == "case":
                # Patterns are skipped; every arm's commands are kept once.
                self.i += 1
                body = []
                while self.i < len(self.toks) and not self.at_word("esac"):
                    tk = self.toks[self.i]
                    if tk.kind == OP and tk.text == ")":
                        self.i += 1
                        body += self.parse_list(stops | {"esac", ";;"} | {")"})
                        continue
                    self.i += 1
                if self.at_word("esac"):
                    self.i += 1
                return Group(body, self.parse_redirects())
            if w == "{":
                self.i += 1
                body = self.parse_list(stops | {"}"})
                if self.at_word("}"):
                    self.i += 1
                return Group(body, self.parse_redirects())
            if w == "function":
                self.i += 1
                name_tok = self.peek()
                if name_tok is None or name_tok.kind != WORD:
                    return None
                self.i += 1
                self._skip_parens()
                return self.parse_funcbody(name_tok.text.rstrip("()"), stops)
            if (
                self.i + 2 < len(self.toks)
                and self.toks[self.i + 1].kind == OP
                and self.toks[self.i + 1].text == "("
                and self.toks[self.i + 2].kind == OP
                and self.toks[self.i + 2].text == ")"
                and re.fullmatch(r"[\w.:-]+", w)
            ):
                self.i += 3
                return self.parse_funcbody(w, stops)
            if w in _KEYWORDS_END and w in stops:
                return None
        return self.parse_simple()

    def _skip_parens(self) -> None:
        if (t := self.peek()) is not None and t.kind == OP and t.text == "(":
            self.i += 1
            if (t := self.peek()) is not None and t.kind == OP and t.text == ")":
                self.i += 1

    def parse_funcbody(self, name: str, stops: frozenset[str] | set[str]) -> FuncDef:
        while (t := self.peek()) is not None and t.kind == OP and t.text == "\n":
            self.i += 1
        node = self.parse_command(stops)
        return FuncDef(name, [Pipeline([node])] if node is not None else [])

    def parse_for(self, stops: frozenset[str] | set[str]) -> ForLoop:
        self.i += 1
        t = self.peek()
        if t is not None and t.kind == ARITH:
            self.i += 1
            self.skip_seps()
            if self.at_word("do"):
                self.i += 1
            body = self.parse_list(stops | {"done"})
            if self.at_word("done"):
                self.i += 1
            return ForLoop("", None, t.text, body, self.parse_redirects())
        var = t.text if t is not None and t.kind == WORD else "_"
        self.i += 1
        items: list[str] | None = ["$@"]
        if self.at_word("in"):
            self.i += 1
            items = []
            while (t := self.peek()) is not None and t.kind == WORD:
                items.append(t.text)
                self.i += 1
        self.skip_seps()
        if self.at_word("do"):
            self.i += 1
        body = self.parse_list(stops | {"done"})
        if self.at_word("done"):
            self.i += 1
        return ForLoop(var, items, None, body, self.parse_redirects())

    def parse_simple(self) -> Simple | None:
        start = self.i
        words: list[str] = []
        reds: list[tuple[str, str | None, Token]] = []
        while (t := self.peek()) is not None:
            if t.kind == WORD:
                if not words and t.text in (
                    "done",
                    "fi",
                    "esac",
                    "}",
                    "then",
                    "do",
                    "else",
                    "elif",
                ):
                    break
                words.append(t.text)
                self.i += 1
            elif t.kind == OP and _is_redirect(t.text):
                reds += self.parse_redirects()
            else:
                break
        if self.i == start:
            return None
        raw = " ".join(tk.text for tk in self.toks[start : self.i] if tk.kind == WORD)
        return Simple(words, reds, raw)


def _is_redirect(op: str) -> bool:
    return op[:1] in "<>0123456789&" and op not in ("&", "&&") and ("<" in op or ">" in op)


@functools.lru_cache(maxsize=8192)
def parse(text: str) -> list[object]:
    """Parse shell text into a small AST (lists of pipelines).

    Cached: the AST is never mutated by the interpreter, and agents repeat
    commands (within a run and across runs of a corpus).
    """
    return _parse_uncached(text)


def _parse_uncached(text: str) -> list[object]:
    nodes = _parse_plain(text)
    if nodes is not None:
        return nodes
    return _Parser(tokenize(text)).parse_list(frozenset())


#: One token of a plain command text: blanks (as :data:`_WS` reads them), then either
#: an operator, read by the very alternation of :data:`_OP` (so it is the operator
#: :func:`tokenize` reads there) unless it is one the fast path leaves to the parser
#: (``;;``, ``;&``, ``|&``, heredocs, parentheses), or a word whose every part is a
#: plain chunk, a closed '...', a closed "..." without backticks or $( ), a ``\x``
#: escape, a closed ${...} or a lone $ (each consumed exactly as :data:`_WORD_FAST`
#: does; no word starts with ``#``). A plain word is the word :func:`tokenize` reads
#: there, or the next token fails to start where it ends. (Only ASCII digits start an
#: operator, as in :data:`_OP_FIRST`, and :func:`tokenize` reads ``2\u0663>`` as a word:
#: an operator's leading digits are ``[0-9]``, not ``\d``.)
#: (Blanks first, then each backslash-newline with the blanks after it: the same text as
#: ``(?:[ \t\r\f\v]++|\\\n)*+``, without a turn of a repeated alternation per token.)
_PLAIN_BLANKS = r"[ \t\r\f\v]*+(?:\\\n[ \t\r\f\v]*+)*+"
_PLAIN_OP = (
    r"(?=[&|;<>\n0-9])(?!;;|;&|\|&|<<(?!<))(?:" + _OP.pattern.replace(r"|\d*", "|[0-9]*") + ")"
)
_PLAIN_WORD = (
    r"(?!#)(?:[^\s'\"\\;&|<>()`$]++|'[^']*+'|\"(?:[^\"\\`$]++|\\[\s\S]|\$(?!\())*+\""
    r"|\\[\s\S]|\$\{[^}]*+\}|\$(?![({]))++"
)
_PLAIN_TOKEN = re.compile(f"{_PLAIN_BLANKS}(?:({_PLAIN_OP})|({_PLAIN_WORD}))")
#: :data:`_PLAIN_TOKEN` that also reads the heredoc operators ``<<`` and ``<<-``.
_HEREDOC_TOKEN = re.compile(
    f"{_PLAIN_BLANKS}(?:({_PLAIN_OP.replace('|<<(?!<)', '')})|({_PLAIN_WORD}))"
)
#: Starts of texts that are compound commands (or, rarely, a plain command like ``format``).
_COMPOUND = ("for", "while", "until", "if", "case")
#: Operators that end a simple command; every other operator read is a redirection.
_PLAIN_SEPS = frozenset({"|", "&&", "||", ";", "&", "\n"})
#: The operator column of plain tokens whose operators are all separators (None: a word).
_SEPS_OR_WORD = _PLAIN_SEPS | {None}
#: First words that the parser reads as syntax, not as a simple command.
_NOT_PLAIN_FIRST = frozenset(
    {"for", "while", "until", "if", "case", "{", "function", "!", *_KEYWORDS_END}
)

#: A plain token: (operator, None) or (None, word), as :data:`_PLAIN_TOKEN` reads it.
_PlainToken = tuple[str | None, str | None]
#: One simple command of a plain text: the fields of its :class:`Simple` node.
_PlainPart = tuple[list[str], list[tuple[str, str | None, Token]], str]
#: A plain text's pipelines: the parts and ``background`` of each :class:`Pipeline` node.
_PlainPlan = list[tuple[list[_PlainPart], bool]]


def _parse_plain(text: str) -> list[object] | None:
    """The AST of a text of simple commands (words and redirections, heredocs included)
    joined by ``|``, ``&&``, ``||``, ``;``, ``&`` and newlines, without expansions of
    commands or comments: what ``_Parser(tokenize(text)).parse_list`` returns for it,
    without building the tokens. None for any other text (an empty command, a keyword,
    an unknown character...), which the parser then reads."""
    plan = _plain_plan(text)
    if plan is None:
        return None
    return [Pipeline([Simple(*part) for part in parts], bg) for parts, bg in plan]


def _plain_plan(text: str) -> _PlainPlan | None:
    """:func:`_parse_plain`'s AST as tuples (:data:`_PlainPlan`), or None. A whole text is
    run once (:func:`run_script`): :meth:`_Interp.run_plain` walks the tuples, and the
    nodes (a couple of thousand instructions each to build) are never made."""
    if text.lstrip().startswith(_COMPOUND):
        return None  # surely not plain: spare the scan of a loop's text
    heredocs: list[Token] = []
    if "<<" in text:
        tokens = _heredoc_tokens(text, heredocs)
        if tokens is None:
            return None
    else:
        if "$(" in text or "`" in text:
            return None  # surely not plain: spare the scan
        # One regex pass: split gives [gap, op, word, gap, op, word, ..., tail]; the
        # text is plain when every gap is empty and the tail is blanks.
        split = _PLAIN_TOKEN.split(text)
        if any(split[0:-1:3]) or split[-1].strip(" \t\r\f\v"):
            return None
        if not any(split[1::3]):
            # No operator, the commonest text: one simple command (as the general case).
            words = split[2::3]
            if not words or words[0] in _NOT_PLAIN_FIRST:
                return None
            return [([(words, [], " ".join(words))], False)]
        ops = split[1::3]
        if _SEPS_OR_WORD.issuperset(ops):
            return _plain_seps_plan(ops, split[2::3])
        tokens = zip(ops, split[2::3], strict=True)
    return _plain_tokens_plan(tokens, iter(heredocs))


def _heredoc_tokens(text: str, heredocs: list[Token]) -> list[_PlainToken] | None:
    """The plain tokens of a text with heredocs: each ``<<``/``<<-`` must be followed by
    its delimiter word, and the bodies, read after the newline operator that ends the
    heredoc's line as :func:`tokenize` reads them, are skipped. Appends each heredoc
    operator's token to ``heredocs``. None when the text is not plain (or when a word or
    a ``\\``-newline runs across the end of a heredoc's line: the parser then reads it).

    The text between bodies is read in one split, up to the first line end after the
    next ``<<``: a clean split (no gap, blanks after the last token) reads the tokens
    that matching at each position would, since no token there can go on across that
    newline; the ``<<`` operators are all on that segment's last line."""
    tokens: list[_PlainToken] = []
    pos = 0
    while True:
        at = text.find("<<", pos)
        nl = text.find("\n", at) if at >= 0 else -1
        split = _HEREDOC_TOKEN.split(text[pos:] if nl < 0 else text[pos:nl])
        if any(split[0:-1:3]) or split[-1].strip(" \t\r\f\v"):
            return None
        pending: list[tuple[Token, str, bool]] = []  # (token, delimiter, strip tabs)
        segment = zip(split[1::3], split[2::3], strict=True)
        for op, word in segment:
            if op == "<<" or op == "<<-":
                delim_word = next(segment, (None, None))[1]
                if delim_word is None:
                    return None  # no delimiter word right after the operator
                delim = unquote_simple(delim_word)
                tok = Token(OP, f"{op} {delim}", None, _quoted(delim_word))
                pending.append((tok, delim, op == "<<-"))
                heredocs.append(tok)
                tokens.append((op, None))
            else:
                tokens.append((op, word))
        if nl < 0:
            for tok, _, _ in pending:  # heredoc opened on the last line: empty body
                tok.heredoc = ""
            return tokens
        tokens.append(("\n", None))
        pos = nl + 1
        for tok, delim, strip_tabs in pending:
            tok.heredoc, pos = _read_heredoc(text, pos, delim, strip_tabs)


def _plain_seps_plan(ops: list[str | None], words: list[str | None]) -> _PlainPlan | None:
    """:func:`_plain_tokens_plan` of the plain tokens ``zip(ops, words)`` when every operator is a
    separator (no redirection: ``curl ... | jq .`` is most of them). Each command's words
    are then the slice of ``words`` between two operators (None in ``words``), found by
    ``list.index``: a step per command instead of one per token."""
    pipes: _PlainPlan = []
    parts: list[_PlainPart] = []
    start = 0
    for _ in range(words.count(None)):
        k = words.index(None, start)
        op = ops[k]
        cmd = words[start:k]
        start = k + 1
        if not cmd:
            # (As in _plain_tokens_plan: only these may come without a command.)
            if not (op == "\n" or (not parts and op in (";", "&"))):
                return None
            continue
        if cmd[0] in _NOT_PLAIN_FIRST:
            return None
        parts.append((cmd, [], " ".join(cmd)))
        if op != "|":
            pipes.append((parts, op == "&"))
            parts = []
    cmd = words[start:]
    if cmd:
        if cmd[0] in _NOT_PLAIN_FIRST:
            return None
        parts.append((cmd, [], " ".join(cmd)))
    if parts:
        pipes.append((parts, False))
    return pipes or None


def _plain_tokens_plan(
    tokens: Iterable[_PlainToken], heredocs: Iterator[Token]
) -> _PlainPlan | None:
    """The parser's AST of plain tokens as a :data:`_PlainPlan`, or None when the parser
    would read them differently (a keyword, an empty command...); ``heredocs`` gives the
    token of each heredoc operator in turn."""
    pipes: _PlainPlan = []
    parts: list[_PlainPart] = []
    words: list[str] = []
    reds: list[tuple[str, str | None, Token]] = []
    raw: list[str] = []  # every word of the command, redirection targets included
    target_of: Token | None = None  # a redirection still waiting for its target word
    for op, word in tokens:
        if word:
            if target_of is not None:
                reds.append((target_of.text, word, target_of))
                target_of = None
            else:
                words.append(word)
            raw.append(word)
            continue
        if target_of is not None:  # no target word: the parser records None
            reds.append((target_of.text, None, target_of))
            target_of = None
        if op not in _PLAIN_SEPS:
            if op == "<<" or op == "<<-":
                reds.append((op, None, next(heredocs)))
            elif op.endswith(("&1", "&2", "-")):
                reds.append((op, None, Token(OP, op)))
            else:
                target_of = Token(OP, op)
            continue
        if not words:
            # Separators before any command, and newlines after ``|``/``&&``/``||``,
            # are skipped by the parser; anything else is left to it.
            if reds or not (op == "\n" or (not parts and op in (";", "&"))):
                return None
            continue
        if words[0] in _NOT_PLAIN_FIRST:
            return None
        parts.append((words, reds, " ".join(raw)))
        words, reds, raw = [], [], []
        if op != "|":
            pipes.append((parts, op == "&"))
            parts = []
    if target_of is not None:
        reds.append((target_of.text, None, target_of))
    if words:
        if words[0] in _NOT_PLAIN_FIRST:
            return None
        parts.append((words, reds, " ".join(raw)))
    elif reds:
        return None
    if parts:
        pipes.append((parts, False))
    return pipes or None
