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

The reader's parts: :mod:`~monsearch.views.command` (the :class:`Command` record and the
limits), :mod:`~monsearch.views.shell_words` (tokens and word expansion),
:mod:`~monsearch.views.shell_parse` (the tree and the plain fast path),
:mod:`~monsearch.views.shell_interp` (the walk) and :mod:`~monsearch.views.shell_builtins`
(what ``cd``, ``echo``, ``printf``, ``cat`` and ``seq`` do); this module is its entry.
"""

from __future__ import annotations

from collections.abc import Iterator

from monsearch.views import expansions
from monsearch.views.command import Command, FileLookup
from monsearch.views.shell_interp import _WORD_VALUES, _Interp, _var_ref_pattern
from monsearch.views.shell_parse import _Parser, _plain_plan, parse
from monsearch.views.shell_words import _CONSTRUCT_ENDS, _DQ_PIECES, WORD, tokenize, unquote_simple

#: What a pathological text may raise inside the reader (caught by run_script).
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
