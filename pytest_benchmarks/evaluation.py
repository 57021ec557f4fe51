"""Evaluating one task: plan its episodes, roll them out, and collect a TaskResult.

This is the one evaluation path; the pytest fixtures call it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from pytest_benchmarks import registry
from pytest_benchmarks.deadline import time_limit
from pytest_benchmarks.plan import plan_episodes
from pytest_benchmarks.policies import Policy
from pytest_benchmarks.processors import EnvProcessors
from pytest_benchmarks.results import TaskResult
from pytest_benchmarks.rollout import run_episodes
from pytest_benchmarks.vector import LazyVectorEnv


class WorkerDied(RuntimeError):
    """A vector-env worker process died mid-task (killed by a signal, or exited)."""


def one_line(exc: BaseException) -> str:
    """An exception as one line: type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def evaluate_task(
    vector_env: LazyVectorEnv,
    policy: Policy,
    processors: EnvProcessors,
    seed: int,
    episodes: Sequence[int],
    record: Callable[[TaskResult], None],
    timeout: float | None = None,
) -> TaskResult:
    """Run the given episode indices of the vector env's task, within ``timeout`` seconds.

    ``record`` receives the result whatever happens: on an error (Ctrl-C and timeouts included)
    it holds the episodes that finished and the error in one line, the vector env's workers are
    killed, and the error propagates (as WorkerDied when a worker process died).
    """
    task = vector_env.config.task
    plan = plan_episodes(registry.get(task.env), task, seed, episodes)
    result = TaskResult(
        task, batch_size=vector_env.num_envs, planned=len(plan), policy=policy.identity()
    )
    started = time.perf_counter()
    try:
        with time_limit(timeout, task.id):
            run_episodes(vector_env.get(), policy, processors, plan, result.episodes.append)
    except BaseException as exc:
        # A worker that died shows up as a broken pipe; name the process and its signal instead.
        dead = vector_env.dead_workers() if isinstance(exc, (EOFError, ConnectionError)) else None
        result.error = f"WorkerDied: {dead}" if dead else one_line(exc)
        vector_env.close(terminate=True)
        if dead:
            raise WorkerDied(f"{task.id}: {dead}") from exc
        raise
    finally:
        result.eval_s = time.perf_counter() - started
        result.episodes.sort(key=lambda e: e.index)
        record(result)
    return result
