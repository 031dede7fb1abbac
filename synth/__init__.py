"""Synthetic StealthBench-like corpus: scenarios from the 14 rubrics, personas, simulated judges."""
