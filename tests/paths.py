"""Where the suite's files are, for tests laid out by floor (``tests/<floor>/``)."""

from __future__ import annotations

from pathlib import Path

#: The suite's root folder (``tests/``): support modules, ``conftest.py``, fixtures.
TESTS = Path(__file__).resolve().parent
#: The repository's root (README, pyproject, examples).
REPO = TESTS.parent
#: Shared trajectory fixtures (StealthBench trees, ATIF files).
FIXTURES = TESTS / "fixtures"
