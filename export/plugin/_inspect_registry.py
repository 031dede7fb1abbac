"""Target of the ``inspect_ai`` entry point: registers the scorer when Inspect is present.

Inspect may import every extension it finds, so this must be cheap and never raise.
"""

import contextlib

# Inspect not installed: nothing to register. Registration happens on import.
with contextlib.suppress(ImportError):
    from .inspect_scorer import opsec_monitor  # noqa: F401
