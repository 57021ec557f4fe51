"""The ``benchmark_speed`` fixture's object: a task's speed benchmarks, timed by pytest-benchmark.

pytest-benchmark times nothing under xdist (it calls the function once), so speed tests are
smoke tests in a ``-n`` run and benchmarks in a ``-n 0`` one; ``--benchmark-only`` runs them
alone, ``--benchmark-skip`` runs everything but them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from pytest_benchmarks.core.errors import EnvBuildError
from pytest_benchmarks.core.policy import Policy
from pytest_benchmarks.core.processors import EnvProcessors
from pytest_benchmarks.core.tasks import TaskRef
from pytest_benchmarks.engine.deadline import time_limit
from pytest_benchmarks.engine.speed import Timer, time_env_step, time_policy
from pytest_benchmarks.engine.vector import LazyVectorEnv
from pytest_benchmarks.plugin.session import get_state
from pytest_benchmarks.plugin.timeouts import fixture_value


@dataclass
class SpeedProbe:
    """Times the task's policy and env; pass pytest-benchmark's ``benchmark`` fixture."""

    request: pytest.FixtureRequest
    task: TaskRef
    vector_env: LazyVectorEnv
    processors: EnvProcessors

    def policy_latency(self, benchmark: Timer) -> None:
        """Seconds per inference (``_policy_latency``)."""
        with _one_line():
            self._policy_latency(benchmark)

    def env_step(self, benchmark: Timer) -> None:
        """Seconds per step of one env of this task (its observation mode, its cameras), under
        seeded random actions, resets excluded; ``--benchmark-max-time`` and
        ``--benchmark-min-rounds`` size the rounds; within ``--benchmark-timeout``."""
        with _one_line():
            self._env_step(benchmark)

    def _policy_latency(self, benchmark: Timer) -> None:
        """Seconds per inference: ``policy.act`` on a batch of this task's observations, the
        policy reset before each call (the batch size is the run's: ``--benchmark-batch-size``,
        or auto); ``--benchmark-max-time`` and ``--benchmark-min-rounds`` size the rounds.
        The policy's build and the timing are within ``--benchmark-timeout``."""
        config = self.request.config
        settings = get_state(config).settings
        failed = True
        try:
            with time_limit(settings.timeout, self.task.id):
                policy = fixture_value(self.request, "policy")
                if not isinstance(policy, Policy):
                    pytest.fail(
                        f"{self.task.id}: the policy fixture gave {type(policy).__name__}, not a "
                        "policy (reset, act, identity)",
                        pytrace=False,
                    )
                time_policy(
                    benchmark,
                    self.vector_env,
                    policy,
                    processors=self.processors,
                    seed=settings.seed,
                    **_rounds_options(config),
                )
                failed = False
        finally:  # after a timeout a worker may be hung: kill rather than ask
            self.vector_env.close(terminate=failed)

    def _env_step(self, benchmark: Timer) -> None:
        config = self.request.config
        settings = get_state(config).settings
        with time_limit(settings.timeout, self.task.id):
            time_env_step(
                benchmark,
                self.vector_env.benchmark,
                self.vector_env.config,
                seed=settings.seed,
                **_rounds_options(config),
            )


@contextlib.contextmanager
def _one_line() -> Iterator[None]:
    """A task whose environment cannot be built fails its speed test in one line."""
    unbuilt = None
    try:
        yield
    except EnvBuildError as exc:
        unbuilt = str(exc)
    if unbuilt is not None:  # outside the except block: no chained exception
        pytest.fail(unbuilt, pytrace=False)


def _rounds_options(config: pytest.Config) -> dict[str, Any]:
    """pytest-benchmark's ``--benchmark-max-time`` and ``--benchmark-min-rounds``."""
    return {
        "max_time_s": float(config.getoption("benchmark_max_time", 1.0)),
        "min_rounds": int(config.getoption("benchmark_min_rounds", 5)),
    }
