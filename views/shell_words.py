"""Shell words: a text to tokens (words with their quoting kept, operators, heredocs),
and word expansion (quotes, ``$VAR`` / ``${VAR:-default}`` / ``${#VAR}``, ``$(...)`` and
backticks through a callback, brace lists and ranges).

Tokens split the way POSIX shells (and :mod:`shlex` in POSIX mode) split words; an
unbalanced quote runs to the end of the text, and scans of long constructs are remembered
per text. An unknown expansion stays literal (``$TOKEN``); text built is counted against
the expansion budget. The two are one module because each needs the other: a heredoc's
delimiter is unquoted while tokenising, and expansion skips quoted constructs as the
tokeniser does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from monsearch.views import expansions
from monsearch.views.command import UNROLL_LIMIT

_WS = re.compile(r"(?:[ \t\r\f\v]+|\\\n)+")
_OP = re.compile(
    r"&&|\|\||;;&?|;&|\|&|&>>|&>|\d*>>|\d*>&-?\d*-?|\d*<&\d*-?|<<<|<<-|<<|\d*>\||\d*<>|\d*>|\d*<|[;&|()\n]"
)
#: Characters an operator can start with: most words skip the ``_OP`` alternation.
_OP_FIRST = frozenset("&|;<>()\n0123456789")
_PLAIN = re.compile(r"[^\s'\"\\;&|<>()`$]+")
#: What :func:`_skip_double` steps over in one match: characters other than a quote,
#: backslash, ``$`` or backtick, a backslash escape (two characters, as its loop skips
#: them) and a ``$`` not starting ``$(``. (JSON bodies are full of ``\"`` escapes, which
#: would otherwise cost one turn of the loop each.)
_DQ_CHUNK = re.compile(r'(?:[^"\\`$]++|\\[\s\S]|\$(?!\())++')
#: Double-quoted text up to the next ``$`` or backtick: every character but those, and
#: backslash escapes, which :func:`_dq_unescape` resolves as :func:`_expand_dq` would one
#: by one (backslash and one of ``"\\$``` give that character, backslash-newline nothing).
_DQ_RUN = re.compile(r"(?:[^\\`$]++|\\[\s\S])++")
_VARNAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@#?*$!-]")

# Token kinds
WORD, OP, ARITH = 0, 1, 2


@dataclass(slots=True)
class Token:
    kind: int
    text: str
    heredoc: str | None = None  # body for << / <<- operators
    heredoc_quoted: bool = False


#: What :func:`_skip_quoted_dollar` steps over in one match: characters other than
#: parentheses, quotes, backslash and backtick, and backslash escapes (two characters,
#: as its loop skips them).
_DOLLAR_CHUNK = re.compile(r"(?:[^()'\"\\`]++|\\[\s\S])++")


def _skip_quoted_dollar(text: str, i: int) -> int:
    """Index just past the ``$(...)``/``$((...))`` starting at ``text[i] == '$'``."""
    depth = 0
    n = len(text)
    j = i + 1
    while j < n:
        m = _DOLLAR_CHUNK.match(text, j)  # characters the loop below only steps over
        if m:
            j = m.end()
            if j >= n:
                break
        c = text[j]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j + 1
        elif c == "'":
            k = text.find("'", j + 1)
            j = n - 1 if k < 0 else k
        elif c == '"':
            j = _skip_double(text, j)
            continue
        elif c == "\\":
            j += 1
        elif c == "`":
            k = text.find("`", j + 1)
            j = n - 1 if k < 0 else k
        j += 1
    return n


def _skip_double(text: str, i: int) -> int:
    """Index just past the double-quoted string opening at ``text[i] == '"'``."""
    n = len(text)
    j = i + 1
    while j < n:
        m = _DQ_CHUNK.match(text, j)
        if m:
            j = m.end()
            if j >= n:
                break
        c = text[j]
        if c == '"':
            return j + 1
        if c == "\\":
            j += 2
        elif c == "$" and text.startswith("$(", j):
            j = _skip_quoted_dollar(text, j)
        elif c == "`":
            k = text.find("`", j + 1)
            j = n if k < 0 else k + 1
        else:
            j += 1
    return n


#: The common shapes of a whole word, matched in one call: plain chunks, closed
#: '...' strings, closed "..." strings without $( or backticks, \x escapes, ${...},
#: a lone $ and closed backticks. Each alternative consumes exactly what the loop in
#: :func:`_scan_word` consumes for it; anything else stops the match, and the loop
#: goes on from there. Possessive quantifiers: an unclosed quote must fail at once,
#: not retry every split of the text before it.
_WORD_FAST = re.compile(
    r"(?:[^\s'\"\\;&|<>()`$]++|'[^']*+'|\"(?:[^\"\\`$]++|\\[\s\S]|\$(?!\())*+\""
    r"|\\[\s\S]|\$\{[^}]*+\}|\$(?![({])|`[^`]*+`)++"
)


def _scan_word(text: str, i: int) -> int:
    """Index just past the shell word starting at ``i``."""
    m = _WORD_FAST.match(text, i)
    j = m.end() if m else i
    n = len(text)
    if j < n and text[j] in "'\"\\$`":
        return _scan_word_from(text, i, j)
    return j if j > i else i + 1


def _scan_word_from(text: str, i: int, j: int) -> int:
    """:func:`_scan_word` of the word starting at ``i``, resumed at ``j``."""
    n = len(text)
    while j < n:
        m = _PLAIN.match(text, j)
        if m:
            j = m.end()
            if j >= n:
                break
        c = text[j]
        if c == "'":
            k = text.find("'", j + 1)
            j = n if k < 0 else k + 1
        elif c == '"':
            j = _skip_double(text, j)
        elif c == "\\":
            j += 2
        elif c == "$":
            if text.startswith("$(", j):
                j = _skip_quoted_dollar(text, j)
            elif text.startswith("${", j):
                k = text.find("}", j)
                j = n if k < 0 else k + 1
            else:
                j += 1
        elif c == "`":
            k = text.find("`", j + 1)
            j = n if k < 0 else k + 1
        else:
            break
    return min(j, n) if j > i else i + 1


#: Ends of ``$(...)`` and ``"..."`` constructs found while expanding words, by (text,
#: index) (:func:`_skip_quoted_dollar` and :func:`_skip_double` are pure): a loop body
#: expands the same ``"$v $(curl ...)"`` word once per value, and each time would scan it
#: again. Only texts up to :data:`_SCAN_CACHE_MAX_LEN` characters; cleared when full.
_CONSTRUCT_ENDS: dict[tuple[str, int], int] = {}
_CONSTRUCT_ENDS_MAX = 2048
#: The longest text whose scans (and double-quoted pieces, :data:`_DQ_PIECES`) are kept.
_SCAN_CACHE_MAX_LEN = 1024


def _remember_end(text: str, i: int, end: int) -> int:
    if len(text) <= _SCAN_CACHE_MAX_LEN:
        if len(_CONSTRUCT_ENDS) >= _CONSTRUCT_ENDS_MAX:
            _CONSTRUCT_ENDS.clear()
        _CONSTRUCT_ENDS[text, i] = end
    return end


def _read_heredoc(text: str, pos: int, delim: str, strip_tabs: bool) -> tuple[str, int]:
    """Body of a heredoc whose text starts at ``pos``; returns (body, end position)."""
    if delim and not strip_tabs:
        return _find_heredoc_end(text, pos, delim)
    lines: list[str] = []
    n = len(text)
    while pos < n:
        end = text.find("\n", pos)
        line = text[pos:] if end < 0 else text[pos:end]
        nxt = n if end < 0 else end + 1
        check = line.lstrip("\t") if strip_tabs else line
        if check.strip() == delim:
            return "\n".join(lines) + ("\n" if lines else ""), nxt
        lines.append(check)
        pos = nxt
    return "\n".join(lines) + ("\n" if lines else ""), n


def _find_heredoc_end(text: str, pos: int, delim: str) -> tuple[str, int]:
    """:func:`_read_heredoc` without stripped tabs, for a non-empty ``delim``: the line
    that ends the body contains ``delim``, so only the lines around its occurrences are
    looked at instead of every line (a heredoc is often a whole script)."""
    n = len(text)
    k = text.find(delim, pos)
    while k >= 0:
        start = text.rfind("\n", pos, k) + 1 or pos
        end = text.find("\n", k)
        if end < 0:
            if text[start:].strip() == delim:
                return text[pos:start], n
            break
        if text[start:end].strip() == delim:
            return text[pos:start], end + 1
        k = text.find(delim, end + 1)  # the next line's: each line is looked at once
    if pos >= n or text.endswith("\n"):
        return text[pos:], n
    return text[pos:] + "\n", n


def tokenize(text: str) -> list[Token]:
    """Split shell text into words, operators and heredoc bodies; never raises."""
    tokens: list[Token] = []
    pending: list[Token] = []  # heredoc operators waiting for their delimiter word / body
    awaiting_delim: Token | None = None
    i = 0
    n = len(text)
    while i < n:
        m = _WS.match(text, i)
        if m:
            i = m.end()
            if i >= n:
                break
        c = text[i]
        if c == "#" and (i == 0 or text[i - 1] in " \t\n;&|()"):
            k = text.find("\n", i)
            i = n if k < 0 else k
            continue
        if (
            c == "("
            and text.startswith("((", i)
            and (
                not tokens
                or tokens[-1].kind == OP
                or tokens[-1].text in ("for", "do", "then", "else")
            )
        ):
            k = text.find("))", i + 2)
            end = n if k < 0 else k + 2
            tokens.append(Token(ARITH, text[i + 2 : k if k >= 0 else n]))
            i = end
            continue
        m = _OP.match(text, i) if c in _OP_FIRST else None
        if m and not (m.group()[0].isdigit() and not _is_fd_redirect(m.group())):
            op = m.group()
            i = m.end()
            if op == "\n":
                tokens.append(Token(OP, "\n"))
                for tok in pending:
                    tok.heredoc, i = _read_heredoc(
                        text, i, tok.text.split(" ", 1)[1], tok.text.startswith("<<-")
                    )
                pending.clear()
                continue
            tok = Token(OP, op)
            tokens.append(tok)
            if op in ("<<", "<<-"):
                awaiting_delim = tok
            continue
        j = _scan_word(text, i)
        word = text[i:j]
        i = j
        if awaiting_delim is not None:
            delim = unquote_simple(word)
            awaiting_delim.heredoc_quoted = _quoted(word)
            awaiting_delim.text = f"{awaiting_delim.text} {delim}"
            pending.append(awaiting_delim)
            awaiting_delim = None
            continue
        tokens.append(Token(WORD, word))
    for tok in pending:  # heredoc opened on the last line: empty body
        tok.heredoc = ""
    return tokens


def _is_fd_redirect(op: str) -> bool:
    return op.lstrip("0123456789")[:1] in ("<", ">")


def _quoted(word: str) -> bool:
    """Whether ``word`` has a quote or a backslash (three scans beat a generator)."""
    return "'" in word or '"' in word or "\\" in word


# --------------------------------------------------------------------------- expansion

_BRACE_RANGE = re.compile(r"^(.*?)\{(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?\}(.*)$")
_BRACE_RANGE_ALPHA = re.compile(r"^(.*?)\{([a-zA-Z])\.\.([a-zA-Z])\}(.*)$")
_BRACE_LIST = re.compile(r"^(.*?)\{([^{}]*,[^{}]*)\}(.*)$")


#: A word that is one closed "..." string without $( or backticks (:func:`_skip_double`
#: reads it to its last quote).
_DQ_WORD = re.compile(r'"(?:[^"\\`$]++|\\[\s\S]|\$(?!\())*+"')
#: The escapes :func:`_expand_dq` resolves: \" \\ \$ \` give the character, \newline nothing.
_DQ_ESCAPE = re.compile(r'\\(["\\$`])|\\\n')
_NEEDS_EXPANSION = re.compile(r"['\"\\\\$`]")
#: A word :meth:`_Interp.expand_words` changes has one of these (it also expands braces).
_EXPANDABLE = re.compile(r"['\"\\\\$`{]")
_PARAM = re.compile(r"([A-Za-z_][A-Za-z0-9_]*|\d+)(?:(:?[-=+?])(.*))?$", re.S)
_PARAM_LENGTH = re.compile(r"#([A-Za-z_][A-Za-z0-9_]*)$")


def expand_word(
    raw: str,
    env: dict[str, str],
    subst: Callable[[str], str | None] | None,
    keep_unknown: bool = True,
) -> tuple[str, bool]:
    """Expand one raw word: quotes, escapes, ``$VAR``, ``${VAR}``, ``$(...)``.

    Returns ``(value, known)``; unknown expansions are kept literally.
    ``subst`` evaluates a command substitution's inner text (or returns None).
    """
    # (_NEEDS_EXPANSION.search(raw) is None, by five scans in C: the regex engine costs
    # about fifty instructions a character, and values are often long tokens.)
    if not ("'" in raw or '"' in raw or "$" in raw or "\\" in raw or "`" in raw):
        return raw, True
    if raw[0] == "'" and raw.find("'", 1) == len(raw) - 1:
        return raw[1:-1], True  # one '...' string (the loop gives the same)
    if len(raw) >= 2 and raw[0] == '"' == raw[-1]:
        inner = raw[1:-1]
        if '"' not in inner and "\\" not in inner and "$" not in inner and "`" not in inner:
            return inner, True  # "text": nothing inside to expand (the loop gives the same)
        if _DQ_WORD.fullmatch(raw):
            # One "..." string without $( or backticks: the loop's _skip_double would end
            # it at the last quote, so the value is its inside's, escapes only if no $.
            if "$" not in inner:
                return _dq_unescape(inner), True
            return _expand_dq(inner, env, subst)
    out: list[str] = []
    known = True
    i = 0
    n = len(raw)
    while i < n:
        c = raw[i]
        if c == "'":
            k = raw.find("'", i + 1)
            k = n if k < 0 else k
            out.append(raw[i + 1 : k])
            i = k + 1
        elif c == '"':
            end = _CONSTRUCT_ENDS.get((raw, i)) or _remember_end(raw, i, _skip_double(raw, i))
            inner = raw[
                i + 1 : end - 1 if end <= n and raw[end - 1 : end] == '"' and end - 1 > i else end
            ]
            val, ok = _expand_dq(inner, env, subst)
            out.append(val)
            known = known and ok
            i = end
        elif c == "\\":
            if i + 1 < n and raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
        elif c == "$" or c == "`":
            val, ok, i = _expand_dollar(raw, i, env, subst)
            out.append(val)
            known = known and ok
        else:
            m = _PLAIN.match(raw, i)
            if m:
                out.append(m.group())
                i = m.end()
            else:
                out.append(c)
                i += 1
    return "".join(out), known


def _dq_unescape(text: str) -> str:
    """``_DQ_ESCAPE.sub(r"\\1", text)`` for double-quoted text where every backslash starts
    a two-character escape (the inside of a :data:`_DQ_WORD`, a :data:`_DQ_RUN`).

    Splitting at ``\\\\`` (read left to right, like the regex) leaves parts where no escape
    ends in a backslash: their escapes cannot overlap, and plain replacements give the
    regex's text. (Its template expansion costs about a microsecond per escape, and JSON
    bodies are full of ``\\"``.)"""
    if "\\\\" not in text:  # one part: the replacements alone (no generator, no join)
        return text.replace('\\"', '"').replace("\\$", "$").replace("\\`", "`").replace("\\\n", "")
    return "\\".join(
        part.replace('\\"', '"').replace("\\$", "$").replace("\\`", "`").replace("\\\n", "")
        for part in text.split("\\\\")
    )


#: Double-quoted texts :func:`_expand_dq` has read -> their pieces in order: each literal
#: run's text (escapes resolved) and, as an int, the index of each ``$``/backtick
#: construct. Neither a run's text nor where a construct ends depends on the variables
#: or on ``subst``, so a text seen before is expanded from its pieces, its constructs
#: read by :func:`_expand_dollar` in the same order: a loop body expands the same words
#: once per value, and agents repeat quoted strings from text to text (JSON bodies,
#: ``"Authorization: Bearer $TOKEN"``). Bounded in count and length; cleared when full.
_DQ_PIECES: dict[str, tuple[str | int, ...]] = {}
_DQ_PIECES_MAX = 2048


def _expand_dq(
    inner: str, env: dict[str, str], subst: Callable[[str], str | None] | None
) -> tuple[str, bool]:
    out: list[str] = []
    known = True
    pieces = _DQ_PIECES.get(inner)
    if pieces is not None:
        for piece in pieces:
            if isinstance(piece, str):
                out.append(piece)
            else:
                val, ok, _ = _expand_dollar(inner, piece, env, subst)
                out.append(val)
                known = known and ok
        return "".join(out), known
    # A text not seen before: read it, recording its pieces. (One function for both, so
    # that nested expansions reach the recursion limit exactly where they used to.)
    record: list[str | int] = []
    i = 0
    n = len(inner)
    while i < n:
        m = _DQ_RUN.match(inner, i)
        if m:
            run = m.group()
            text = _dq_unescape(run) if "\\" in run else run
            out.append(text)
            record.append(text)
            i = m.end()
            continue
        c = inner[i]
        if c == "\\":  # (only a last lone backslash is left to this branch)
            nxt = inner[i + 1 : i + 2]
            if nxt in ('"', "\\", "$", "`"):
                text = nxt
            elif nxt == "\n":
                text = ""
            else:
                text = "\\" + nxt
            out.append(text)
            record.append(text)
            i += 2
        elif c == "$" or c == "`":
            record.append(i)
            val, ok, i = _expand_dollar(inner, i, env, subst)
            out.append(val)
            known = known and ok
        else:
            out.append(c)
            record.append(c)
            i += 1
    if n <= _SCAN_CACHE_MAX_LEN:
        if len(_DQ_PIECES) >= _DQ_PIECES_MAX:
            _DQ_PIECES.clear()
        _DQ_PIECES[inner] = tuple(record)
    return "".join(out), known


def _expand_dollar(
    s: str, i: int, env: dict[str, str], subst: Callable[[str], str | None] | None
) -> tuple[str, bool, int]:
    """Expand the ``$...``/backtick construct at ``s[i]``: (value, known, next index)."""
    n = len(s)
    if s[i] == "`":
        k = s.find("`", i + 1)
        end = n if k < 0 else k + 1
        inner = s[i + 1 : end - 1 if k >= 0 else n]
        val = subst(inner) if subst else None
        if val is None or not expansions.spend(len(val)):
            return s[i:end], False, end
        return val, True, end
    nxt = s[i + 1 : i + 2]  # (one test before the commonest case, $NAME, not three)
    if nxt == "(":
        end = _CONSTRUCT_ENDS.get((s, i)) or _remember_end(s, i, _skip_quoted_dollar(s, i))
        if s.startswith("$((", i):
            return s[i:end], False, end
        inner = s[i + 2 : end - 1 if s[end - 1 : end] == ")" else end]
        val = subst(inner) if subst else None
        if val is None or not expansions.spend(len(val)):
            return s[i:end], False, end
        return val, True, end
    if nxt == "{":
        k = s.find("}", i)
        end = n if k < 0 else k + 1
        body = s[i + 2 : end - 1 if k >= 0 else n]
        m = _PARAM.match(body)
        if m:
            name, op, arg = m.group(1), m.group(2), m.group(3)
            if name in env:
                val = env[name]
                if op in (":+", "+") or (op and op.startswith(":") and val == ""):
                    val = arg or ""
                if not expansions.spend(len(val)):
                    return s[i:end], False, end
                return val, True, end
            if op in (":-", "-", ":=", "="):
                return expand_word(arg or "", env, subst)[0], True, end
            return s[i:end], False, end
        m = _PARAM_LENGTH.match(body)
        if m and m.group(1) in env:
            return str(len(env[m.group(1)])), True, end
        return s[i:end], False, end
    m = _VARNAME.match(s, i + 1)
    if not m:
        return "$", True, i + 1
    name = m.group()
    if name in env:
        val = env[name]
        # Every known value an expansion copies is counted: a value doubled in a loop
        # (x=$x$x) stops being known once the text's budget is spent.
        if not expansions.spend(len(val)):
            return s[i : m.end()], False, m.end()
        return val, True, m.end()
    return s[i : m.end()], False, m.end()


def brace_expand(word: str, limit: int = 100_000) -> tuple[list[str], int]:
    """Bash brace expansion of one unquoted word: (values up to UNROLL_LIMIT, count)."""
    m = _BRACE_RANGE.match(word)
    if m:
        a, b = int(m.group(2)), int(m.group(3))
        step = abs(int(m.group(4) or 1)) or 1
        count = abs(b - a) // step + 1
        sign = 1 if b >= a else -1
        vals = [
            f"{m.group(1)}{a + sign * step * k}{m.group(5)}"
            for k in range(min(count, UNROLL_LIMIT + 1))
        ]
        return vals, min(count, limit)
    m = _BRACE_RANGE_ALPHA.match(word)
    if m:
        a, b = ord(m.group(2)), ord(m.group(3))
        rng = range(a, b + 1) if b >= a else range(a, b - 1, -1)
        return [f"{m.group(1)}{chr(c)}{m.group(4)}" for c in rng], len(rng)
    m = _BRACE_LIST.match(word)
    if m:
        vals = [f"{m.group(1)}{p}{m.group(3)}" for p in m.group(2).split(",")]
        return vals, len(vals)
    return [word], 1


def unquote_simple(word: str) -> str:
    """Remove quotes and backslashes without expanding anything."""
    if not _quoted(word):
        return word
    if word[0] == "'" and word.find("'", 1) == len(word) - 1:
        return word[1:-1]  # 'EOF': expand_word's first quoted case, without the call
    return expand_word(word, {}, None, keep_unknown=True)[0]
