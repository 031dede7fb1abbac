"""CLI command groups, one module per group."""
