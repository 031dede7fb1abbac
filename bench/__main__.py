"""``python -m bench``: run every benchmark and write one table (see bench/suite.py)."""

from bench.suite import main

if __name__ == "__main__":
    main()
