"""The fixtures a benchmark test uses: the task, its vector env, the policy, processors, evaluate.

Everything is built lazily: a task's episodes run once per session, on the first ``evaluate()``
call, and every later test of the task reads the same TaskResult without starting a simulator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.errors import EnvBuildError, TaskLost
from pytest_benchmarks.core.policy import Policy, PolicyError
from pytest_benchmarks.core.processors import EnvProcessors
from pytest_benchmarks.core.results import TaskResult
from pytest_benchmarks.core.tasks import TaskRef
from pytest_benchmarks.engine.vector import LazyVectorEnv
from pytest_benchmarks.plugin.assertion import GatedResult, stopping_rule
from pytest_benchmarks.plugin.progress import ProgressReporter
from pytest_benchmarks.plugin.rerun import rerun_command
from pytest_benchmarks.plugin.session import PENDING, get_state
from pytest_benchmarks.plugin.speed import SpeedProbe
from pytest_benchmarks.plugin.timeouts import fixture_value
from pytest_benchmarks.policies import build_policy


@pytest.fixture
def benchmark_task(request: pytest.FixtureRequest) -> TaskRef:
    """The task this test runs; set by ``@pytest.mark.benchmark_env(...)``."""
    task = getattr(request, "param", None)
    if not isinstance(task, TaskRef):
        raise pytest.UsageError(
            f"{request.node.nodeid}: benchmark fixtures need @pytest.mark.benchmark_env(NAME)"
        )
    return task


@pytest.fixture
def env_processors(request: pytest.FixtureRequest, benchmark_task: TaskRef) -> EnvProcessors:
    """Observation transforms from the task's env to the policy batch."""
    config = get_state(request.config).env_config(benchmark_task)
    return catalog.get(benchmark_task.env).processors(config)


@pytest.fixture
def vector_env(request: pytest.FixtureRequest, benchmark_task: TaskRef) -> Iterator[LazyVectorEnv]:
    """The task's vector env; its workers start on first use and stop after the test."""
    env = get_state(request.config).engine.env(benchmark_task)
    try:
        yield env
    finally:
        env.close()


@pytest.fixture
def policy(
    request: pytest.FixtureRequest,
    benchmark_task: TaskRef,
    vector_env: LazyVectorEnv,
    env_processors: EnvProcessors,
) -> Policy:
    """The policy named by ``--benchmark-policy``, built for this task's slots; a learned one is
    checked against the env's features here, before any episode runs."""
    state = get_state(request.config)
    settings = state.settings
    worker = getattr(request.config, "workerinput", {}).get("workerid")
    try:
        return build_policy(
            settings.policy,
            vector_env.benchmark,
            vector_env.config,
            vector_env.num_envs,
            replace(settings.loading, server=state.endpoint),
            env_processors.features,
            worker,
        )
    except PolicyError as exc:
        pytest.fail(f"{benchmark_task.id}: {exc}", pytrace=False)


@pytest.fixture
def benchmark_speed(
    request: pytest.FixtureRequest,
    benchmark_task: TaskRef,
    vector_env: LazyVectorEnv,
    env_processors: EnvProcessors,
) -> SpeedProbe:
    """The task's speed benchmarks: ``benchmark_speed.policy_latency(benchmark)`` and
    ``benchmark_speed.env_step(benchmark)``, timed by pytest-benchmark's ``benchmark`` fixture."""
    return SpeedProbe(request, benchmark_task, vector_env, env_processors)


@pytest.fixture
def evaluate(
    request: pytest.FixtureRequest,
    benchmark_task: TaskRef,
    vector_env: LazyVectorEnv,
    env_processors: EnvProcessors,
) -> Callable[[], GatedResult]:
    """Call to run the task's planned episodes (once per session) and get its TaskResult
    (``assert evaluate() == snapshot`` gates it against its snapshot).

    The result is recorded for the run's metrics JSON; a failed rollout fails every test of the
    task, the first with the original traceback. The ``policy`` fixture is built here, once per
    task and within ``--benchmark-timeout``; one that cannot be built is the task's error.
    """
    state = get_state(request.config)

    def record(result: TaskResult) -> None:
        test_file = request.node.nodeid.split("::")[0]
        result.rerun = rerun_command(test_file, state.settings, benchmark_task)
        state.cache[benchmark_task.id] = result
        request.node.stash[PENDING] = result

    def build_policy() -> Policy:
        try:
            policy = fixture_value(request, "policy")
        except pytest.fail.Exception as exc:  # the policy fixture's own one-line failures
            raise PolicyError(str(exc.msg).removeprefix(f"{benchmark_task.id}: ")) from None
        if not isinstance(policy, Policy):
            # A fixture of the user's own named ``policy`` replaces the plugin's.
            raise PolicyError(
                f"the policy fixture gave {type(policy).__name__}, not a policy (reset, act, "
                "identity); is a fixture of your own named 'policy' replacing the plugin's?"
            )
        return policy

    def rollout() -> TaskResult:
        unbuilt = None
        reporter = ProgressReporter(request.node, benchmark_task.id, state.settings.progress_s)
        reporter.start()
        try:
            if state.remote is not None:  # --benchmark-ray: its node runs it
                return state.remote.run_task(
                    benchmark_task, record, progress=reporter, notify=reporter.notice
                )
            return state.engine.run_task(
                vector_env,
                build_policy,
                env_processors,
                record,
                progress=reporter,
                notify=reporter.notice,
                stop=stopping_rule(request.node, benchmark_task),
            )
        except PolicyError as exc:
            unbuilt = f"{benchmark_task.id}: {exc}"
        except (EnvBuildError, TaskLost) as exc:
            unbuilt = str(exc)
        finally:
            reporter.end()
        # Outside the except block, so the failure is one line with no chained exception.
        pytest.fail(unbuilt, pytrace=False)

    def run() -> GatedResult:
        cached = state.cache.get(benchmark_task.id)
        if cached is None:
            return GatedResult.of(rollout())
        if cached.error:
            pytest.fail(
                f"{benchmark_task.id} failed earlier in this session: {cached.error}", pytrace=False
            )
        return GatedResult.of(cached)

    return run
