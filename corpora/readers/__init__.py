"""Readers that turn trajectory files of each supported format into the internal model."""
