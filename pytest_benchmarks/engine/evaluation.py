"""Evaluating one task: plan its episodes, roll them out, and collect a TaskResult.

This is the one evaluation path; the pytest fixtures call it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from pytest_benchmarks.core.errors import one_line
from pytest_benchmarks.core.plan import plan_episodes
from pytest_benchmarks.core.policy import Policy, checked_identity
from pytest_benchmarks.core.processors import EnvProcessors
from pytest_benchmarks.core.results import EpisodeRecord, TaskResult
from pytest_benchmarks.engine import streams
from pytest_benchmarks.engine.deadline import time_limit
from pytest_benchmarks.engine.exits import policy_call
from pytest_benchmarks.engine.recording import EpisodeRecorder
from pytest_benchmarks.engine.rollout import StepTrace, run_episodes
from pytest_benchmarks.engine.vector import LazyVectorEnv
from pytest_benchmarks.engine.video import error_path, video_path


class WorkerDied(RuntimeError):
    """A vector-env worker process died mid-task (killed by a signal, or exited)."""


def evaluate_task(
    vector_env: LazyVectorEnv,
    policy: Policy | Callable[[], Policy],
    *,
    processors: EnvProcessors,
    seed: int,
    episodes: Sequence[int],
    record: Callable[[TaskResult], None],
    timeout: float | None = None,
    progress: Callable[[TaskResult], None] | None = None,
    trace: StepTrace | None = None,
    recorder: EpisodeRecorder | None = None,
    check_policy: Callable[[dict[str, str | None]], None] | None = None,
    notify: Callable[[str], None] | None = None,
    stop: Callable[[TaskResult], str | None] | None = None,
) -> TaskResult:
    """Run the given episode indices of the vector env's task with ``policy`` (or the policy a
    function builds), building and episodes both within ``timeout`` seconds.

    A policy that cannot be built is a task error like any other. ``record`` receives the
    result whatever happens: on an error (Ctrl-C and timeouts included) it holds the episodes
    that finished and the error in one line, the vector env's workers are killed, and the error
    propagates (as WorkerDied when a worker process died). ``progress`` sees the result after
    every episode; ``recorder`` writes each finished episode's frames. The vector env is closed
    at the end, which also waits for the episodes' videos. A policy that declares its
    ``input_features`` gets black images from cameras none of them reads (nothing rendered),
    unless the episodes are recorded. ``check_policy`` may refuse the built policy's identity
    (raising) before any episode runs. ``notify`` gets the line that says a task past its
    limit cannot be stopped from inside (``deadline.time_limit``). ``stop`` sees the result
    after episodes end and returns why the task's answer is clear (a sequential gate's
    decision), or None: from then on no episode starts, and the result's ``stopped`` says why.
    """
    task = vector_env.config.task
    plan = plan_episodes(vector_env.benchmark, task, seed, episodes)
    result = TaskResult(task, batch_size=vector_env.num_envs, planned=len(plan))

    def on_episode(episode: EpisodeRecord) -> None:
        result.episodes.append(episode)
        if progress is not None:
            progress(result)

    def decided() -> bool:
        if stop is not None and result.stopped is None:
            result.stopped = stop(result)
        return result.stopped is not None

    started = time.perf_counter()
    try:
        with time_limit(timeout, task.id, notify), streams.kept_open() as closed:
            acting = policy if isinstance(policy, Policy) else policy_call(policy)
            result.policy = checked_identity(acting)
            if check_policy is not None:
                check_policy(result.policy)
            device = getattr(acting, "device", None)  # learned policies: where they run
            result.device = None if device is None else str(device)
            if recorder is None:  # a dataset keeps every camera
                vector_env.skip_unread_cameras(acting)
            started = time.perf_counter()  # eval_s times the episodes, not the policy's load
            run_episodes(vector_env.get(), acting, processors, plan, on_episode, trace, recorder,
                         stop=decided if stop is not None else None)  # fmt: skip
        if closed and notify is not None:
            notify(f"{task.id}: the policy closed {' and '.join(closed)}; kept open so that "
                   "the session can report")  # fmt: skip
    except BaseException as exc:
        # A worker that died shows up as a broken pipe; name the process and its signal instead.
        dead = vector_env.dead_workers() if isinstance(exc, (EOFError, ConnectionError)) else None
        result.error = f"WorkerDied: {dead}" if dead else one_line(exc)
        if dead:
            raise WorkerDied(f"{task.id}: {dead}") from exc
        raise
    finally:
        result.eval_s = time.perf_counter() - started
        result.episodes.sort(key=lambda e: e.index)
        # After a failure a worker may be dead, hung or mid-call: kill rather than ask. Closing
        # also waits for the episodes' videos.
        vector_env.close(terminate=result.error is not None)
        if vector_env.config.video != "none":
            result.episodes[:] = [attach_video(vector_env, e) for e in result.episodes]
        record(result)
    return result


def attach_video(vector_env: LazyVectorEnv, episode: EpisodeRecord) -> EpisodeRecord:
    """The episode with its video path, or with the reason its video could not be written."""
    path = video_path(vector_env.config, episode.index)
    if path.is_file():
        return replace(episode, video=str(path))
    failed = error_path(path)
    if failed.is_file():
        return replace(episode, video_error=failed.read_text().strip())
    return episode
