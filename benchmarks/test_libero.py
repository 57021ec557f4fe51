"""LIBERO benchmark tests: one test per task and check, parametrized by the plugin."""

from __future__ import annotations

import pytest

from pytest_benchmarks.checks import check_rollout, check_success_rate

pytestmark = pytest.mark.benchmark_env("libero")


def test_rollout(evaluate, env_processors, vector_env):
    """The pipeline works: every planned episode ran within the step limit, no check tripped."""
    result = evaluate()
    check_rollout(result, vector_env.config, env_processors)
    assert [e.init_state for e in result.episodes] == [i % 50 for i in range(result.planned)]


def test_success_rate(evaluate):
    """A policy expected to succeed does so at least once (random and noop are not)."""
    check_success_rate(evaluate())
