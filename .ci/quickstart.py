#!/usr/bin/env python3
"""Run the README's quick start as a new user would copy it, in a fresh clone.

The README marks its quick-start blocks: the block after ``<!-- quick-start -->``
installs monsearch (non-editable) and runs the main job; the block after
``<!-- quick-start-next -->`` holds the follow-up lines, with ``RUN`` standing for
the run id the first block printed. Each line runs exactly as written, from the
clone's root, except that ``--budget N`` becomes ``--budget SMALL`` (CI's time
limit) and ``RUN`` the run id. Any non-zero exit or a ``Traceback`` in the output
fails.

    python3 .ci/quickstart.py [--clone-from DIR] [--budget 6] [--dry-run]

Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

START = "<!-- quick-start -->"
NEXT = "<!-- quick-start-next -->"
_FENCE = re.compile(r"```(?:bash|sh|console)?\n(.*?)```", re.S)
_RUN_LINE = re.compile(r"^run (\S+): finished\b", re.M)


def block_after(readme: str, marker: str) -> list[str]:
    """The command lines of the first fenced block after ``marker`` (comments dropped)."""
    at = readme.find(marker)
    if at < 0:
        raise SystemExit(f"README.md has no {marker} marker")
    fence = _FENCE.search(readme, at)
    if fence is None:
        raise SystemExit(f"README.md: no code block after {marker}")
    lines = []
    for raw in fence.group(1).splitlines():
        line = re.sub(r"\s+#\s.*$", "", raw).strip()
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


def quick_start(readme: str, budget: int) -> tuple[list[str], list[str]]:
    """(the first block's lines with a small budget, the follow-up lines with ``RUN``)."""
    first = [re.sub(r"--budget\s+\d+", f"--budget {budget}", ln) for ln in block_after(readme, START)]
    if not any("--budget" in ln for ln in first):
        raise SystemExit("README.md: the quick start has no --budget to make small")
    return first, block_after(readme, NEXT)


def _run(line: str, cwd: Path, env: dict[str, str]) -> str:
    print(f"+ {line}", flush=True)
    proc = subprocess.run(
        ["bash", "-o", "pipefail", "-c", line], cwd=cwd, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    print(proc.stdout, end="", flush=True)
    if proc.returncode != 0:
        raise SystemExit(f"quick start: exit {proc.returncode} from: {line}")
    if "Traceback" in proc.stdout:
        raise SystemExit(f"quick start: a Traceback in the output of: {line}")
    return proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clone-from", default=str(Path(__file__).resolve().parent.parent))
    ap.add_argument("--budget", type=int, default=6)
    ap.add_argument("--dry-run", action="store_true", help="print the lines, run nothing")
    args = ap.parse_args()
    readme = (Path(args.clone_from) / "README.md").read_text(encoding="utf-8")
    first, follow = quick_start(readme, args.budget)
    if args.dry_run:
        print("\n".join(first + follow))
        return
    with tempfile.TemporaryDirectory(prefix="monsearch-quickstart-") as tmp:
        clone = Path(tmp) / "monsearch"
        if (Path(args.clone_from) / ".git").exists():
            subprocess.run(["git", "clone", "-q", args.clone_from, str(clone)], check=True)
        else:  # a checkout without its history: copy what a clone would hold
            shutil.copytree(args.clone_from, clone, ignore=shutil.ignore_patterns(
                ".venv", "runs", "__pycache__", "*.egg-info", "build", "dist", "monitor-*"))
        env = dict(os.environ)
        # A throw-away sealed-test ledger: a second CI run on one machine opens the test
        # of the same strategy again, which the user's ledger would rightly refuse.
        env["MONSEARCH_LEDGER"] = str(Path(tmp) / "sealed-ledger.json")
        for var in ("PYTHONHASHSEED", "MONSEARCH_RUNS", "VIRTUAL_ENV"):
            env.pop(var, None)
        out = "".join(_run(line, clone, env) for line in first)
        found = _RUN_LINE.findall(out)
        if not found:
            raise SystemExit("quick start: the main job printed no 'run ID: finished' line")
        run_id = found[-1]
        for line in follow:
            _run(re.sub(r"\bRUN\b", run_id, line), clone, env)
    print(f"quick start: {len(first) + len(follow)} line(s) ran cleanly (run {run_id})")


if __name__ == "__main__":
    sys.exit(main())
