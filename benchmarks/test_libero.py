"""LIBERO benchmark tests: one test per task and check, parametrized by the plugin."""

from __future__ import annotations

import pytest

from pytest_benchmarks import check_rollout, check_success_rate

pytestmark = pytest.mark.benchmark_env("libero")


def test_rollout(evaluate, env_processors, vector_env):
    """The pipeline works: every planned episode ran within the step limit, no check tripped."""
    result = evaluate()
    check_rollout(result, vector_env.config, env_processors)
    assert [e.init_state for e in result.episodes] == [e.index % 50 for e in result.episodes]


def test_success_rate(evaluate):
    """The scripted expert (or another policy expected to succeed) succeeds at least once.

    Tasks the expert is known to fail are not collected for it (their skip reason says why).
    """
    check_success_rate(evaluate())


def test_no_regression(evaluate, snapshot):
    """The success rate is not significantly below the committed snapshot (the gate)."""
    assert evaluate() == snapshot


def test_policy_latency(benchmark_speed, benchmark):
    """Seconds per policy call on a batch of the task's own observations (pytest-benchmark)."""
    benchmark_speed.policy_latency(benchmark)


def test_env_step(benchmark_speed, benchmark):
    """Seconds per env step, as the rollout builds the env (pytest-benchmark)."""
    benchmark_speed.env_step(benchmark)
