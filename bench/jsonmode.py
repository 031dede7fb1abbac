"""``--json`` for the bench scripts: text to stderr, one JSON object on stdout."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the key numbers as JSON only")


def run_reporting(args: argparse.Namespace, body: Callable[[argparse.Namespace, dict], None]) -> None:
    """Run ``body(args, report)``; with ``--json`` its usual text goes to stderr and
    stdout carries only the report it filled in."""
    report: dict = {}
    with contextlib.redirect_stdout(sys.stderr if args.json else sys.stdout):
        body(args, report)
    if args.json:
        print(json.dumps(report, indent=2))
