"""The checks a benchmark test shares (``from pytest_benchmarks import check_rollout``): the
pipeline ran every episode cleanly, and a policy expected to succeed did at least once."""

from __future__ import annotations

import math

from pytest_benchmarks.core.processors import EnvProcessors
from pytest_benchmarks.core.results import TaskResult
from pytest_benchmarks.core.tasks import EnvConfig


def check_rollout(result: TaskResult, config: EnvConfig, processors: EnvProcessors) -> None:
    """Fail with a message naming the first broken expectation.

    Observations matching the declared features and actions inside the action space are checked
    on every step by the rollout itself; a violation is the task's ``error``.
    """
    task = result.task.id
    assert result.error is None, f"{task}: {result.error}"
    assert result.n_episodes == result.planned or result.stopped is not None, (
        f"{task}: {result.n_episodes}/{result.planned} ran"
    )  # a sequential gate's stop is a complete run
    indices = [e.index for e in result.episodes]
    assert indices == sorted(set(indices)), f"{task}: episodes {indices}"
    for e in result.episodes:
        assert 1 <= e.steps <= config.max_steps, f"{task}: episode {e.index} ran {e.steps} steps"
        assert math.isfinite(e.sum_reward) and math.isfinite(e.max_reward), (
            f"{task}: episode {e.index} has a non-finite reward"
        )
    assert result.task.description, f"{task}: no language description"
    if config.obs != "lerobot":  # LeRobot's layout carries LeRobot's own task descriptions
        assert processors.description == result.task.description


def check_success_rate(result: TaskResult) -> None:
    """Fail when a policy expected to succeed never did: a broken success signal reads as 0%.

    Random and noop policies are not expected to succeed, so the check is skipped for them.
    """
    import pytest

    if result.policy.get("source") in ("random", "noop"):
        pytest.skip(f"success not expected from --benchmark-policy={result.policy['source']}")
    message = f"{result.task.id}: 0/{result.n_episodes} episodes succeeded"
    if result.rerun and result.episodes:
        episodes = ",".join(map(str, result.worst_episodes()))
        message += f"; rerun the worst: {result.rerun} --benchmark-episode={episodes}"
    assert result.successes > 0, message
