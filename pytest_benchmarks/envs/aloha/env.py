"""One ALOHA task as a gymnasium env: gym-aloha's joint-space scene and task, observed as this
harness needs.

gym-aloha's own env renders three 640x480 cameras at every step, whatever it returns; here
only the top camera is drawn, at the configured size, and only when an observation or video
needs it (``physics.render``, as gym-aloha draws it). The scene comes from the episode's seed
exactly as gym-aloha's reset draws it (``sample_box_pose(seed)``), so episode i with seed s is
lerobot-eval's episode with seed s.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from pytest_benchmarks.core.expert_action import EXPERT_KEY
from pytest_benchmarks.core.tasks import EnvConfig
from pytest_benchmarks.envs.aloha.tasks import (
    ACTION_DIM,
    CAMERA,
    MAX_REWARD,
    OBJECTS_DIM,
    SCENES,
    STATE_DIM,
)
from pytest_benchmarks.envs.mujoco import render as mujoco_render

#: The simulator went unstable (MuJoCo's divergence check): the episode ends, failed.
UNSTABLE = "unstable"


def spaces(config: EnvConfig) -> tuple[gym.spaces.Dict, gym.spaces.Box]:
    """Declared from the config alone, so no simulator is built to learn them."""
    scene = SCENES[config.task.task]
    entries: dict[str, gym.Space[Any]] = {
        "qpos": gym.spaces.Box(-np.inf, np.inf, (STATE_DIM,), np.float64),
        "env_state": gym.spaces.Box(-np.inf, np.inf, (OBJECTS_DIM[scene],), np.float64),
    }
    if config.obs != "state":
        entries[CAMERA] = gym.spaces.Box(0, 255, (*config.image_size, 3), np.uint8)
    if config.privileged:
        entries[EXPERT_KEY] = gym.spaces.Box(-np.inf, np.inf, (ACTION_DIM,), np.float64)
    # gym-aloha declares [-1, 1], but its actions are joint angles in radians (and the grippers'
    # openings, 0 to 1), which the simulator clips to each actuator's range: every range lies
    # within [-pi, pi].
    return gym.spaces.Dict(entries), gym.spaces.Box(-np.pi, np.pi, (ACTION_DIM,), np.float32)


class AlohaTaskEnv(gym.Env[dict[str, Any], np.ndarray]):
    """gym-aloha's joint-space task, stepped through dm_control as gym-aloha steps it."""

    def __init__(self, config: EnvConfig) -> None:
        from dm_control import mujoco
        from dm_control.rl import control
        from gym_aloha.constants import ASSETS_DIR, DT
        from gym_aloha.tasks import sim

        self._scene = SCENES[config.task.task]
        task_class = sim.TransferCubeTask if self._scene == "transfer_cube" else sim.InsertionTask

        class Observed(task_class):  # type: ignore[misc, valid-type]
            """gym-aloha's task without its three renders per step."""

            def get_observation(self, physics: Any) -> dict[str, np.ndarray]:
                return {"qpos": self.get_qpos(physics), "env_state": self.get_env_state(physics)}

        physics = mujoco.Physics.from_xml_path(
            str(ASSETS_DIR / f"bimanual_viperx_{self._scene}.xml")
        )
        self._size = config.image_size
        self._pixels = config.obs != "state"
        self._flags: dict[str, bool] = {}
        if self._pixels or config.video != "none":
            mujoco_render.configure_model(physics.model.ptr, self._size, config.render)
            if config.render == mujoco_render.FAST:
                self._flags = {"shadow": False, "reflection": False}
        self._env = control.Environment(
            physics, Observed(), float("inf"), control_timestep=DT, n_sub_steps=None,
            flat_observation=False,
        )  # fmt: skip
        self._expert: Any = None
        if config.privileged:
            from pytest_benchmarks.envs.aloha.expert import ExpertTrack

            self._expert = ExpertTrack(self._scene, config.max_steps)
        self._frame: np.ndarray | None = None
        self._last: dict[str, np.ndarray] = {}
        self.observation_space, self.action_space = spaces(config)

    def _draw(self) -> np.ndarray:
        height, width = self._size
        return self._env.physics.render(
            height=height, width=width, camera_id=CAMERA, render_flag_overrides=self._flags or None
        )

    def _observe(self, raw: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        obs = {"qpos": raw["qpos"], "env_state": raw["env_state"]}
        self._frame = None
        if self._pixels:
            self._frame = obs[CAMERA] = self._draw()
        if self._expert is not None:
            obs[EXPERT_KEY] = self._expert.next(self._env.physics)
        self._last = obs
        return obs

    def render(self) -> np.ndarray:
        """The top camera (for videos); the observation's frame when there is one."""
        return self._frame if self._frame is not None else self._draw()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        from gym_aloha.tasks.sim import BOX_POSE
        from gym_aloha.utils import sample_box_pose, sample_insertion_pose

        super().reset(seed=seed)
        if self._scene == "transfer_cube":
            BOX_POSE[0] = sample_box_pose(seed)
        else:
            BOX_POSE[0] = np.concatenate(sample_insertion_pose(seed))
        raw = self._env.reset().observation
        if self._expert is not None:
            self._expert.start(raw["env_state"])
        return self._observe(raw), {}

    def step(self, action: np.ndarray) -> tuple[dict[str, np.ndarray], float, bool, bool,
                                                  dict[str, Any]]:  # fmt: skip
        from dm_control.rl.control import PhysicsError

        try:
            # As given: gym-aloha turns the grippers' openings into controls in the action's
            # own precision (float32 from a LeRobot policy, as lerobot-eval passes it).
            timestep = self._env.step(np.asarray(action))
        except PhysicsError as error:  # the state is NaN: the last observation stands
            return self._last, 0.0, False, True, {"success": False, UNSTABLE: str(error)}
        success = timestep.reward == MAX_REWARD
        info = {"success": bool(success)}
        return (
            self._observe(timestep.observation),
            float(timestep.reward),
            bool(success),
            False,
            info,
        )

    def close(self) -> None:
        if self._expert is not None:
            self._expert.close()
        self._env.physics.free()
