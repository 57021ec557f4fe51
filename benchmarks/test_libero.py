"""LIBERO benchmark tests: one test per task and check, parametrized by the plugin."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.benchmark_env("libero")


def test_rollout(evaluate, benchmark_task, env_processors, vector_env):
    """The pipeline works: every planned episode ran within the step limit, no check tripped."""
    result = evaluate()
    assert result.error is None
    assert result.n_episodes == result.planned
    assert [e.index for e in result.episodes] == list(range(result.planned))
    assert [e.init_state for e in result.episodes] == [i % 50 for i in range(result.planned)]
    limit = vector_env.config.max_steps
    assert all(1 <= e.steps <= limit for e in result.episodes)
    assert all(np.isfinite([e.sum_reward, e.max_reward]).all() for e in result.episodes)
    assert benchmark_task.description
    assert env_processors.description == benchmark_task.description


def test_success_rate(evaluate, request):
    """A policy expected to succeed does so at least once (random and noop are not)."""
    result = evaluate()
    if request.config.getoption("benchmark_policy") in ("random", "noop"):
        pytest.skip(f"success not expected from --benchmark-policy={result.policy['source']}")
    assert result.successes > 0, f"{result.task.id}: 0/{result.n_episodes} episodes succeeded"
