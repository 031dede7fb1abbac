"""monsearch's benchmarks: standalone scripts, and ``python -m bench`` running them all (suite.py)."""
