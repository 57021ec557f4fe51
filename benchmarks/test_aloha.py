"""ALOHA benchmark tests: one test per task and check, parametrized by the plugin."""

from __future__ import annotations

import pytest

from pytest_benchmarks import check_rollout, check_success_rate

pytestmark = pytest.mark.benchmark_env("aloha")


def test_rollout(evaluate, env_processors, vector_env):
    """The pipeline works: every planned episode ran within the step limit, no check tripped."""
    check_rollout(evaluate(), vector_env.config, env_processors)


def test_success_rate(evaluate):
    """The scripted expert succeeds at least once: a broken success signal shows up as 0%."""
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
