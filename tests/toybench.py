"""A tiny benchmark registered by the tests: a 1-D corridor the scripted policy walks to the end.

It is a real gymnasium env stepped through the real harness, fast enough to run hundreds of
episodes in a test, and with tasks that misbehave on purpose (a crash that kills the process).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from typing import Any

import gymnasium as gym
import numpy as np

from pytest_benchmarks.core.benchmark import Benchmark
from pytest_benchmarks.core.catalog import register
from pytest_benchmarks.core.features import Feature
from pytest_benchmarks.core.processors import EnvProcessors, state_vector
from pytest_benchmarks.core.tasks import EnvConfig, TaskRef

TASKS = {
    "walk": "Walk to the end of the corridor.",
    "stroll": "Walk slowly to the end of the corridor.",
    "crash": "Kill the process that steps this env.",
    "interrupt": "Send Ctrl-C (SIGINT) to the process that steps this env.",
    "killed": "Kill the process that steps this env with SIGKILL.",
    "hang": "Stop responding in the third step.",
    "reset-error": "Raise in reset.",
    "step-error": "Raise in the third step.",
    "stubborn": "Ignore SIGTERM and stop responding in the third step.",
    "frozen": "Stop the process that steps this env (SIGSTOP) in the third step.",
    "nan-reward": "Return a NaN reward in the third step of the second episode.",
    "killed-at-start": "Kill a vector-env worker process (SIGKILL) as it starts.",
    "terminate": "Send SIGTERM to the process that steps this env in its second episode.",
    "slow-start": "Stop responding while the env is built.",
}


class Corridor(gym.Env[np.ndarray, np.ndarray]):
    """Position x starts at -0.1 * init_state; success when x >= 1."""

    def __init__(self, config: EnvConfig) -> None:
        self.task = config.task.task
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float64)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.x = 0.0
        self.steps = 0
        self.episodes = 0
        if self.task == "slow-start":
            time.sleep(3600)
        if os.environ.get("TOY_BUILD_ERROR"):  # as a simulator the benchmark does not support
            raise ValueError("could not broadcast input array from shape (11,) into shape (12,)")
        _log_lifecycle("build")

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if self.task == "reset-error":
            raise RuntimeError("the corridor has no floor")
        self.x = -0.1 * int((options or {}).get("init_state", 0))
        if str((options or {}).get("index")) == os.environ.get("TOY_MOVED"):
            self.x -= 0.001  # the episode starts a millimetre back: another initial state
        self.steps = 0
        self.episodes += 1
        return np.array([self.x, 0.0]), {}

    def simulator_state(self) -> list[float]:
        """The corridor's whole state: where the walker stands."""
        return [self.x]

    def step(self, action: np.ndarray) -> Any:
        if self.task == "crash" and self.steps == 2:
            os._exit(3)
        if self.task == "interrupt" and self.steps == 2:
            # As Ctrl-C reaches an interactive process: a session started from a background
            # shell inherits SIGINT ignored, and Python then installs no handler for it.
            signal.signal(signal.SIGINT, signal.default_int_handler)
            os.kill(os.getpid(), signal.SIGINT)
        if self.task == "killed" and self.steps == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        if self.task == "hang" and self.steps == 2:
            time.sleep(3600)
        if self.task == "stubborn" and self.steps == 2:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            time.sleep(3600)
        if self.task == "terminate" and self.steps == 2 and self.episodes == 2:
            os.kill(os.getpid(), signal.SIGTERM)
        if self.task == "frozen" and self.steps == 2:
            os.kill(os.getpid(), signal.SIGSTOP)
        if self.task == "step-error" and self.steps == 2:
            raise ValueError("the corridor wall moved")
        self.steps += 1
        if self.task == "nan-reward" and self.steps == 3 and self.episodes == 2:
            return np.array([self.x, self.steps]), float("nan"), False, False, {"success": False}
        speed = 0.05 if self.task == "stroll" else 0.2
        self.x += speed * float(action[0])
        return (
            np.array([self.x, self.steps]),
            -abs(1 - self.x),
            False,
            False,
            {"success": self.x >= 1.0},
        )

    def close(self) -> None:
        _log_lifecycle("close")


def _log_lifecycle(event: str) -> None:
    """With ``TOY_ENV_LOG`` set, append ``event pid ppid forkserver time`` for each simulator
    built and closed, ``forkserver`` 1 when the parent is multiprocessing's forkserver (one line
    per write, so processes appending at once do not interleave)."""
    path = os.environ.get("TOY_ENV_LOG")
    if path:
        ppid = os.getppid()
        try:
            with open(f"/proc/{ppid}/cmdline", "rb") as cmdline:
                forkserver = int(b"forkserver" in cmdline.read())
        except OSError:
            forkserver = 0
        line = f"{event} {os.getpid()} {ppid} {forkserver} {time.monotonic():.6f}\n"
        with open(path, "a") as log:
            log.write(line)


class Walker:
    """Walks at full stride; ``TOY_STRIDE`` shortens it (a policy that got worse, under the
    same identity): at 0.7 the stroll needs 29, 32, 35 or 38 steps by initial state."""

    def __init__(self) -> None:
        self.stride = float(os.environ.get("TOY_STRIDE", "1"))

    def reset(self, slots: Any, seeds: Any) -> None:
        pass

    def act(self, batch: dict[str, Any]) -> np.ndarray:
        return np.full((len(batch["observation.state"]), 1), self.stride, dtype=np.float32)

    def identity(self) -> dict[str, str | None]:
        return {"source": "scripted", "id": "toy.walker", "revision": None}


@register("toy")
class Toy(Benchmark):
    extra = "toy"
    requires = ()

    def tasks(self) -> list[TaskRef]:
        return [TaskRef("toy", "corridor", n, i, d) for i, (n, d) in enumerate(TASKS.items())]

    def groups(self) -> dict[str, list[str]]:
        return {"corridor": ["walk", "stroll"]}

    def default_selection(self) -> list[TaskRef]:
        return self.select(["corridor"])

    def default_max_steps(self, task: TaskRef) -> int:
        return 30

    def init_state(self, task: TaskRef, episode: int) -> int:
        return episode % 4

    def spaces(self, config: EnvConfig) -> Any:
        if config.task.task == "killed-at-start" and multiprocessing.parent_process() is not None:
            os.kill(os.getpid(), signal.SIGKILL)  # in a vector-env worker, not the test process
        return (
            gym.spaces.Box(-np.inf, np.inf, (2,), np.float64),
            gym.spaces.Box(-1.0, 1.0, (1,), np.float32),
        )

    def make_env(self, config: EnvConfig) -> gym.Env[Any, Any]:
        return Corridor(config)

    def features(self, config: EnvConfig) -> dict[str, Feature]:
        return {"observation.state": Feature((2,), "float32")}

    def processors(self, config: EnvConfig) -> EnvProcessors:
        return EnvProcessors(self.features(config), config.task.description, [state_vector()])

    def scripted_policy(self, task: TaskRef, num_envs: int) -> Walker:
        return Walker()


@register("absent")
class Absent(Toy):
    """A benchmark whose simulator is not installed."""

    extra = "absent"
    requires = ("no_such_simulator_module",)
