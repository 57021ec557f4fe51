"""pytest-benchmarks: robot-policy simulation benchmarks as pytest regression tests."""

from pytest_benchmarks.core.benchmark import Benchmark
from pytest_benchmarks.core.catalog import register
from pytest_benchmarks.core.results import EpisodeRecord, TaskResult
from pytest_benchmarks.core.tasks import TaskRef

__all__ = ["Benchmark", "EpisodeRecord", "TaskRef", "TaskResult", "register"]
