"""pytest-benchmarks: robot-policy simulation benchmarks as pytest regression tests.

What a user imports: the Benchmark contract (for a benchmark of one's own, named by the
``pytest_benchmarks.benchmarks`` entry point), the shared checks of a benchmark test, and the
result types ``evaluate()`` returns.
"""

from pytest_benchmarks.checks import check_rollout, check_success_rate
from pytest_benchmarks.core.benchmark import Benchmark
from pytest_benchmarks.core.catalog import register
from pytest_benchmarks.core.results import EpisodeRecord, TaskResult
from pytest_benchmarks.core.tasks import EnvConfig, TaskRef

__all__ = [
    "Benchmark",
    "EnvConfig",
    "EpisodeRecord",
    "TaskRef",
    "TaskResult",
    "check_rollout",
    "check_success_rate",
    "register",
]
