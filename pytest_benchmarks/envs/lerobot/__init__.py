"""LeRobot's own env types as benchmarks: ``--benchmark-env=lerobot:TYPE``."""
