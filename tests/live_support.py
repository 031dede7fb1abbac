"""What the live corpus's tests need: a StealthBench checkout beside the repository
(as in this workplace: ``../shared/stealthbench``, or ``$MONSEARCH_STEALTHBENCH``), the
apps' packages, and Linux user namespaces; each test is skipped, saying which is
missing, where one is."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
from paths import REPO


def checkout() -> Path:
    env = os.environ.get("MONSEARCH_STEALTHBENCH")
    return Path(env) if env else REPO.parent / "shared" / "stealthbench"


def _why_not() -> str | None:
    if not (checkout() / "tasks").is_dir():
        return f"no StealthBench checkout at {checkout()} (set MONSEARCH_STEALTHBENCH)"
    missing = [m for m in ("flask", "flask_limiter", "jwt", "yaml", "cryptography") if importlib.util.find_spec(m) is None]
    if missing:
        return f"the live extra is not installed ({', '.join(missing)} missing)"
    from monsearch.live.isolation import probe

    return probe()


WHY_NOT = _why_not()
needs_live = pytest.mark.skipif(WHY_NOT is not None, reason=f"live corpus: {WHY_NOT}")
