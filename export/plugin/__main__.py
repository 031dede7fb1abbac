"""``python -m <package> FILE...``: score trajectory files, one JSON line each.

Each line has the ``score``, the ``status`` (``ok``, or ``error`` / ``timeout`` /
``memory`` when the program did not finish: the score is then the fallback and the
``decision`` is the status, with the reason in ``error``) and the ``decision`` at the
budget. Scores and thresholds are printed exactly, derived figures (``g``, deltas,
detector values) to six significant digits: see ``_display``."""

from __future__ import annotations

import argparse
import json
import sys

from . import _display as display
from . import core


def _unreadable(err: core.InputError) -> str:
    """Why an input could not be read, without its name: the line's "input" holds that."""
    where = f"{err.field}: " if err.field else ""
    return f"{where}expected {err.expected}, got {err.got}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=f"monsearch monitor {core.MONITOR['name']}")
    parser.add_argument("files", nargs="+", help="trajectory files (.json, .jsonl), or - for stdin")
    parser.add_argument("--budget", type=float, default=None, help="audit budget, e.g. 0.01")
    parser.add_argument("--findings", action="store_true", help="include the top findings")
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help=f"seconds the program may spend on one trajectory (default {core.LIMITS.timeout_s:g})",
    )
    parser.add_argument(
        "--memory-mb",
        type=int,
        default=None,
        help=f"memory cap of the program's process, MB (default {core.LIMITS.memory_mb})",
    )
    args = parser.parse_args(argv)
    try:
        core.configure(timeout_s=args.timeout, memory_mb=args.memory_mb)
    except ValueError as exc:
        parser.error(str(exc))
    unreadable = 0
    for name in args.files:
        items = (
            [("-", core.load(sys.stdin.buffer.read()))]
            if name == "-"
            else list(core.iter_trajectories(name))
        )
        for label, traj in items:
            if isinstance(traj, core.InputError):
                unreadable += 1
                print(json.dumps({"input": label, "error": _unreadable(traj)}))
                continue
            result = core.evaluate(traj)
            out = {
                "input": label,
                "score": result.score,
                "status": result.status,
                "decision": display.decision(core.decide(result, args.budget)),
            }
            if result.error:
                out["error"] = result.error
            if args.findings:  # none for a program that did not finish: it would not again
                out["findings"] = display.findings(core.findings(traj)) if result.ok else None
            print(json.dumps(out))
    return 1 if unreadable else 0


if __name__ == "__main__":
    sys.exit(main())
