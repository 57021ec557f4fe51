"""pytest-benchmarks: robot-policy simulation benchmarks as pytest regression tests."""

from pytest_benchmarks.registry import Benchmark, TaskRef, register
from pytest_benchmarks.results import EpisodeRecord, TaskResult

__all__ = ["Benchmark", "EpisodeRecord", "TaskRef", "TaskResult", "register"]
