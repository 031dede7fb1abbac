"""What the shell reader knows of a few commands without running them: ``cd``, option
skipping, ``for ((...))`` counters, and the output of ``echo``, ``printf``, ``cat`` of a
known file and ``seq`` (for command substitution and pipes).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from monsearch.views import expansions
from monsearch.views.command import _MAX_REPEAT, UNKNOWN_LOOP_REPEAT, Command, FileLookup


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


_ARITH_FOR = re.compile(
    r"^\s*(\w+)\s*=\s*(-?\d+)\s*;\s*\w+\s*(<=|<|>=|>|!=)\s*(-?\d+)\s*;\s*\w+\s*(\+\+|--|\+=\s*\d+|-=\s*\d+)?"
)


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
