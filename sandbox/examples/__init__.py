"""Example monitor programs (source text, run in the sandbox)."""
