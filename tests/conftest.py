"""Suite-wide settings.

The suite never writes into the user's monsearch cache: every test process (and the
CLI subprocesses it starts) uses one throw-away cache folder for the whole session,
so cached views of tiny test corpora never evict a user's real ones.
"""

from __future__ import annotations

import os
import shutil
import tempfile

_SESSION_CACHE = tempfile.mkdtemp(prefix="monsearch-test-cache-")


def pytest_configure(config):
    os.environ["MONSEARCH_CACHE"] = _SESSION_CACHE


def pytest_unconfigure(config):
    shutil.rmtree(_SESSION_CACHE, ignore_errors=True)
