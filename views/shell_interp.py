"""The shell reader's abstract interpreter: walks the tree (or a plain plan) with the
variables in force and emits the simple commands that would run, each with its expanded
words, loop repeat, stdin and cwd; loops are unrolled when short, else counted.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from monsearch.views import expansions
from monsearch.views.command import (
    _MAX_COMMANDS,
    _MAX_DEPTH,
    UNKNOWN_LOOP_REPEAT,
    UNROLL_LIMIT,
    Command,
    FileLookup,
)
from monsearch.views.shell_builtins import (
    _STATIC_OUTPUTS,
    _arith_for,
    _change_dir,
    _drop_options,
    _mul,
)
from monsearch.views.shell_parse import (
    ForLoop,
    FuncDef,
    Group,
    Pipeline,
    Simple,
    WhileLoop,
    _PlainPlan,
    parse,
)
from monsearch.views.shell_words import (
    _DQ_WORD,
    _EXPANDABLE,
    _SCAN_CACHE_MAX_LEN,
    Token,
    _dq_unescape,
    _expand_dq,
    brace_expand,
    expand_word,
    unquote_simple,
)

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
