"""PushT (gym-pusht): push a T-shaped block onto its goal pose with a round pusher.

Observations: ``state`` is LeRobot's keypoints layout (``environment_state_agent_pos``): the
agent's position as ``observation.state`` and the T's 8 keypoints as
``observation.environment_state``; ``pixels`` adds the rendered board as
``observation.images.top`` (renamed by ``--benchmark-camera-map``); ``lerobot`` is LeRobot's
``pixels_agent_pos`` layout: ``observation.image`` and the 2-D ``observation.state``, with
LeRobot's empty task description. LeRobot's PushT images are 96x96
(``--benchmark-image-size=96x96``).

The scripted expert (``expert``) is a pushing controller from the T's pose; the env computes it,
so it needs ``--benchmark-policy=scripted`` (privileged configs).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from pytest_benchmarks.core.benchmark import Benchmark
from pytest_benchmarks.core.expert_action import EXPERT_FEATURE, EXPERT_KEY, ExpertActionPolicy
from pytest_benchmarks.core.features import Feature
from pytest_benchmarks.core.processors import Batch, EnvProcessors, camera_renames
from pytest_benchmarks.core.tasks import EnvConfig, TaskRef

TASK = "PushT-v0"
DESCRIPTION = "Push the T-shaped block onto the T-shaped target"
#: LeRobot's ``PushtEnv``: 300 steps at 10 Hz.
MAX_STEPS = 300
FPS = 10
CAMERA = "top"
ENV_STATE = "observation.environment_state"
KEYPOINTS_DIM = 16


def processors(config: EnvConfig) -> EnvProcessors:
    """The agent's position, and the T's keypoints (``state``) or the board's image."""
    if config.obs == "state":
        image = None
    elif config.obs == "lerobot":
        image = "observation.image"
    else:
        image = f"observation.images.{camera_renames(config.camera_map).get(CAMERA, CAMERA)}"

    def transform(batch: Batch) -> Batch:
        raw = batch["raw"]
        out: Batch = {"observation.state": np.asarray(raw["agent_pos"], dtype=np.float32)}
        if image is None:
            out[ENV_STATE] = np.asarray(raw["environment_state"], dtype=np.float32)
        else:
            out[image] = raw["pixels"]
        if config.privileged:
            out[EXPERT_FEATURE] = np.asarray(raw[EXPERT_KEY], dtype=np.float32)
        return out

    features = {"observation.state": Feature((2,), "float32")}
    if image is None:
        features[ENV_STATE] = Feature((KEYPOINTS_DIM,), "float32")
    else:
        features[image] = Feature((*config.image_size, 3), "uint8")
    if config.privileged:
        features[EXPERT_FEATURE] = Feature((2,), "float32")
    description = "" if config.obs == "lerobot" else config.task.description
    return EnvProcessors(features, description, [transform])


class PushT(Benchmark):
    name = "pusht"
    extra = "pusht"
    requires = ("gym_pusht", "pymunk", "pygame", "shapely")
    observation_modes = ("state", "pixels", "lerobot")
    cameras = (CAMERA,)
    fps = FPS
    packages = ("gym-pusht", "pymunk")

    def tasks(self) -> list[TaskRef]:
        return [TaskRef("pusht", "pusht", TASK, 0, DESCRIPTION)]

    def groups(self) -> dict[str, list[str]]:
        return {"pusht": [TASK]}

    def aliases(self, token: str) -> str:
        return token.removeprefix("gym_pusht/")

    def default_max_steps(self, task: TaskRef) -> int:
        return MAX_STEPS

    def init_state(self, task: TaskRef, episode: int) -> int:
        """The start follows the episode's seed, as in gym-pusht: the index stands for it."""
        return episode

    def spaces(self, config: EnvConfig) -> tuple[gym.Space[Any], gym.Space[Any]]:
        from pytest_benchmarks.envs.pusht.env import spaces

        return spaces(config)

    def make_env(self, config: EnvConfig) -> gym.Env[Any, Any]:
        from pytest_benchmarks.envs.pusht.env import PushTTaskEnv

        return PushTTaskEnv(config)

    def processors(self, config: EnvConfig) -> EnvProcessors:
        return processors(config)

    def scripted_policy(self, task: TaskRef, num_envs: int) -> ExpertActionPolicy:
        return ExpertActionPolicy("pytest_benchmarks.envs.pusht.expert")
