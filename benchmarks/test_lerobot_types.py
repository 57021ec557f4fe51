"""LeRobot's own env types (``--benchmark-env=lerobot:TYPE``): one test per task and check."""

from __future__ import annotations

import pytest

from pytest_benchmarks import check_rollout

pytestmark = pytest.mark.benchmark_env("lerobot")


def test_rollout(evaluate, env_processors, vector_env):
    """The pipeline works: every planned episode ran within the step limit, no check tripped."""
    check_rollout(evaluate(), vector_env.config, env_processors)


def test_no_regression(evaluate, snapshot):
    """The success rate is not significantly below the committed snapshot (the gate)."""
    assert evaluate() == snapshot
