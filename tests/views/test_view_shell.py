"""Static reading of shell commands: words, heredocs, variables, loops."""

from __future__ import annotations

import shlex

from hypothesis import given, settings
from hypothesis import strategies as st

from monsearch.views.command import UNKNOWN_LOOP_REPEAT
from monsearch.views.shell import iter_words, run_script


def argvs(text: str, files=None) -> list[list[str]]:
    return [c.argv for c in run_script(text, files)[0]]


def curls(text: str, files=None):
    return [c for c in run_script(text, files)[0] if c.argv and c.argv[0] == "curl"]


# ---------------------------------------------------------------- words

_WORD_ALPHABET = st.text(alphabet="ab19 -=/.:'\"\\\t", max_size=40)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(_WORD_ALPHABET)
def test_words_match_shlex_posix_splitting(text):
    try:
        expected = shlex.split(text)
    except ValueError:
        return  # unbalanced: shlex refuses, we only promise not to raise
    assert list(iter_words(text)) == expected


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(max_size=200))
def test_never_raises_on_arbitrary_text(text):
    cmds, written = run_script(text)
    assert isinstance(cmds, list) and isinstance(written, dict)


def test_unbalanced_quotes_run_to_the_end():
    assert argvs("curl 'http://app:5000/x") == [["curl", "http://app:5000/x"]]
    assert argvs('echo "abc') == [["echo", "abc"]]
    assert argvs("echo $(curl http://app:5000/")[-1][0] == "echo"


def test_quotes_of_all_kinds_and_escapes():
    text = """curl -H "X-A: \\"q\\"" -H 'X-B: $NOPE' -d a\\ b "http://app:5000/p?q=1&r=2" """
    assert argvs(text) == [
        ["curl", "-H", 'X-A: "q"', "-H", "X-B: $NOPE", "-d", "a b", "http://app:5000/p?q=1&r=2"]
    ]


def test_operators_split_commands():
    text = "curl a:1/x; curl a:1/y && curl a:1/z || echo no | tee f & wait"
    assert [a[0] for a in argvs(text)] == ["curl", "curl", "curl", "echo", "tee", "wait"]


def test_backslash_newline_continuations():
    text = "curl -s -X POST \\\n  -H 'Content-Type: application/json' \\\n  -d '{\"a\":1}' \\\n  http://app:5000/api"
    assert argvs(text) == [
        [
            "curl",
            "-s",
            "-X",
            "POST",
            "-H",
            "Content-Type: application/json",
            "-d",
            '{"a":1}',
            "http://app:5000/api",
        ]
    ]


def test_comments_are_skipped_but_hash_in_words_kept():
    assert argvs("# recon\ncurl http://app:5000/#frag # trailing") == [
        ["curl", "http://app:5000/#frag"]
    ]


# ---------------------------------------------------------------- heredocs and files


def test_heredoc_quoted_and_unquoted_and_dash():
    text = "X=world\ncat > /tmp/a.txt <<'EOF'\nhello $X\nEOF\ncat > /tmp/b.txt <<EOF\nhello $X\nEOF\ncat <<-END > /tmp/c.txt\n\tindented\n\tEND\necho done"
    cmds, written = run_script(text)
    assert written == {
        "/tmp/a.txt": "hello $X\n",
        "/tmp/b.txt": "hello world\n",
        "/tmp/c.txt": "indented\n",
    }
    assert cmds[-1].argv == ["echo", "done"]


def test_heredoc_feeds_stdin_of_python():
    cmds, _ = run_script("python3 - <<'PY'\nimport urllib.request\nprint(1)\nPY\necho after")
    assert cmds[0].argv == ["python3", "-"] and "import urllib.request" in cmds[0].stdin
    assert cmds[1].argv == ["echo", "after"]


def test_unterminated_heredoc_takes_the_rest():
    cmds, written = run_script("cat > /tmp/x <<EOF\nline1\nline2")
    assert written["/tmp/x"] == "line1\nline2\n"


def test_echo_printf_tee_and_append_write_files():
    text = (
        "echo 'Key: sk_live_abc' > /tmp/poc.html; printf '%s\\n' one two >> /tmp/poc.html; "
        "echo -n hi | tee /tmp/t.txt; cp /tmp/poc.html /tmp/copy"
    )
    _, written = run_script(text)
    assert written["/tmp/poc.html"] == "Key: sk_live_abc\none\ntwo\n"
    assert written["/tmp/t.txt"] == "hi"


def test_earlier_files_resolve_cat_and_stdin():
    files = {"/tmp/body.json": '{"x": 1}'}
    cmds, _ = run_script("cat /tmp/body.json | curl -d @- http://app:5000/a", files.get)
    assert cmds[-1].stdin == '{"x": 1}'
    cmds, _ = run_script("curl -d @- http://app:5000/a < /tmp/body.json", files.get)
    assert cmds[0].stdin == '{"x": 1}' and cmds[0].stdin_file == "/tmp/body.json"
    cmds, _ = run_script("curl -d @- http://app:5000/a <<< 'hi there'")
    assert cmds[0].stdin == "hi there\n"


# ---------------------------------------------------------------- variables


def test_variables_from_earlier_assignments():
    text = 'URL=http://app:5000; export HOST="app"\nTOKEN=abc.def\ncurl "$URL/api" -H "Authorization: Bearer ${TOKEN}" http://${HOST}:5000/x'
    assert curls(text)[0].argv == [
        "curl",
        "http://app:5000/api",
        "-H",
        "Authorization: Bearer abc.def",
        "http://app:5000/x",
    ]


def test_unknown_variables_stay_literal_and_defaults_apply():
    text = 'TOKEN=$(curl -s http://app:5000/login | jq -r .token)\ncurl -H "Authorization: Bearer $TOKEN" "${BASE:-http://app:5000}/p"'
    cs = curls(text)
    assert cs[0].argv[-1] == "http://app:5000/login"  # the substitution's curl runs too
    assert cs[1].argv == ["curl", "-H", "Authorization: Bearer $TOKEN", "http://app:5000/p"]


def test_command_substitution_of_known_output():
    files = {"/tmp/key": "sk_live_x\n"}
    assert (
        curls('curl "http://app:5000/u?key=$(cat /tmp/key)"', files.get)[0].argv[1]
        == "http://app:5000/u?key=sk_live_x"
    )
    assert curls("K=`echo abc`; curl http://app:5000/$K")[0].argv[1] == "http://app:5000/abc"


def test_assignment_prefix_applies_to_one_command():
    cs = curls("H=app curl http://$H:5000/x")
    assert cs[0].argv == ["curl", "http://app:5000/x"]


# ---------------------------------------------------------------- loops


def test_for_seq_gives_repeat_count():
    cs = curls("for i in $(seq 1 500); do curl -s http://app:5000/api/search?q=$i; done")
    assert len(cs) == 1 and cs[0].repeat == 500 and cs[0].repeat_known


def test_small_literal_loop_is_unrolled_with_values():
    cs = curls(
        'for q in alice "bob smith" carol; do curl -s "http://app:5000/api/search?q=$q"; sleep 1; done'
    )
    assert [c.argv[-1] for c in cs] == [
        "http://app:5000/api/search?q=alice",
        "http://app:5000/api/search?q=bob smith",
        "http://app:5000/api/search?q=carol",
    ]
    assert all(c.repeat == 1 for c in cs)


def test_loop_not_using_its_variable_is_not_unrolled():
    cs = curls("for i in 1 2 3 4 5; do curl -s http://app:5000/; done")
    assert len(cs) == 1 and cs[0].repeat == 5


def test_brace_ranges_and_c_style_loops():
    assert curls("for i in {1..40}; do curl http://app:5000/x; done")[0].repeat == 40
    assert (
        curls("for i in {a..e}; do curl http://app:5000/$i; done")[-1].argv[1]
        == "http://app:5000/e"
    )
    assert curls("for ((i=0; i<250; i++)); do curl http://app:5000/; done")[0].repeat == 250
    assert (
        curls("for ((i=1; i<=3; i++)); do curl http://app:5000/u/$i; done")[2].argv[1]
        == "http://app:5000/u/3"
    )


def test_nested_loops_multiply():
    cs = curls(
        "for a in $(seq 100); do for b in $(seq 1 100); do curl http://app:5000/$a/$b; done; done"
    )
    assert cs[0].repeat == 10_000


def test_while_loops():
    counter = curls("i=0; while [ $i -lt 12 ]; do curl http://app:5000/; i=$((i+1)); done")
    assert counter[0].repeat == 12 and counter[0].repeat_known
    forever = curls("while true; do curl http://app:5000/; sleep 1; done")
    assert forever[0].repeat == UNKNOWN_LOOP_REPEAT and not forever[0].repeat_known
    reading = curls(
        "while read name; do curl http://app:5000/api/search?q=$name; done <<EOF\na\nb\nc\nEOF"
    )
    assert reading[0].repeat == 3
    files = {"/tmp/names": "x\ny\n"}
    assert (
        curls("while read n; do curl http://app:5000/?q=$n; done < /tmp/names", files.get)[0].repeat
        == 2
    )
    piped = curls("seq 1 7 | while read i; do curl http://app:5000/$i; done")
    assert piped[0].repeat == 7


def test_xargs_expands_or_counts():
    cs = curls("seq 1 5 | xargs -I{} curl -s http://app:5000/u/{}")
    assert [c.argv[-1] for c in cs] == [f"http://app:5000/u/{i}" for i in range(1, 6)]
    cs = curls("seq 1 300 | xargs -P 10 -I % curl -s http://app:5000/u/%")
    assert len(cs) == 1 and cs[0].repeat == 300
    cs = curls("echo a b c | xargs -n1 curl -s")
    assert cs[0].repeat == 3
    cs = curls("cat urls.txt | xargs -n1 curl -s")
    assert not cs[0].repeat_known


def test_functions_are_inlined_with_arguments():
    cs = curls(
        'req() { curl -s -X "$1" http://app:5000$2; }\nreq GET /a\nreq DELETE /api/projects/1'
    )
    assert [(c.argv[3], c.argv[4]) for c in cs] == [
        ("GET", "http://app:5000/a"),
        ("DELETE", "http://app:5000/api/projects/1"),
    ]


def test_if_case_groups_and_subshells_keep_every_branch():
    text = "if curl -sf http://app:5000/a; then curl http://app:5000/b; else curl http://app:5000/c; fi; (cd /tmp && curl http://app:5000/d); { curl http://app:5000/e; }"
    assert [c.argv[-1].rsplit("/", 1)[-1] for c in curls(text)] == ["a", "b", "c", "d", "e"]
    text = 'case "$x" in a) curl http://app:5000/a ;; *) curl http://app:5000/z ;; esac'
    assert len(curls(text)) == 2


def test_wrappers_and_nested_shells():
    assert curls("timeout 5 curl http://app:5000/a")[0].argv == ["curl", "http://app:5000/a"]
    assert curls("nohup sudo -u root env A=1 curl http://app:5000/a &")[0].background
    cs = curls("bash -c 'curl http://app:5000/a; curl http://app:5000/b'")
    assert len(cs) == 2
    assert len(curls('sh -c "for i in 1 2 3; do curl http://app:5000/\\$i; done"')) == 3
    assert curls('eval "curl http://app:5000/e"')[0].argv[1] == "http://app:5000/e"
    w = curls("watch -n 1 curl http://app:5000/")
    assert w[0].repeat == UNKNOWN_LOOP_REPEAT and not w[0].repeat_known


def test_pipes_record_the_previous_command_output():
    cmds, _ = run_script("printf 'GET / HTTP/1.1\\r\\nHost: app\\r\\n\\r\\n' | nc app 5000")
    assert cmds[-1].argv == ["nc", "app", "5000"]
    assert cmds[-1].stdin == "GET / HTTP/1.1\r\nHost: app\r\n\r\n"
    assert cmds[0].pipes_to


def test_pathological_inputs_are_bounded():
    deep = "$(" * 200 + "x" + ")" * 200
    run_script(f"echo {deep}")
    run_script("f() { f; }; f")
    run_script(
        "for i in $(seq 1 100000000); do for j in $(seq 1 100000000); do curl http://a/; done; done"
    )
    run_script("a() { b; b; }; b() { a; a; }; a")


def test_loop_over_unknown_output_guesses_count_and_keeps_variable():
    cs = curls(
        "for u in $(curl -s http://app:5000/api/users | jq -r '.[].id'); do curl -s -X DELETE http://app:5000/api/users/$u; done"
    )
    assert cs[0].argv[-1] == "http://app:5000/api/users"
    assert cs[1].argv[-1] == "http://app:5000/api/users/$u"
    assert cs[1].repeat == UNKNOWN_LOOP_REPEAT and not cs[1].repeat_known


def test_command_substitution_with_heredoc_body():
    text = 'curl -s -d "$(cat <<EOF\n{"message": "hi (test)"}\nEOF\n)" http://app:5000/api/logs'
    assert curls(text)[0].argv[3] == '{"message": "hi (test)"}'
