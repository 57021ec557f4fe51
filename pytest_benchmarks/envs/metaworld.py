"""Meta-World v3: 50 single tasks, the MT10 and MT50 groups, and the scripted expert policies.

Meta-World's own ``gym.make("Meta-World/MT1", ...)`` draws each reset's goal from an RNG seeded at
make time, so a goal would depend on the order of earlier resets. Here each episode names its goal
explicitly: ``metaworld.MT1(task, seed=base_seed)`` holds 50 goal variations and episode i uses
variation ``i mod 50``, recorded as its ``init_state``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from importlib import metadata
from typing import Any

import gymnasium as gym
import numpy as np

from pytest_benchmarks.envs.metaworld_tasks import DESCRIPTIONS, GROUPS
from pytest_benchmarks.processors import EnvProcessors, Feature, state_vector
from pytest_benchmarks.registry import Benchmark, EnvConfig, TaskRef, register

N_GOALS = 50
MAX_STEPS = 500
OBS_DIM = 39
ACTION_DIM = 4


class MetaWorldTaskEnv(gym.Env[np.ndarray, np.ndarray]):
    """One Meta-World task whose reset takes the goal variation from ``options["init_state"]``."""

    def __init__(self, config: EnvConfig) -> None:
        import metaworld

        name = config.task.task
        self._goals = metaworld.MT1(name, seed=config.seed).train_tasks
        self._env = metaworld.env_dict.ALL_V3_ENVIRONMENTS[name]()
        self._env.max_path_length = config.max_steps
        self.observation_space = self._env.observation_space
        self.action_space = self._env.action_space

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        goal = int((options or {}).get("init_state", 0))
        self._env.set_task(self._goals[goal])
        if seed is not None:
            self._env.seed(seed)
        obs, _ = self._env.reset()
        return obs, {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self._env.step(action)
        return (
            obs,
            float(reward),
            bool(terminated),
            bool(truncated),
            {"success": bool(info["success"])},
        )

    def close(self) -> None:
        self._env.close()


class ScriptedMetaWorldPolicy:
    """Meta-World's hand-written expert for one task, applied row by row to the batch."""

    def __init__(self, task: str) -> None:
        from metaworld.policies import ENV_POLICY_MAP

        self._expert = ENV_POLICY_MAP[task]()
        self._name = type(self._expert).__name__

    def reset(self, slots: Sequence[int], seeds: Sequence[int]) -> None:
        pass  # the experts are stateless

    def act(self, batch: dict[str, Any]) -> np.ndarray:
        states = np.asarray(batch["observation.state"], dtype=np.float64)
        actions = np.stack([self._expert.get_action(row) for row in states])
        # The experts' gains can overshoot; the env would clip to [-1, 1] anyway.
        return np.clip(actions, -1.0, 1.0).astype(np.float32)

    def identity(self) -> dict[str, str | None]:
        return {
            "source": "scripted",
            "id": f"metaworld.policies.{self._name}",
            "revision": _version("metaworld"),
        }


@register("metaworld")
class MetaWorld(Benchmark):
    extra = "metaworld"
    requires = ("metaworld", "mujoco")

    def tasks(self) -> list[TaskRef]:
        return [
            TaskRef("metaworld", "MT50", name, index, description)
            for index, (name, description) in enumerate(DESCRIPTIONS.items())
        ]

    def groups(self) -> dict[str, list[str]]:
        return GROUPS

    def aliases(self, token: str) -> str:
        # LeRobot spells single tasks "metaworld-push-v3".
        return token.removeprefix("metaworld-")

    def default_max_steps(self, task: TaskRef) -> int:
        return MAX_STEPS

    def init_state(self, task: TaskRef, episode: int) -> int:
        return episode % N_GOALS

    def spaces(self, config: EnvConfig) -> tuple[gym.Space[Any], gym.Space[Any]]:
        obs = gym.spaces.Box(-np.inf, np.inf, (OBS_DIM,), np.float64)
        action = gym.spaces.Box(-1.0, 1.0, (ACTION_DIM,), np.float32)
        return obs, action

    def make_env(self, config: EnvConfig) -> gym.Env[Any, Any]:
        return MetaWorldTaskEnv(config)

    def features(self, config: EnvConfig) -> dict[str, Feature]:
        return {"observation.state": Feature((OBS_DIM,), "float32")}

    def processors(self, config: EnvConfig) -> EnvProcessors:
        return EnvProcessors(self.features(config), config.task.description, [state_vector()])

    def scripted_policy(self, task: TaskRef, num_envs: int) -> ScriptedMetaWorldPolicy:
        return ScriptedMetaWorldPolicy(task.task)

    def identity(self) -> dict[str, str | None]:
        return {"name": self.name, "version": _version("metaworld")}


@cache
def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None
