"""Meta-World v3: 50 single tasks, the MT10 and MT50 groups, and the scripted expert policies.

Meta-World's own ``gym.make("Meta-World/MT1", ...)`` draws each reset's goal from an RNG seeded at
make time, so a goal would depend on the order of earlier resets. Here each episode names its goal
explicitly: ``metaworld.MT1(task, seed=base_seed)`` holds 50 goal variations and episode i uses
variation ``i mod 50``, recorded as its ``init_state`` (drawn as MT1 draws them, only as far as
the episodes reach: ``metaworld_goals``).

``--benchmark-obs=lerobot`` gives the observations of LeRobot's own Meta-World wrapper
(``lerobot.envs.metaworld``): the corner2 camera moved to LeRobot's position and turned by 180
degrees as ``observation.image``, the first 4 state entries (hand position and gripper) as
``observation.state``, and LeRobot's task descriptions. Its scenes are LeRobot 0.6's too: the
object and goal positions drawn from the episode's seed (Meta-World's ``seeded_rand_vec``), so
episode *i* with seed *s* is ``lerobot-eval``'s episode with seed *s*.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import gymnasium as gym
import numpy as np

from pytest_benchmarks.core.benchmark import Benchmark
from pytest_benchmarks.core.features import Feature
from pytest_benchmarks.core.processors import Batch, EnvProcessors, camera_renames
from pytest_benchmarks.core.tasks import EnvConfig, TaskRef
from pytest_benchmarks.envs.metaworld.env import (
    CAMERA,
    ENV_STATE,
    IMAGE_KEY,
    LEROBOT_STATE_DIM,
    MAX_STEPS,
    OBS_DIM,
    MetaWorldTaskEnv,
    spaces,
)
from pytest_benchmarks.envs.metaworld.expert import ScriptedMetaWorldPolicy, package_version
from pytest_benchmarks.envs.metaworld.goals import N_GOALS
from pytest_benchmarks.envs.metaworld.tasks import DESCRIPTIONS, GROUPS


def full_state(batch: Batch) -> Batch:
    """The 39-D state (hand, gripper, objects, goal), also under LeRobot's name for the
    simulator's privileged state, so LeRobot policies that need a camera or an environment
    state (ACT, Diffusion) take state-only observations and datasets."""
    state = np.asarray(batch["raw"], dtype=np.float32)
    return {"observation.state": state, ENV_STATE: state}


def processors(config: EnvConfig) -> EnvProcessors:
    """The 39-D state vector and, with pixels, the corner2 camera turned upright; LeRobot's
    layout with ``lerobot``."""
    if config.obs == "state":
        features = {
            "observation.state": Feature((OBS_DIM,), "float32"),
            ENV_STATE: Feature((OBS_DIM,), "float32"),
        }
        return EnvProcessors(features, config.task.description, [full_state])
    if config.obs == "lerobot":
        return lerobot_processors(config)
    image_name = f"observation.images.{camera_renames(config.camera_map).get(CAMERA, CAMERA)}"

    def transform(batch: Batch) -> Batch:
        raw = batch["raw"]
        return {
            "observation.state": np.asarray(raw["state"], dtype=np.float32),
            # Meta-World renders corner2 upside down: turn the image by 180 degrees.
            image_name: np.ascontiguousarray(raw[IMAGE_KEY][:, ::-1, ::-1]),
        }

    features = {
        "observation.state": Feature((OBS_DIM,), "float32"),
        image_name: Feature((*config.image_size, 3), "uint8"),
    }
    return EnvProcessors(features, config.task.description, [transform])


def lerobot_processors(config: EnvConfig) -> EnvProcessors:
    """What LeRobot's wrapper gives: ``observation.image`` (corner2 from LeRobot's position,
    turned by 180 degrees) and the 4-D ``observation.state``."""

    def transform(batch: Batch) -> Batch:
        raw = batch["raw"]
        return {
            "observation.state": np.asarray(raw["state"][:, :LEROBOT_STATE_DIM], dtype=np.float32),
            "observation.image": np.ascontiguousarray(raw[IMAGE_KEY][:, ::-1, ::-1]),
        }

    features = {
        "observation.state": Feature((LEROBOT_STATE_DIM,), "float32"),
        "observation.image": Feature((*config.image_size, 3), "uint8"),
    }
    return EnvProcessors(features, lerobot_description(config.task), [transform])


def lerobot_description(task: TaskRef) -> str:
    """LeRobot's description of the task (its policies were trained on it), when LeRobot is
    installed; this project's otherwise."""
    return lerobot_descriptions().get(task.task, task.description)


@cache
def lerobot_descriptions() -> dict[str, str]:
    import importlib.util
    import json
    from pathlib import Path

    spec = importlib.util.find_spec("lerobot")
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = Path(next(iter(spec.submodule_search_locations))) / "envs" / "metaworld_config.json"
    try:
        return dict(json.loads(path.read_text())["TASK_DESCRIPTIONS"])
    except (OSError, ValueError, KeyError):
        return {}


class MetaWorld(Benchmark):
    name = "metaworld"
    extra = "metaworld"
    requires = ("metaworld", "mujoco")
    observation_modes = ("state", "pixels", "lerobot")
    cameras = (CAMERA,)
    fps = 80  # frame_skip 5 x timestep 0.0025 s; LeRobot's MetaworldEnv says the same
    robot_type = "sawyer"
    packages = ("mujoco", "metaworld")
    worker_modules = ("mujoco", "metaworld", "pytest_benchmarks.envs.metaworld.benchmark")

    def tasks(self) -> list[TaskRef]:
        return [
            TaskRef("metaworld", "MT50", name, index, description)
            for index, (name, description) in enumerate(DESCRIPTIONS.items())
        ]

    def groups(self) -> dict[str, list[str]]:
        return GROUPS

    def default_selection(self) -> list[TaskRef]:
        """MT10: at the default 50 episodes per task its gate catches a 30-point drop on any
        task with at least 80% power in about a minute and a half on two CPUs; MT50 is 5x that."""
        return self.select(["MT10"])

    def aliases(self, token: str) -> str:
        # LeRobot spells single tasks "metaworld-push-v3".
        return token.removeprefix("metaworld-")

    def default_max_steps(self, task: TaskRef) -> int:
        return MAX_STEPS

    def init_state(self, task: TaskRef, episode: int) -> int:
        """The goal variation (``state`` and ``pixels``); LeRobot's layout draws its scene
        from the episode's seed instead, as LeRobot 0.6's wrapper does."""
        return episode % N_GOALS

    def spaces(self, config: EnvConfig) -> tuple[gym.Space[Any], gym.Space[Any]]:
        return spaces(config)

    def make_env(self, config: EnvConfig) -> gym.Env[Any, Any]:
        return MetaWorldTaskEnv(config)

    def processors(self, config: EnvConfig) -> EnvProcessors:
        return processors(config)

    def scripted_policy(self, task: TaskRef, num_envs: int) -> ScriptedMetaWorldPolicy:
        return ScriptedMetaWorldPolicy(task.task)

    def identity(self) -> dict[str, str | None]:
        return {"name": self.name, "version": package_version("metaworld")}
