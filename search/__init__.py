"""The search: an evolution loop over monitor programs (openevolve's program database),
proposers that write new candidates (offline mutator, LLM), optuna for constants, and
the run's lineage store. See docs/DESIGN.md, "Search"."""
