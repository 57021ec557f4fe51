"""Meta-World benchmark tests: one test per task and check, parametrized by the plugin."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_benchmarks import registry

pytestmark = pytest.mark.benchmark_env("metaworld")


def test_rollout(evaluate, benchmark_task, env_processors, vector_env):
    """The pipeline works: every planned episode ran within the step limit, no check tripped."""
    result = evaluate()
    assert result.error is None
    assert result.n_episodes == result.planned
    assert [e.index for e in result.episodes] == list(range(result.planned))
    limit = vector_env.config.max_steps
    assert all(1 <= e.steps <= limit for e in result.episodes)
    assert all(np.isfinite([e.sum_reward, e.max_reward]).all() for e in result.episodes)
    assert benchmark_task.description
    assert env_processors.description == benchmark_task.description
    # The processed observation the policy saw is the benchmark's declared contract.
    assert env_processors.features == registry.get("metaworld").features(vector_env.config)


def test_success_rate(evaluate):
    """The scripted expert succeeds at least once: a broken success signal shows up as 0%."""
    result = evaluate()
    assert result.successes > 0, f"{result.task.id}: 0/{result.n_episodes} episodes succeeded"
