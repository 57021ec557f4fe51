"""ALOHA (gym-aloha): the ACT paper's two bimanual tasks, with its scripted experts.

Observations: ``state`` gives the 14 joint positions as ``observation.state`` and the objects'
poses (the simulator's privileged state) as ``observation.environment_state``; ``pixels``
adds the top camera (``observation.images.top``, renamed by ``--benchmark-camera-map``);
``lerobot`` is LeRobot's ``pixels_agent_pos`` layout: ``observation.images.top`` and the 14-D
``observation.state``, with LeRobot's empty task description. LeRobot renders 480x640: pass
``--benchmark-image-size=480x640`` for checkpoints trained on its datasets.

The scripted expert is made as the ACT paper made its demonstrations (``expert``): a plan in
the mocap version of the scene, replayed in joint space; the env computes it, so it needs
``--benchmark-policy=scripted`` (privileged configs).
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
from pytest_benchmarks.envs.aloha.tasks import (
    ACTION_DIM,
    CAMERA,
    DESCRIPTIONS,
    FPS,
    MAX_STEPS,
    OBJECTS_DIM,
    SCENES,
    STATE_DIM,
)

ENV_STATE = "observation.environment_state"


def processors(config: EnvConfig) -> EnvProcessors:
    """The joint positions, the objects' poses (``state``) or the top camera (``pixels``,
    ``lerobot``), and the env's expert action when it computes one."""
    lerobot = config.obs == "lerobot"
    image = None
    if config.obs != "state":
        name = CAMERA if lerobot else camera_renames(config.camera_map).get(CAMERA, CAMERA)
        image = f"observation.images.{name}"

    def transform(batch: Batch) -> Batch:
        raw = batch["raw"]
        out: Batch = {"observation.state": np.asarray(raw["qpos"], dtype=np.float32)}
        if image is None:
            out[ENV_STATE] = np.asarray(raw["env_state"], dtype=np.float32)
        else:
            out[image] = raw[CAMERA]
        if config.privileged:
            out[EXPERT_FEATURE] = np.asarray(raw[EXPERT_KEY], dtype=np.float32)
        return out

    features = {"observation.state": Feature((STATE_DIM,), "float32")}
    if image is None:
        features[ENV_STATE] = Feature((OBJECTS_DIM[SCENES[config.task.task]],), "float32")
    else:
        features[image] = Feature((*config.image_size, 3), "uint8")
    if config.privileged:
        features[EXPERT_FEATURE] = Feature((ACTION_DIM,), "float32")
    description = "" if lerobot else config.task.description
    return EnvProcessors(features, description, [transform])


class Aloha(Benchmark):
    name = "aloha"
    extra = "aloha"
    requires = ("gym_aloha", "dm_control", "mujoco")
    observation_modes = ("state", "pixels", "lerobot")
    cameras = (CAMERA,)
    fps = FPS
    robot_type = "aloha"
    packages = ("mujoco", "dm-control", "gym-aloha")

    def tasks(self) -> list[TaskRef]:
        return [
            TaskRef("aloha", "aloha", name, index, DESCRIPTIONS[name])
            for index, name in enumerate(SCENES)
        ]

    def groups(self) -> dict[str, list[str]]:
        return {"aloha": list(SCENES)}

    def aliases(self, token: str) -> str:
        # LeRobot's env config names tasks with or without gym-aloha's namespace.
        return token.removeprefix("gym_aloha/")

    def default_max_steps(self, task: TaskRef) -> int:
        return MAX_STEPS

    def init_state(self, task: TaskRef, episode: int) -> int:
        """The scene follows the episode's seed, as in gym-aloha: the index stands for it."""
        return episode

    def spaces(self, config: EnvConfig) -> tuple[gym.Space[Any], gym.Space[Any]]:
        from pytest_benchmarks.envs.aloha.env import spaces

        return spaces(config)

    def make_env(self, config: EnvConfig) -> gym.Env[Any, Any]:
        from pytest_benchmarks.envs.aloha.env import AlohaTaskEnv

        return AlohaTaskEnv(config)

    def processors(self, config: EnvConfig) -> EnvProcessors:
        return processors(config)

    def scripted_policy(self, task: TaskRef, num_envs: int) -> ExpertActionPolicy:
        return ExpertActionPolicy("pytest_benchmarks.envs.aloha.expert")
