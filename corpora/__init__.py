"""Trajectories in: data model, readers, corpus store, splits, statistics, synthetic corpus."""
