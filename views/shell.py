"""A tolerant, static reading of the bash commands an agent ran.

:func:`run_script` tokenises one ``execute_command`` text the way POSIX shells
(and :mod:`shlex` in POSIX mode) split words, then walks it like a tiny
abstract interpreter and returns the simple commands that would run, in order,
each with its expanded words. It understands:

* quoting (``'...'``, ``"..."``, backslashes), ``\\``-newline continuations,
  comments, ``;`` ``&&`` ``||`` ``|`` ``&`` and newlines,
* heredocs (``<<EOF``, ``<<'EOF'``, ``<<-EOF``) and here-strings (``<<<``),
  redirections (``> f``, ``>> f``, ``< f``, ``2>&1``),
* variables assigned earlier in the same text (``URL=...; curl $URL``,
  ``${HOST}``, ``${X:-default}``), ``export``/``local``/``declare``,
* command substitution ``$(...)`` and backticks (the inner commands run too;
  their value is known only for ``echo``/``printf``/``cat <known file>``/``seq``),
* loops: ``for v in a b c``, ``for i in $(seq 1 N)``, ``{1..N}``, ``for ((...))``,
  ``while``/``until`` (count known for ``while read`` over known input or a
  ``-lt/-le N`` counter), ``xargs`` (``seq N | xargs -I{} curl ...``), and
  ``watch``; small literal loops are unrolled (one command per value), larger
  ones give one command with ``repeat`` set to the iteration count,
  A list that cannot be known (``for u in $(curl ... | jq ...)``) counts as
  ``UNKNOWN_LOOP_REPEAT`` items and leaves ``$u`` unexpanded,
* shell functions, ``if``/``case``/``{ }``/``( )`` (every branch counted once),
  wrappers (``timeout``, ``nohup``, ``sudo``, ``env``, ``time``...),
  ``bash -c '...'``/``eval``, and scripts written earlier and run as
  ``bash f.sh``/``./f.sh`` (parsed recursively; a python shebang runs as python).

Nothing here ever raises on malformed input: unbalanced quotes run to the end
of the text, unknown expansions stay literal (``$TOKEN``), and every loop and
recursion is bounded.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from monsearch.views import expansions

#: Literal loops up to this many values are unrolled into one command per value.
UNROLL_LIMIT = 64
#: Iteration count assumed for a loop whose count cannot be read (``while true``).
UNKNOWN_LOOP_REPEAT = 10
_MAX_DEPTH = 12
_MAX_COMMANDS = 2000
_MAX_REPEAT = 10**9

FileLookup = Callable[[str], "str | None"]


@dataclass(slots=True)
class Command:
    """One simple command as it would run.

    ``argv`` holds the expanded words (quotes removed); ``stdin`` is text fed to
    the command when statically known (heredoc, here-string, ``< known file``,
    ``echo``/``printf``/``cat`` piped in); ``repeat`` is the product of the
    enclosing loop counts (``repeat_known`` False when a count was guessed).
    """

    argv: list[str]
    raw: str = ""
    stdin: str | None = None
    stdin_file: str | None = None
    stdout_file: str | None = None
    append: bool = False
    repeat: int = 1
    repeat_known: bool = True
    background: bool = False
    piped_from: Command | None = None
    pipes_to: bool = False
    env: dict[str, str] = field(default_factory=dict)
    output: str | None = None  # statically known stdout (echo/printf/cat of known data)
    cwd: str | None = None  # the folder of the last ``cd`` before it in the same text


# --------------------------------------------------------------------------- tokens

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


def unquote_simple(word: str) -> str:
    """Remove quotes and backslashes without expanding anything."""
    if not _quoted(word):
        return word
    if word[0] == "'" and word.find("'", 1) == len(word) - 1:
        return word[1:-1]  # 'EOF': expand_word's first quoted case, without the call
    return expand_word(word, {}, None, keep_unknown=True)[0]


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


# --------------------------------------------------------------------------- parser

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


# --------------------------------------------------------------------------- interpreter

_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?)=(.*)$", re.S)
_WRAPPERS_NOARG = {
    "nohup",
    "time",
    "exec",
    "command",
    "builtin",
    "noglob",
    "unbuffer",
    "stdbuf",
    "nice",
    "ionice",
    "setsid",
    "proxychains",
    "proxychains4",
    "torsocks",
}
#: Every command name a branch of :meth:`_Interp.unwrap` tests (besides paths with a "/").
_UNWRAP_NAMES = frozenset(
    {
        *_WRAPPERS_NOARG,
        *("timeout", "sudo", "doas", "env", "watch", "bash", "sh", "zsh", "dash"),
        *("source", ".", "eval", "xargs"),
    }
)
_ARITH_FOR = re.compile(
    r"^\s*(\w+)\s*=\s*(-?\d+)\s*;\s*\w+\s*(<=|<|>=|>|!=)\s*(-?\d+)\s*;\s*\w+\s*(\+\+|--|\+=\s*\d+|-=\s*\d+)?"
)
_COUNTER_COND = re.compile(
    r"\$\{?(\w+)\}?\"?\s+-(lt|le|ne)\s+\"?(\d+)|\(\(\s*(\w+)\s*(<=|<)\s*(\d+)\s*\)\)"
)


#: Words :meth:`_Interp.expand_words` has expanded -> their value, for words without
#: ``$`` or a backtick: their value depends on nothing else (quotes, escapes and braces
#: only). Agents repeat words from command to command (``curl``, ``-H``, a header with
#: the same token, the same URL), and one dict look-up spares the scans of each.
#: Bounded in count and length; cleared when full.
_WORD_VALUES: dict[str, str] = {}
_WORD_VALUES_MAX = 4096


def _expand_one_word(
    w: str, env: dict[str, str], subst: Callable[[str], str | None] | None
) -> str | list[str]:
    """One word's value for :meth:`_Interp.expand_words`: a list when braces give several
    (or none); a single value of a word without ``$`` or a backtick is remembered."""
    if _EXPANDABLE.search(w) is None:
        return _remember_word(w, w)  # nothing to expand (expand_word's first test), no braces
    c = w[0]
    if c == "'" and w.find("'", 1) == len(w) - 1:
        return _remember_word(w, w[1:-1])  # one '...' string: expand_word's value, no braces
    if c == '"' == w[-1] and len(w) >= 2 and _DQ_WORD.fullmatch(w):
        # One "..." string without $( or backticks: expand_word's value (its tests of
        # the word, repeated here, are spared), and no braces.
        inner = w[1:-1]
        if "$" in inner:
            return _expand_dq(inner, env, subst)[0]
        return _remember_word(w, _dq_unescape(inner) if "\\" in inner else inner)
    val, _ = expand_word(w, env, subst)
    # Unquoted {a..b} ranges and {x,y} lists (not JSON, URLs or assignments).
    if (
        "{" in w
        and "'" not in w
        and '"' not in w
        and (".." in w or ("," in w and "=" not in w and "://" not in w))
    ):
        return brace_expand(val)[0]
    if "$" in w or "`" in w:
        return val
    return _remember_word(w, val)


def _remember_word(w: str, val: str) -> str:
    if len(w) <= _SCAN_CACHE_MAX_LEN:
        if len(_WORD_VALUES) >= _WORD_VALUES_MAX:
            _WORD_VALUES.clear()
        _WORD_VALUES[w] = val
    return val


#: The leading assignments of a command that has none (never written to).
_NO_ASSIGNS: dict[str, str] = {}


def _assignments(
    words: list[str], env: dict[str, str], subst: Callable[[str], str | None] | None
) -> tuple[int, dict[str, str], list[str]]:
    """The leading ``NAME=value`` words of a command: how many, the known values, and the
    names whose value is unknown."""
    k = 0
    assigns: dict[str, str] = {}
    unknown: list[str] = []
    while k < len(words) and "=" in words[k] and (m := _ASSIGN.match(words[k])):
        val, ok = expand_word(m.group(3), {**env, **assigns}, subst)
        name = m.group(1)
        if ok and m.group(2):  # NAME+=value copies the old value too
            ok = expansions.spend(len(env.get(name, "")))
        if ok:
            assigns[name] = (env.get(name, "") + val) if m.group(2) else val
        else:
            # Unknown values (e.g. TOKEN=$(curl ... | jq)) stay as "$TOKEN".
            unknown.append(name)
        k += 1
    return k, assigns, unknown


class _Interp:
    def __init__(self, files: FileLookup | None):
        self.files = files
        self.out: list[Command] = []
        self.funcs: dict[str, list[object]] = {}
        self.depth = 0
        self.written: dict[str, str] = {}
        self.cwd: str | None = None

    # -- helpers
    def lookup_file(self, path: str) -> str | None:
        if path in self.written:
            return self.written[path]
        found = self.files(path) if self.files else None
        if found is None and self.cwd and path and not path.startswith(("/", "~", "$")):
            return self.lookup_file(self.cwd.rstrip("/") + "/" + path)
        return found

    def make_subst(self, env: dict[str, str], repeat: int) -> Callable[[str], str | None]:
        def subst(inner: str) -> str | None:
            if self.depth > _MAX_DEPTH:
                return None
            self.depth += 1
            try:
                cmds = self.run_nodes(parse(inner), dict(env), repeat, capture=True)
            finally:
                self.depth -= 1
            if cmds and all(c.output is not None for c in cmds):
                return "".join(c.output or "" for c in cmds).rstrip("\n")
            return None

        return subst

    def expand_words(
        self, words: list[str], env: dict[str, str], subst: Callable[[str], str | None] | None
    ) -> list[str]:
        """Expanded words; ``subst`` is ``make_subst(env, repeat)``, or None when no word
        has a command substitution."""
        out: list[str] = []
        known = _WORD_VALUES.get
        for w in words:
            val = known(w)
            if val is None:
                val = _expand_one_word(w, env, subst)
                if val.__class__ is list:
                    out.extend(val)
                    continue
            out.append(val)
        return out

    def expand_heredoc(self, tok: Token, env: dict[str, str], repeat: int) -> str:
        body = tok.heredoc or ""
        if tok.heredoc_quoted or "$" not in body and "`" not in body:
            return body
        return _expand_dq(body.replace('"', '\\"'), env, self.make_subst(env, repeat))[0].replace(
            '\\"', '"'
        )

    # -- walking
    def run_nodes(
        self, nodes: list[object], env: dict[str, str], repeat: int, capture: bool = False
    ) -> list[Command]:
        start = len(self.out)
        for node in nodes:
            if len(self.out) > _MAX_COMMANDS:
                break
            if isinstance(node, Pipeline):
                self.run_pipeline(node, env, repeat)
        return self.out[start:]

    def run_pipeline(self, pipe: Pipeline, env: dict[str, str], repeat: int) -> None:
        parts = pipe.parts
        if len(parts) == 1 and not pipe.background and isinstance(parts[0], Simple):
            # The most common pipeline, one simple command: what run_part does for it.
            node = parts[0]
            self.run_simple(node.words, node.redirects, node.raw, env, repeat, None, False)
            return
        prev: Command | None = None
        for k, part in enumerate(pipe.parts):
            last = k == len(pipe.parts) - 1
            cmds = self.run_part(part, env, repeat, prev, pipe.background)
            if not last:
                for c in cmds:
                    c.pipes_to = True
            prev = cmds[-1] if cmds else None

    def run_part(
        self, part: object, env: dict[str, str], repeat: int, prev: Command | None, bg: bool
    ) -> list[Command]:
        start = len(self.out)
        if isinstance(part, Simple):
            self.run_simple(part.words, part.redirects, part.raw, env, repeat, prev, bg)
        elif isinstance(part, ForLoop):
            self.run_for(part, env, repeat, prev)
        elif isinstance(part, WhileLoop):
            self.run_while(part, env, repeat, prev)
        elif isinstance(part, Group):
            self.run_nodes(part.body, env, repeat)
        elif isinstance(part, FuncDef):
            self.funcs[part.name] = part.body
        if bg:
            for c in self.out[start:]:
                c.background = True
        return self.out[start:]

    def run_for(
        self, loop: ForLoop, env: dict[str, str], repeat: int, prev: Command | None
    ) -> None:
        if loop.items is None:
            count, var, first, known = _arith_for(loop.arith or "")
            values = (
                [str(first + k) for k in range(count)]
                if known and count <= UNROLL_LIMIT and var and _mentions(loop.body, var)
                else None
            )
            if values is not None:
                for v in values:
                    self.run_nodes(loop.body, {**env, var: v}, repeat)
            else:
                self.run_nodes(
                    loop.body, {**env, var: str(first)} if var else env, _mul(repeat, count)
                )
                if not known:
                    self._mark_unknown(len(self.out))
            return
        values: list[str] = []
        count = 0
        exact = True
        subst = self.make_subst(env, repeat)
        for w in loop.items:
            if w == "$@":
                exact = False
                continue
            val, ok = expand_word(w, env, subst)
            quoted = "'" in w or '"' in w
            if not ok:
                # An unknown list (e.g. $(curl ... | jq ...)): guess its length and
                # leave the loop variable unexpanded.
                exact = False
                count += UNKNOWN_LOOP_REPEAT
            elif quoted:
                values.append(val)
                count += 1
            else:
                # Unquoted expansion is word-split (seq output, $(cat list)).
                for piece in val.split() or ([] if w.startswith("$") else [val]):
                    vals, c = brace_expand(piece)
                    values.extend(vals)
                    count += c
        if count == 0:
            return
        if count <= UNROLL_LIMIT and len(values) == count and _mentions(loop.body, loop.var):
            start = len(self.out)
            for v in values:
                self.run_nodes(loop.body, {**env, loop.var: v}, repeat)
            if not exact:
                self._mark_unknown(start)
        else:
            start = len(self.out)
            body_env = dict(env)
            if exact and values:
                body_env[loop.var] = values[0]
            else:
                body_env.pop(loop.var, None)
            self.run_nodes(loop.body, body_env, _mul(repeat, count))
            if not exact:
                self._mark_unknown(start)

    def run_while(
        self, loop: WhileLoop, env: dict[str, str], repeat: int, prev: Command | None
    ) -> None:
        count: int | None = None
        cond_text = " ".join(
            p.raw
            for pl in loop.cond
            if isinstance(pl, Pipeline)
            for p in pl.parts
            if isinstance(p, Simple)
        )
        start = len(self.out)
        self.run_nodes(loop.cond, env, repeat)
        is_read = cond_text.startswith("read") or " read " in f" {cond_text} "
        if is_read:
            data = None
            for op, target, tok in loop.redirects:
                if op == "<" and target:
                    data = self.lookup_file(unquote_simple(target))
                elif op in ("<<", "<<-"):
                    data = self.expand_heredoc(tok, env, repeat)
                elif op == "<<<" and target:
                    data = expand_word(target, env, None)[0] + "\n"
            if data is None and prev is not None and prev.output is not None:
                data = prev.output
            if data is not None:
                count = len([ln for ln in data.splitlines() if ln.strip()])
        else:
            m = _COUNTER_COND.search(cond_text)
            if m:
                if m.group(3):
                    var, limit, op = m.group(1), int(m.group(3)), m.group(2)
                    first = int(env.get(var, "0")) if env.get(var, "0").lstrip("-").isdigit() else 0
                    count = max(0, limit - first + (1 if op == "le" else 0))
                else:
                    var, limit, op = m.group(4), int(m.group(6)), m.group(5)
                    first = int(env.get(var, "0")) if env.get(var, "0").lstrip("-").isdigit() else 0
                    count = max(0, limit - first + (1 if op == "<=" else 0))
        body_start = len(self.out)
        self.run_nodes(
            loop.body, env, _mul(repeat, count if count is not None else UNKNOWN_LOOP_REPEAT)
        )
        for c in self.out[start:body_start]:
            c.repeat = _mul(repeat, count if count is not None else UNKNOWN_LOOP_REPEAT)
        if count is None:
            self._mark_unknown(start)

    def _mark_unknown(self, start: int) -> None:
        for c in self.out[start:]:
            c.repeat_known = False

    def run_plain(self, plan: _PlainPlan, env: dict[str, str]) -> None:
        """:meth:`run_nodes` of :func:`_parse_plain`'s AST for ``plan`` (repeat 1), walking
        the tuples: what :meth:`run_pipeline` and :meth:`run_part` do for simple commands."""
        out = self.out
        for parts, bg in plan:
            if len(out) > _MAX_COMMANDS:
                break
            if len(parts) == 1 and not bg:
                words, reds, raw = parts[0]
                self.run_simple(words, reds, raw, env, 1, None, False)
                continue
            prev: Command | None = None
            last = len(parts) - 1
            for k, (words, reds, raw) in enumerate(parts):
                start = len(out)
                self.run_simple(words, reds, raw, env, 1, prev, bg)
                cmds = out[start:]
                if bg:
                    for c in cmds:
                        c.background = True
                if k != last:
                    for c in cmds:
                        c.pipes_to = True
                prev = cmds[-1] if cmds else None

    def run_simple(
        self,
        words: list[str],
        redirects: list[tuple[str, str | None, Token]],
        raw: str,  # every word and redirection target of the command
        env: dict[str, str],
        repeat: int,
        prev: Command | None,
        bg: bool,
    ) -> None:
        # Only a "$(" or a backtick makes expand_word call ``subst``: spare the closure.
        subst = self.make_subst(env, repeat) if "$(" in raw or "`" in raw else None
        # Leading assignments (most commands start with a name: no dict or list for them).
        k = 0
        assigns: dict[str, str] = _NO_ASSIGNS
        unknown: list[str] | tuple[()] = ()
        if words and "=" in words[0]:
            k, assigns, unknown = _assignments(words, env, subst)
        if k == len(words):
            for name in unknown:
                env.pop(name, None)
            env.update(assigns)
            if not redirects:
                return
        cmd_env = {**env, **assigns} if assigns else env
        # (_EXPANDABLE.search(raw) is None, by six scans in C: the regex engine costs about
        # fifty instructions a character, a long URL or token makes that count.)
        if not ('"' in raw or "'" in raw or "$" in raw or "\\" in raw or "`" in raw or "{" in raw):
            # Most commands: no word has anything to expand, so expand_words keeps them all.
            argv = words[k:] if k else words[:]
        else:
            # Without assignments the command's env is env itself: ``subst`` serves as is.
            argv = self.expand_words(
                words[k:] if k else words,
                cmd_env,
                self.make_subst(cmd_env, repeat) if subst and cmd_env is not env else subst,
            )
        if argv and argv[0] in ("export", "local", "declare", "typeset", "readonly"):
            for w in words[k + 1 :]:
                if m := _ASSIGN.match(w):
                    val, ok = expand_word(m.group(3), env, subst)
                    if ok:
                        env[m.group(1)] = val
                    else:
                        env.pop(m.group(1), None)
            return
        if argv and argv[0] in self.funcs and self.depth <= _MAX_DEPTH:
            self.depth += 1
            try:
                fenv = dict(env)
                for idx, a in enumerate(argv[1:], 1):
                    fenv[str(idx)] = a
                fenv["@"] = " ".join(argv[1:])
                self.run_nodes(self.funcs[argv[0]], fenv, repeat)
            finally:
                self.depth -= 1
            return
        # (Arguments by position, in field order: a keyword call costs a third of a
        # microsecond more, for every command run.)
        cmd = Command(
            argv, raw, None, None, None, False,  # stdin, stdin_file, stdout_file, append
            repeat, True, bg, None, False,  # repeat_known, background, piped_from, pipes_to
            cmd_env, None, self.cwd,  # env, output, cwd
        )  # fmt: skip
        if prev is not None:
            cmd.piped_from = prev
            if prev.output is not None:
                cmd.stdin = prev.output
        for op, target, tok in redirects:
            tgt = expand_word(target, cmd_env, subst)[0] if target is not None else None
            if op in ("<<", "<<-"):
                cmd.stdin = self.expand_heredoc(tok, cmd_env, repeat)
            elif op == "<<<" and tgt is not None:
                cmd.stdin = tgt + "\n"
            elif op == "<" and tgt:
                cmd.stdin_file = tgt
                content = self.lookup_file(tgt)
                if content is not None:
                    cmd.stdin = content
            elif op.lstrip("0123456789&") in (">", ">>", ">|") and tgt and not op.startswith("2"):
                cmd.stdout_file = tgt
                cmd.append = op.endswith(">>")
        name = argv[0] if argv else ""
        if "/" in name or name in _UNWRAP_NAMES:
            self.unwrap(cmd, env, repeat)
        elif argv:
            self._emit(cmd, argv)  # no wrapper to strip: unwrap's loop would stop at once

    def unwrap(self, cmd: Command, env: dict[str, str], repeat: int) -> None:
        """Strip wrapper commands, recurse into ``bash -c``/``eval``/``xargs``, then emit."""
        argv = cmd.argv
        guard = 0
        while argv and guard < 8:
            guard += 1
            name = argv[0]
            if "/" in name:
                name = name.rsplit("/", 1)[-1]
            elif name not in _UNWRAP_NAMES:
                break  # no branch below applies: spare the tests
            if name in _WRAPPERS_NOARG:
                argv = _drop_options(argv[1:])
            elif name == "timeout":
                rest = _drop_options(argv[1:], takes_arg={"-s", "--signal", "-k", "--kill-after"})
                argv = rest[1:] if rest else []
            elif name in ("sudo", "doas"):
                argv = _drop_options(argv[1:], takes_arg={"-u", "-g", "-C", "-h", "-p", "-U"})
            elif name == "env":
                rest = _drop_options(argv[1:], takes_arg={"-u", "--unset", "-C", "--chdir"})
                while rest and _ASSIGN.match(rest[0]):
                    rest = rest[1:]
                argv = rest
            elif name == "watch":
                rest = _drop_options(argv[1:], takes_arg={"-n", "--interval", "-d"})
                cmd.repeat = _mul(cmd.repeat, UNKNOWN_LOOP_REPEAT)
                cmd.repeat_known = False
                if len(rest) == 1:
                    self._recurse_text(rest[0], cmd, env)
                    return
                argv = rest
            elif name in ("bash", "sh", "zsh", "dash") and "-c" in argv[1:3]:
                idx = argv.index("-c")
                if idx + 1 < len(argv):
                    self._recurse_text(argv[idx + 1], cmd, env)
                    return
                break
            elif name in ("bash", "sh") and len(argv) == 1 and cmd.stdin:
                self._recurse_text(cmd.stdin, cmd, env)
                return
            elif name in ("bash", "sh", "zsh", "dash", "source", ".") and len(argv) >= 2:
                script = self.lookup_file(argv[1]) if not argv[1].startswith("-") else None
                if script is None:
                    break
                self._recurse_text(
                    script, cmd, {**env, **{str(k): a for k, a in enumerate(argv[2:], 1)}}
                )
                return
            elif "/" in argv[0] and (script := self.lookup_file(argv[0])) is not None:
                # ./exploit.sh or /tmp/x.py written earlier: run it by its shebang.
                first = script.split("\n", 1)[0]
                if first.startswith("#!") and "python" in first:
                    argv = ["python3", *argv]
                    break
                self._recurse_text(
                    script, cmd, {**env, **{str(k): a for k, a in enumerate(argv[1:], 1)}}
                )
                return
            elif name == "eval" and len(argv) > 1:
                self._recurse_text(" ".join(argv[1:]), cmd, env)
                return
            elif name == "xargs":
                self._xargs(cmd, argv, env)
                return
            else:
                break
        cmd.argv = argv
        if argv:
            self._emit(cmd, argv)

    def _emit(self, cmd: Command, argv: list[str]) -> None:
        """Record the command ``cmd`` (its argv unwrapped): its folder, known output and
        the files it writes."""
        if argv[0] in ("cd", "pushd"):
            self.cwd = _change_dir(self.cwd, argv[1:])
        # (_static_output, without building the bound lookup for the other commands.)
        known = _STATIC_OUTPUTS.get(argv[0])
        cmd.output = known(cmd, self.lookup_file) if known is not None else None
        if cmd.stdout_file:
            content = (
                cmd.output
                if cmd.output is not None
                else (cmd.stdin if argv[0] == "cat" and len(argv) == 1 else None)
            )
            if content is not None:
                old = self.written.get(cmd.stdout_file, "") if cmd.append else ""
                self.written[cmd.stdout_file] = old + content
            if cmd.output is not None:
                cmd.output = None if cmd.stdout_file else cmd.output
        if argv[0] == "tee" and cmd.stdin is not None:
            for path in [a for a in argv[1:] if not a.startswith("-")]:
                self.written[path] = (
                    self.written.get(path, "") if "-a" in argv else ""
                ) + cmd.stdin
            cmd.output = cmd.stdin
        self.out.append(cmd)

    def _recurse_text(self, text: str, cmd: Command, env: dict[str, str]) -> None:
        if self.depth > _MAX_DEPTH:
            return
        self.depth += 1
        try:
            start = len(self.out)
            self.run_nodes(parse(text), dict(env), cmd.repeat)
            for c in self.out[start:]:
                c.background = c.background or cmd.background
                c.repeat_known = c.repeat_known and cmd.repeat_known
                if c.piped_from is None and cmd.piped_from is not None:
                    c.piped_from = cmd.piped_from
                    if c.stdin is None:
                        c.stdin = cmd.stdin
        finally:
            self.depth -= 1

    def _xargs(self, cmd: Command, argv: list[str], env: dict[str, str]) -> None:
        i = 1
        repl: str | None = None
        per = 0
        while i < len(argv) and argv[i].startswith("-"):
            a = argv[i]
            if a in ("-I", "-i", "--replace"):
                repl = argv[i + 1] if a == "-I" and i + 1 < len(argv) else "{}"
                i += 2 if a == "-I" else 1
                continue
            if a.startswith("-I") and len(a) > 2:
                repl = a[2:]
            elif a in (
                "-n",
                "-L",
                "-P",
                "-d",
                "-s",
                "-a",
                "-E",
                "--max-args",
                "--max-procs",
                "--delimiter",
            ):
                if a in ("-n", "-L", "--max-args") and i + 1 < len(argv) and argv[i + 1].isdigit():
                    per = int(argv[i + 1])
                i += 2
                continue
            elif re.fullmatch(r"-[nL]\d+", a):
                per = int(a[2:])
            i += 1
        inner = argv[i:] or ["echo"]
        items: list[str] | None = None
        if cmd.stdin is not None:
            items = cmd.stdin.split("\n") if repl else cmd.stdin.split()
            items = [x.strip() for x in items if x.strip()]
        if items is None:
            count, known = UNKNOWN_LOOP_REPEAT, False
        else:
            count = len(items) if (repl or per) else (1 if items else 0)
            if per > 1 and not repl:
                count = -(-len(items) // per)
            known = True
        if count == 0:
            return
        if items is not None and repl and len(items) <= UNROLL_LIMIT:
            for it in items:
                sub = Command(
                    argv=[a.replace(repl, it) for a in inner],
                    raw=cmd.raw,
                    repeat=cmd.repeat,
                    background=cmd.background,
                    env=cmd.env,
                    stdout_file=cmd.stdout_file,
                )
                self.unwrap(sub, env, cmd.repeat)
            return
        if items is not None and not repl and not per:
            inner = inner + items
        elif items is not None and repl and items:
            inner = [a.replace(repl, items[0]) for a in inner]
        sub = Command(
            argv=inner,
            raw=cmd.raw,
            repeat=_mul(cmd.repeat, count),
            repeat_known=known and cmd.repeat_known,
            background=cmd.background,
            env=cmd.env,
            stdout_file=cmd.stdout_file,
        )
        self.unwrap(sub, env, cmd.repeat)


@functools.lru_cache(maxsize=256)
def _var_ref_pattern(var: str) -> re.Pattern[str]:
    return re.compile(r"\$\{?" + re.escape(var) + r"(?![A-Za-z0-9_])")


def _mentions(nodes: list[object], var: str) -> bool:
    """Whether any word or redirect in ``nodes`` refers to ``$var`` (so unrolling matters)."""
    pat = _var_ref_pattern(var)
    stack: list[object] = list(nodes)
    while stack:
        node = stack.pop()
        if isinstance(node, Pipeline):
            stack.extend(node.parts)
        elif isinstance(node, Simple):
            if any("$" in w and pat.search(w) for w in node.words):
                return True
            if any(t is not None and pat.search(t) for _, t, _ in node.redirects):
                return True
            if any(tok.heredoc and pat.search(tok.heredoc) for _, _, tok in node.redirects):
                return True
        elif isinstance(node, ForLoop):
            stack.extend(node.body)
            if node.items and any(pat.search(w) for w in node.items):
                return True
        elif isinstance(node, WhileLoop):
            stack.extend(node.cond)
            stack.extend(node.body)
        elif isinstance(node, (Group, FuncDef)):
            stack.extend(node.body)
    return False


def _change_dir(cwd: str | None, args: list[str]) -> str | None:
    """The folder after ``cd args`` from ``cwd`` (None: the shell's start folder)."""
    args = [a for a in args if not a.startswith("-") or a == "-"]
    if not args or args[0] in ("~", "$HOME"):
        return "/root"
    target = args[0]
    if target == "-" or "$" in target:
        return None
    if target.startswith("~/"):
        target = "/root" + target[1:]
    if not target.startswith("/"):
        if cwd is None:
            return None
        target = cwd.rstrip("/") + "/" + target
    parts: list[str] = []
    for part in target.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
        else:
            parts.append(part)
    return "/" + "/".join(parts)


def _drop_options(argv: list[str], takes_arg: set[str] | None = None) -> list[str]:
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        if takes_arg and argv[i] in takes_arg:
            i += 1
        i += 1
    return argv[i:]


def _mul(a: int, b: int) -> int:
    return min(a * b, _MAX_REPEAT)


def _arith_for(text: str) -> tuple[int, str, int, bool]:
    m = _ARITH_FOR.match(text)
    if not m:
        return UNKNOWN_LOOP_REPEAT, "", 0, False
    var, a, op, b, inc = (
        m.group(1),
        int(m.group(2)),
        m.group(3),
        int(m.group(4)),
        (m.group(5) or "++"),
    )
    step = 1
    if "=" in inc:
        step = int(re.sub(r"\D", "", inc) or 1) or 1
    if inc.startswith("-"):
        step = -step
    if op in ("<", "<="):
        span = b - a + (1 if op == "<=" else 0)
        count = max(0, -(-span // step)) if step > 0 else UNKNOWN_LOOP_REPEAT
    elif op in (">", ">="):
        span = a - b + (1 if op == ">=" else 0)
        count = max(0, -(-span // -step)) if step < 0 else UNKNOWN_LOOP_REPEAT
    else:
        count = abs(b - a) // abs(step) if step else UNKNOWN_LOOP_REPEAT
    return min(count, _MAX_REPEAT), var, a, True


_PRINTF_SPEC = re.compile(r"%(?:%|[-+ #0]*\d*(?:\.\d+)?[sdbqifxXc])")


_ECHO_FLAGS = re.compile(r"-[neE]+")


def _echo_text(args: list[str]) -> str:
    newline = True
    escapes = False
    while args and _ECHO_FLAGS.fullmatch(args[0]):
        newline = newline and "n" not in args[0]
        escapes = "e" in args[0] or escapes
        args = args[1:]
    text = " ".join(args)
    if escapes:
        text = _c_escapes(text)
    return text + ("\n" if newline else "")


def _c_escapes(text: str) -> str:
    return text.replace("\\n", "\n").replace("\\t", "\t").replace("\\r", "\r").replace("\\\\", "\\")


def _printf_text(args: list[str]) -> str:
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        return ""
    fmt = _c_escapes(args[0])
    vals = args[1:]
    if not _PRINTF_SPEC.search(fmt):
        return fmt.replace("%%", "%")
    out: list[str] = []
    idx = 0
    # printf reuses the format until all arguments are consumed.
    for _ in range(64):

        def repl(m: re.Match[str]) -> str:
            nonlocal idx
            spec = m.group()
            if spec == "%%":
                return "%"
            v = vals[idx] if idx < len(vals) else None
            idx += 1
            conv = spec[-1]
            if conv in "sq":
                return v or ""
            if expansions.HUGE_WIDTH.search(spec):  # %0999999999d: not built
                return v or ""
            if conv == "b":
                return _c_escapes(v or "")
            if conv == "c":
                return (v or "")[:1]
            # Numeric conversions behave like bash: a missing argument is 0.
            try:
                num: float = float(v or 0) if conv == "f" else int(v or 0, 0)
                return (spec[:-1].replace("i", "d") + ("d" if conv == "i" else conv)) % num
            except (ValueError, TypeError):
                return v or ""

        out.append(_PRINTF_SPEC.sub(repl, fmt))
        if idx >= len(vals):
            break
    return "".join(out)


def _cat_output(cmd: Command, files: FileLookup) -> str | None:
    paths = [a for a in cmd.argv[1:] if not a.startswith("-") or a == "-"]
    if not paths:
        return cmd.stdin
    parts = []
    for p in paths:
        c = cmd.stdin if p == "-" else files(p)
        if c is None:
            return None
        parts.append(c)
    # (``cat f f f ...`` repeats a file as often as it is named: count it before.)
    return "".join(parts) if len(parts) == 1 or expansions.spend(sum(map(len, parts))) else None


def _seq_output(cmd: Command, files: FileLookup) -> str | None:
    nums = [a for a in cmd.argv[1:] if re.fullmatch(r"-?\d+", a)]
    if len(nums) == 1:
        a, step, b = 1, 1, int(nums[0])
    elif len(nums) == 2:
        a, step, b = int(nums[0]), 1, int(nums[1])
    elif len(nums) == 3:
        a, step, b = int(nums[0]), int(nums[1]) or 1, int(nums[2])
    else:
        return None
    count = max(0, (b - a) // step + 1)
    if count > 100_000:
        return None
    return "".join(f"{a + k * step}\n" for k in range(count))


#: The commands whose stdout can be known without running them, by name: one dict
#: look-up instead of a test per name for every other command.
_STATIC_OUTPUTS: dict[str, Callable[[Command, FileLookup], str | None]] = {
    "echo": lambda cmd, files: _echo_text(cmd.argv[1:]),
    "printf": lambda cmd, files: _printf_text(cmd.argv[1:]),
    "cat": _cat_output,
    "seq": _seq_output,
    "true": lambda cmd, files: "",
}


def _static_output(cmd: Command, files: FileLookup) -> str | None:
    """Stdout of ``cmd`` when it can be known without running it."""
    known = _STATIC_OUTPUTS.get(cmd.argv[0])
    return known(cmd, files) if known is not None else None


_READ_ERRORS = (
    RecursionError,
    ValueError,
    IndexError,
    KeyError,
    TypeError,
    OverflowError,
    MemoryError,
)


def clear_caches() -> None:
    """Drop what the shell reader remembers between texts (parses, double-quoted pieces,
    construct ends, variable patterns); results never depend on it, only speed."""
    parse.cache_clear()
    _DQ_PIECES.clear()
    _CONSTRUCT_ENDS.clear()
    _var_ref_pattern.cache_clear()
    _WORD_VALUES.clear()


def run_script(text: str, files: FileLookup | None = None) -> tuple[list[Command], dict[str, str]]:
    """Read one command text: the simple commands that run, and files it writes.

    ``files`` resolves paths written by earlier steps (for ``cat f``, ``< f``,
    ``-d @f``). Returns ``(commands, written)`` where ``written`` maps each path
    to its statically known new content. Never raises.
    """
    interp = _Interp(files)
    expansions.begin()
    # A pathological text keeps whatever was read before the failure. (try, not
    # contextlib.suppress: that costs about a microsecond per text.)
    try:  # noqa: SIM105
        # A whole text is parsed without the cache: its callers keep what it reads (the
        # view's step cache), and a second, cached copy of every step's AST would only
        # give the garbage collector more to walk (a fifth of the objects a view build
        # leaves behind). The texts found inside commands stay cached. A plain text is
        # run from its plan, without nodes (_parse_uncached would build them).
        plan = _plain_plan(text)
        if plan is not None:
            interp.run_plain(plan, {})
        else:
            interp.run_nodes(_Parser(tokenize(text)).parse_list(frozenset()), {}, 1)
    except _READ_ERRORS:
        pass
    finally:
        expansions.end()
    return interp.out, interp.written


def iter_words(text: str) -> Iterator[str]:
    """Shell words of ``text`` with quotes removed and nothing expanded (like ``shlex.split``)."""
    for tok in tokenize(text):
        if tok.kind == WORD:
            yield unquote_simple(tok.text)
