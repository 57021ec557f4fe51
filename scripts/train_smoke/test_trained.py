"""A LeRobot ACT trained on a scripted expert's recorded demonstrations (the benchmark
``--benchmark-env`` names), evaluated on scenes it was not trained on: the pipeline works, and
its success rate holds against its snapshot."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from syrupy.assertion import SnapshotAssertion

from pytest_benchmarks import check_rollout
from pytest_benchmarks.core.processors import EnvProcessors
from pytest_benchmarks.core.results import TaskResult
from pytest_benchmarks.engine.vector import LazyVectorEnv

#: The benchmarks scripts/train_smoke/run.sh trains on; its --benchmark-env picks one.
pytestmark = pytest.mark.benchmark_env("metaworld", "aloha")


def test_rollout(
    evaluate: Callable[[], TaskResult], env_processors: EnvProcessors, vector_env: LazyVectorEnv
) -> None:
    """Every planned episode ran within the step limit; features and actions were valid."""
    check_rollout(evaluate(), vector_env.config, env_processors)


def test_no_regression(evaluate: Callable[[], TaskResult], snapshot: SnapshotAssertion) -> None:
    """The trained policy's success rate is not significantly below its snapshot."""
    assert evaluate() == snapshot
