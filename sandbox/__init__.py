"""Run untrusted monitor programs: restricted compile, read-only trajectory views, workers, oracle."""
