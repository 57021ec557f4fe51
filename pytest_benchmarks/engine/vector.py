"""Vector envs for one task: a batch of slots that each run planned episodes.

Each slot wraps the benchmark's env in ``SlotEnv``, which builds the simulator lazily on its first
reset, inside the process that steps it (gymnasium's AsyncVectorEnv builds one env in the parent
only to read its spaces; ``SlotEnv`` answers that from the benchmark's declared spaces), and which
ignores steps once its episode ends, so a finished slot never steps its simulator past the end
while the other slots finish. Autoreset is disabled: the rollout resets a freed slot itself, with
the next planned episode or, when none is left, with ``park`` (no simulator call at all).
"""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
import time
from collections.abc import Collection, Iterable
from dataclasses import replace
from functools import partial
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv, VectorEnv
from gymnasium.vector.async_vector_env import AsyncState
from gymnasium.vector.utils import concatenate

from pytest_benchmarks.core import initial_state
from pytest_benchmarks.core.benchmark import Benchmark
from pytest_benchmarks.core.errors import EnvBuildError, installed, one_line
from pytest_benchmarks.core.settings import Settings
from pytest_benchmarks.core.tasks import EnvConfig
from pytest_benchmarks.engine.video import VideoRecorder

MAX_AUTO_BATCH = 64

#: Seconds a worker has to close its env and videos after the last episode.
CLOSE_GRACE_S = 60.0

#: Seconds between SIGTERM and SIGKILL when workers are stopped.
TERM_GRACE_S = 2.0


class SlotEnv(gym.Env[Any, Any]):
    """One slot of a vector env: lazy simulator, per-slot reset options, parked after its end."""

    def __init__(self, benchmark: type[Benchmark], config: EnvConfig, slot: int) -> None:
        # The class, not its registered name, crosses into worker processes: unpickling it
        # imports its module, which registers benchmarks defined outside this package too.
        self._benchmark = benchmark()
        self._config = config
        self._slot = slot
        self._env: gym.Env[Any, Any] | None = None
        self.observation_space, self.action_space = self._benchmark.spaces(config)
        self._steps = 0
        self._ended = True
        self._last_obs: Any = None
        self._video = VideoRecorder(config) if config.video != "none" else None

    def _build(self) -> gym.Env[Any, Any]:
        try:
            env = self._benchmark.make_env(self._config)
        except Exception as exc:  # a simulator the benchmark's packages do not support, ...
            packages = self._benchmark.packages
            with_packages = f" with {installed(packages)}" if packages else ""
            raise EnvBuildError(
                f"{self._config.task.id}: its environment cannot be built ({one_line(exc)})"
                + with_packages
            ) from exc
        for kind, declared, actual in (
            ("observation", self.observation_space, env.observation_space),
            ("action", self.action_space, env.action_space),
        ):
            if declared.shape != actual.shape or declared.dtype != actual.dtype:
                env.close()
                raise TypeError(
                    f"{self._config.task.id}: the env's {kind} space is {actual.dtype}"
                    f"{list(actual.shape or ())}, the benchmark declares {declared.dtype}"
                    f"{list(declared.shape or ())}"
                )
        return env

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        slot_options = dict((options or {}).get("slots", [{}] * (self._slot + 1))[self._slot])
        if slot_options.pop("park", False):
            self._ended = True
            return self._last_obs, {}
        index = slot_options.get("index")  # the env may use it: an episode's own scene
        if self._env is None:
            self._env = self._build()
        obs, _ = self._env.reset(seed=seed, options=slot_options)
        self._steps = 0
        self._ended = False
        self._last_obs = obs
        if self._video is not None:
            self._video.start(index, self._env)
        return obs, initial_state.of(self._env)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        if self._ended or self._env is None:
            # Parked: no episode runs here, so nothing ends either.
            return self._last_obs, 0.0, False, False, {"success": False}
        obs, reward, terminated, truncated, info = self._env.step(action)
        self._steps += 1
        success = bool(info.get("success", False))
        terminated = terminated or success
        truncated = truncated or self._steps >= self._config.max_steps
        self._ended = terminated or truncated
        self._last_obs = obs
        if self._video is not None:
            self._video.frame(self._env)
            if self._ended:
                self._video.finish(success)
        return obs, reward, terminated, truncated, {"success": success}

    def close(self) -> None:
        if self._video is not None:
            self._video.close()
        if self._env is not None:
            self._env.close()
            self._env = None


class SlotVectorEnv(SyncVectorEnv):
    """gymnasium's SyncVectorEnv with a lean step: its slots never autoreset and report only
    ``success``, so the per-env autoreset branches and generic info merging are skipped, and a
    Box observation is written into its row without concatenate's dispatch (0.2 us against
    3 us in a tight loop); results are the same (tested against SyncVectorEnv, partial resets
    included)."""

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        success = np.zeros(self.num_envs, dtype=np.bool_)
        # A Box observation goes straight into its row of the batch (what concatenate does,
        # without its dispatch); a partial reset still concatenates _env_obs, so it is kept.
        box = isinstance(self.single_observation_space, gym.spaces.Box)
        rows = self._observations if box else None
        for i, env in enumerate(self.envs):
            (
                self._env_obs[i],
                self._rewards[i],
                self._terminations[i],
                self._truncations[i],
                info,
            ) = env.step(actions[i])
            success[i] = info["success"]
            if rows is not None:
                rows[i] = self._env_obs[i]
        if rows is None:
            self._observations = concatenate(
                self.single_observation_space, self._env_obs, self._observations
            )
        return (
            self._observations,
            self._rewards.copy(),
            self._terminations.copy(),
            self._truncations.copy(),
            {"success": success},
        )


def cpu_count() -> int:
    """CPUs this process may run on (the affinity mask, not the machine's total)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def auto_batch_size(episodes: int, workers: int = 1, cpus: int | None = None) -> int:
    """floor(0.7 x the CPUs left to this worker), at least 1, capped by episodes and 64."""
    cpus = cpu_count() if cpus is None else cpus
    share = math.floor(0.7 * cpus / max(1, workers))
    return max(1, min(share, episodes, MAX_AUTO_BATCH))


def slots_for(settings: Settings, workers: int = 0) -> int:
    """The envs a task steps together: one for ``--benchmark-debug`` or
    ``--benchmark-episode`` (one env, in the test process), else ``--benchmark-batch-size``
    capped by the plan, else one on Ray (a CPU of a node per env), else ``auto_batch_size``
    for this process's share of the CPUs."""
    episodes = settings.planned
    if settings.single_env:
        return 1
    if settings.batch_size:
        return min(settings.batch_size, episodes)
    if settings.ray is not None:
        return 1
    return auto_batch_size(episodes, max(1, workers))


def make_vector_env(
    benchmark: Benchmark, config: EnvConfig, num_envs: int, *, sync: bool = False
) -> VectorEnv:
    """SlotVectorEnv (in-process) for one slot or when asked, AsyncVectorEnv (forkserver
    workers) otherwise.

    Forkserver rather than fork: a worker never inherits the parent's simulator or GL state.
    """
    fns = [partial(SlotEnv, type(benchmark), config, slot) for slot in range(num_envs)]
    if num_envs == 1 or sync:
        return SlotVectorEnv(fns, copy=False, autoreset_mode=AutoresetMode.DISABLED)
    # Built in two steps so that a worker that dies while the env starts (gymnasium asks the
    # workers for their spaces) can be named, and the other workers stopped.
    env = AsyncVectorEnv.__new__(AsyncVectorEnv)
    try:
        env.__init__(  # type: ignore[misc]
            fns, copy=False, context="forkserver", autoreset_mode=AutoresetMode.DISABLED
        )
    except (EOFError, ConnectionError) as exc:
        processes = list(getattr(env, "processes", ()))
        dead = exited(processes, wait_s=2.0)
        stop_processes(processes, 0.0)
        env.closed = True
        if dead is None:
            raise
        if any(p.exitcode == MAIN_REIMPORTED_EXIT for p in processes):
            raise WorkerStartError(unguarded_main()) from None
        raise WorkerStartError(f"{dead} while starting") from exc
    return env


#: The status of an env worker that stopped at the evaluation its main module started again:
#: a forkserver (or spawn) worker imports the parent's main module before it builds its env.
MAIN_REIMPORTED_EXIT = 87


def exit_if_reimporting_main() -> None:
    """In a worker that is importing the parent's main module (multiprocessing's bootstrapping,
    the check CPython's own "bootstrapping phase" error makes), end it with
    ``MAIN_REIMPORTED_EXIT`` before the evaluation it reached starts anything; the parent
    names the cause in one line (``unguarded_main``)."""
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        os._exit(MAIN_REIMPORTED_EXIT)


def unguarded_main() -> str:
    """Why the env workers stopped: the main module calls evaluate() when imported."""
    import sys

    script = getattr(sys.modules.get("__main__"), "__file__", None) or "the main module"
    return (
        f"the env workers import {script}, which calls evaluate() when imported: put the call "
        'under if __name__ == "__main__":'
    )


#: What every env worker imports: the forkserver's preload (``__main__`` is its default).
BASE_PRELOAD = ("__main__", "numpy", "gymnasium", __name__)


def preload_workers(benchmarks: Iterable[Benchmark]) -> None:
    """Have the forkserver import what these benchmarks' env workers need, once, before it
    forks them: a worker then starts by a fork rather than by importing its simulator (two
    Meta-World workers start in 0.4 s, not 1.15 s; lerobot:pusht's in 0.9 s, not 8 s).
    The forkserver is started once per process: the first run of a process decides its
    preload, and a later one in the same process with other benchmarks imports in its workers
    as before."""
    wanted = [m for b in benchmarks for m in b.worker_modules]
    for module in wanted:
        if module not in _preload:
            _preload.append(module)
    multiprocessing.set_forkserver_preload(list(_preload))


_preload: list[str] = list(BASE_PRELOAD)


class WorkerStartError(RuntimeError):
    """A vector-env worker process died before the env started."""


class LazyVectorEnv:
    """A vector env that starts its workers on first use, so a cached task costs nothing."""

    def __init__(
        self, benchmark: Benchmark, config: EnvConfig, num_envs: int, *, sync: bool = False
    ) -> None:
        self.benchmark = benchmark
        self.config = config
        self.num_envs = num_envs
        self.sync = sync or num_envs == 1
        self._env: VectorEnv | None = None

    def skip_unread_cameras(self, policy: object) -> None:
        """Before the env starts: cameras none of the policy's declared ``input_features``
        come from are rendered black (the benchmark's ``unread_cameras``); the others render as
        before. A policy that declares no inputs gets every camera."""
        reads: Collection[str] = getattr(policy, "input_features", None) or ()
        if self._env is None and reads:
            unread = self.benchmark.unread_cameras(self.config, reads)
            if unread:
                self.config = replace(self.config, blank_cameras=unread)

    def get(self) -> VectorEnv:
        """The gymnasium vector env, started now if it was not yet."""
        if self._env is None:
            self._env = make_vector_env(self.benchmark, self.config, self.num_envs, sync=self.sync)
        return self._env

    def __getattr__(self, name: str) -> Any:
        """Everything else is the gymnasium vector env's (``reset``, ``step``, its spaces), so
        the fixture works as one; the first use starts it."""
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.get(), name)

    def close(self, terminate: bool = False) -> None:
        """Close the workers; ``terminate`` kills them (after a failure, a timeout or Ctrl-C,
        when a worker may be dead, hung or mid-call). Never leaves a worker process behind.

        Every wait is bounded: a worker gets ``CLOSE_GRACE_S`` to close its env (and finish its
        videos), then SIGTERM, then SIGKILL ``TERM_GRACE_S`` later, which also ends a worker
        that ignores SIGTERM or is stopped.
        """
        if self._env is None:
            return
        env, self._env = self._env, None
        processes = list(getattr(env, "processes", ()))
        if not processes:
            env.close()
            return
        pipes = [p for p in getattr(env, "parent_pipes", ()) if p is not None and not p.closed]
        try:
            if not terminate:
                # A worker mid-call cannot take the close message: stop it instead.
                idle = getattr(env, "_state", None) is AsyncState.DEFAULT
                terminate = not (idle and close_workers(pipes, CLOSE_GRACE_S))
        except (OSError, EOFError):
            terminate = True  # a dead worker's pipe
        finally:
            stop_processes(processes, 0.0 if terminate else CLOSE_GRACE_S)
            for pipe in pipes:
                pipe.close()
            # gymnasium's own close would wait on the workers without limit; they are gone.
            env.closed = True

    def dead_workers(self, wait_s: float = 2.0) -> str | None:
        """Which vector-env workers died and how (``worker 1 (pid 42) killed by SIGKILL``).

        Waits up to ``wait_s`` for the exit status to arrive: a broken pipe can be seen before
        the process that closed it is reaped.
        """
        return exited(list(getattr(self._env, "processes", ())), wait_s)


def exited(processes: list[BaseProcess], wait_s: float) -> str | None:
    """Which of the processes died and how, waiting up to ``wait_s`` for an exit status."""
    deadline = time.monotonic() + wait_s
    while processes:
        dead = [(i, p) for i, p in enumerate(processes) if p.exitcode is not None]
        if dead:
            return "; ".join(
                f"vector env worker {i} (pid {p.pid}) {describe_exit(p.exitcode)}" for i, p in dead
            )
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.05)
    return None


def close_workers(pipes: list[Connection], timeout_s: float) -> bool:
    """Ask every worker to close its env; True when all answered within ``timeout_s``."""
    for pipe in pipes:
        pipe.send(("close", None))
    deadline = time.monotonic() + timeout_s
    for pipe in pipes:
        if not pipe.poll(max(0.0, deadline - time.monotonic())):
            return False
        pipe.recv()
    return True


def stop_processes(processes: list[BaseProcess], timeout_s: float) -> None:
    """Wait up to ``timeout_s`` for the processes to exit, then SIGTERM, then SIGKILL: each
    wait bounded, and every process reaped."""
    # A start that failed part way (the forkserver gone) leaves processes that never started.
    processes = [p for p in processes if p.pid is not None]
    deadline = time.monotonic() + timeout_s
    for process in processes:
        process.join(timeout=max(0.0, deadline - time.monotonic()))
    for stop in ("terminate", "kill"):
        alive = [p for p in processes if p.exitcode is None]
        if not alive:
            return
        for process in alive:
            getattr(process, stop)()
        deadline = time.monotonic() + TERM_GRACE_S
        for process in alive:
            process.join(timeout=max(0.0, deadline - time.monotonic()))
    for process in processes:
        process.join(timeout=TERM_GRACE_S)  # SIGKILL cannot be ignored; this returns


def describe_exit(code: int | None) -> str:
    """``killed by SIGKILL`` or ``exited with status 3``."""
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


def reset_slots(
    env: VectorEnv, slots: dict[int, tuple[int, int, int] | None]
) -> tuple[Any, dict[str, Any]]:
    """Reset ``slots`` (slot -> (seed, init_state, episode index), or None to park it); others
    stay untouched."""
    mask = np.zeros(env.num_envs, dtype=np.bool_)
    # gymnasium's vector reset takes one seed per env, though its annotation says one int.
    seeds: Any = [None] * env.num_envs
    options: list[dict[str, Any]] = [{} for _ in range(env.num_envs)]
    for slot, start in slots.items():
        mask[slot] = True
        if start is None:
            options[slot] = {"park": True}
        else:
            seeds[slot], init_state, index = start
            options[slot] = {"init_state": init_state, "index": index}
    return env.reset(seed=seeds, options={"reset_mask": mask, "slots": options})
