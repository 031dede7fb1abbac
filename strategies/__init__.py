"""Seed monitor programs for the search, in the readable convention the offline
proposer edits (see :mod:`monsearch.strategies.convention`)."""
