"""The shell reader's fast paths give exactly what the paths they skip give.

Plain texts run from a tuple plan instead of AST nodes, expanded words are remembered
between commands, and a few scans are done by str methods instead of regexes. Each test
compares a fast path with the reference computation it replaces, on generated inputs
aimed at its edge cases (quotes, escapes, braces, redirections, heredocs, odd blanks).
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from monsearch.views import shell, shell_interp, shell_parse, shell_words

FAST = settings(max_examples=400, deadline=None, derandomize=True)

_PIECES = st.sampled_from(
    [
        "curl",
        " -s",
        " ",
        "  ",
        "\t",
        "\\\n",
        "\u00a0",
        "\n",
        ";",
        " && ",
        " || ",
        " | ",
        " & ",
        " > /tmp/o",
        " >> f",
        " 2>&1",
        " 2>/dev/null",
        " < in.txt",
        " <<< x",
        " <<'EOF'\nbody $X\nEOF\n",
        " <<EOF\nhi $X `id`\nEOF\n",
        " <<-EOF\n\tx\n\tEOF\n",
        "X=1",
        " Y=$X",
        "export Z=2",
        " echo",
        " cat",
        " $X",
        " ${X}",
        " ${X:-a b}",
        ' "$X"',
        ' "a b"',
        " 'a b'",
        ' "\\"q\\""',
        " \\$",
        " {1..3}",
        " {a,b}",
        ' "{a,b}"',
        " $(echo hi)",
        " `echo hi`",
        " #c",
        " for",
        " done",
        " \u0663>",
        " a=b",
        " bash -c 'echo $1'",
        " http://app:5000/api?a=1&b=2",
        " '{\"k\": 1}'",
        "'",
        '"',
    ]
)
_TEXTS = st.lists(_PIECES, max_size=14).map("".join)


def _read(text: str, interp: shell_interp._Interp, plain: bool) -> tuple[str, str]:
    try:
        if plain:
            plan = shell_parse._plain_plan(text)
            assert plan is not None
            interp.run_plain(plan, {})
        else:
            nodes = shell_parse._parse_plain(text)
            assert nodes is not None
            interp.run_nodes(nodes, {}, 1)
    except shell._READ_ERRORS:
        pass
    return repr(interp.out), repr(interp.written)


@FAST
@given(_TEXTS)
def test_a_plain_plan_runs_as_its_nodes_do(text: str) -> None:
    if shell_parse._plain_plan(text) is None:
        assert shell_parse._parse_plain(text) is None
        return
    files = {"in.txt": "a\nb\n"}.get
    shell.clear_caches()
    by_nodes = _read(text, shell_interp._Interp(files), plain=False)
    shell.clear_caches()
    assert _read(text, shell_interp._Interp(files), plain=True) == by_nodes
    # Warm caches (remembered words, double-quoted pieces) change nothing.
    assert _read(text, shell_interp._Interp(files), plain=True) == by_nodes


_WORD_PIECES = st.sampled_from(
    ["a", "-", "=", ",", "..", "://", "{", "}", "1", "'", '"', "\\", "$", "$X", "`", " ", "é"]
)


@FAST
@given(st.lists(_WORD_PIECES, min_size=1, max_size=10).map("".join))
def test_a_remembered_word_expands_as_a_new_one(word: str) -> None:
    env = {"X": "x y"}
    interp = shell_interp._Interp(None)
    shell.clear_caches()
    cold = interp.expand_words([word], env, None)
    assert interp.expand_words([word], env, None) == cold
    if word in shell_interp._WORD_VALUES:  # only values that depend on the word alone
        assert "$" not in word and "`" not in word
        assert [shell_interp._WORD_VALUES[word]] == cold
        assert shell_words.expand_word(word, {}, None)[0] == cold[0]


@FAST
@given(
    st.lists(st.sampled_from([" ", "\t", "\r", "\f", "\v", "\\\n", "\\", "\n", "a"])).map("".join)
)
def test_plain_blanks_read_what_the_alternation_read(text: str) -> None:
    old = re.compile(r"(?:[ \t\r\f\v]++|\\\n)*+")
    assert re.compile(shell_parse._PLAIN_BLANKS).match(text).end() == old.match(text).end()
