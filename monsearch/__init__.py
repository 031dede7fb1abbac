"""monsearch: evolve cheap OPSEC monitors for offensive-security agent trajectories."""

__version__ = "0.1.0"
