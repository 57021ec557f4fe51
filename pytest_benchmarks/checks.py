"""Assertions a benchmark's ``test_rollout`` shares: the pipeline ran every episode cleanly."""

from __future__ import annotations

import math

from pytest_benchmarks.processors import EnvProcessors
from pytest_benchmarks.registry import EnvConfig
from pytest_benchmarks.results import TaskResult


def check_rollout(result: TaskResult, config: EnvConfig, processors: EnvProcessors) -> None:
    """Fail with a message naming the first broken expectation.

    Observations matching the declared features and actions inside the action space are checked
    on every step by the rollout itself; a violation is the task's ``error``.
    """
    task = result.task.id
    assert result.error is None, f"{task}: {result.error}"
    assert result.n_episodes == result.planned, f"{task}: {result.n_episodes}/{result.planned} ran"
    indices = [e.index for e in result.episodes]
    assert indices == list(range(result.planned)), f"{task}: episodes {indices}"
    for e in result.episodes:
        assert 1 <= e.steps <= config.max_steps, f"{task}: episode {e.index} ran {e.steps} steps"
        assert math.isfinite(e.sum_reward) and math.isfinite(e.max_reward), (
            f"{task}: episode {e.index} has a non-finite reward"
        )
    assert result.task.description, f"{task}: no language description"
    assert processors.description == result.task.description
