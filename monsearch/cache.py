"""Where monsearch keeps what it can rebuild: the default corpus, cached views."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$MONSEARCH_CACHE``, else the platform's user cache dir for monsearch."""
    env = os.environ.get("MONSEARCH_CACHE")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_cache_path

    return user_cache_path("monsearch", appauthor=False)
