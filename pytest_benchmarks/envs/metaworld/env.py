"""Meta-World v3 as a gymnasium env for one task: MT1's goal per episode, cameras, LeRobot's layout
and seeded scenes, and the spaces the harness declares before any simulator starts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from pytest_benchmarks.core import initial_state
from pytest_benchmarks.core.tasks import EnvConfig
from pytest_benchmarks.envs.metaworld.goals import MT1Goals
from pytest_benchmarks.envs.mujoco import render as mujoco_render

MAX_STEPS = 500
OBS_DIM = 39
ACTION_DIM = 4
CAMERA = "corner2"
IMAGE_KEY = f"{CAMERA}_image"
#: LeRobot's wrapper: where it puts the corner2 camera, and the state entries it keeps.
LEROBOT_CAMERA_POS = (0.75, 0.075, 0.7)
LEROBOT_STATE_DIM = 4
ENV_STATE = "observation.environment_state"


class MetaWorldTaskEnv(gym.Env[np.ndarray, np.ndarray]):
    """One Meta-World task whose reset takes the goal variation from ``options["init_state"]``."""

    def __init__(self, config: EnvConfig) -> None:
        import metaworld

        name = config.task.task
        self._goals = MT1Goals(name, config.seed)  # MT1's goals, drawn as episodes ask
        self._pixels = config.obs in ("pixels", "lerobot")
        height, width = config.image_size
        render: dict[str, Any] = {"render_mode": "rgb_array", "camera_name": CAMERA, "width": width,
                  "height": height} if self._pixels or config.video != "none" else {}  # fmt: skip
        self._frame: np.ndarray | None = None
        #: The state observation reset returned: where reset placed the objects and the goal.
        self._placement: np.ndarray = np.zeros(0)
        self._current: Callable[[], None] = lambda: None  # makes this env's GL context current
        self._env = metaworld.env_dict.ALL_V3_ENVIRONMENTS[name](**render)
        #: LeRobot's layout draws each scene from the reset's seed, as LeRobot's wrapper does.
        self._seeded_scene = config.obs == "lerobot"
        if config.obs == "lerobot":
            self._env.model.cam_pos[self._env.model.camera(CAMERA).id] = LEROBOT_CAMERA_POS
        if render:
            mujoco_render.configure_model(self._env.model, config.image_size, config.render)
            # gymnasium makes the camera's viewer on the first frame; make it now to set it up.
            viewer = self._env.mujoco_renderer._get_viewer(render["render_mode"])
            # gymnasium renders into whichever GL context is current: with several envs in one
            # process (--benchmark-sync) that is the last one made, so each frame makes its own.
            self._current = viewer.make_context_current
            self._current()
            mujoco_render.configure_scene(viewer.scn, config.render)
            mujoco_render.configure_meshes(self._env.model, viewer.con, config.render)
        self._env.max_path_length = config.max_steps
        self.observation_space, self.action_space = spaces(config)
        if not self._pixels:  # the env's own bounds, more precise than the declared ones
            self.observation_space = self._env.observation_space

    def _observe(self, state: np.ndarray) -> Any:
        if not self._pixels:
            return state
        self._frame = self._draw()
        return {"state": state, IMAGE_KEY: self._frame}

    def _draw(self) -> np.ndarray:
        """The camera's frame, drawn in this env's GL context."""
        self._current()
        return self._env.render()

    def render(self) -> np.ndarray:
        """The corner2 camera, upright (for videos); the observation's frame when there is one."""
        frame = self._frame if self._pixels and self._frame is not None else self._draw()
        return np.ascontiguousarray(frame[::-1, ::-1])

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        goal = 0 if self._seeded_scene else int((options or {}).get("init_state", 0))
        self._env.set_task(self._goals[goal])
        if self._seeded_scene:  # the positions come from the seeded RNG, not the task
            self._env._freeze_rand_vec = False
            self._env.seeded_rand_vec = True
        if seed is not None:
            self._env.seed(seed)
        obs, _ = self._env.reset()
        self._placement = np.array(obs, dtype=np.float64)
        return self._observe(obs), {}

    def simulator_state(self) -> list[Any]:
        """What the initial-state digest reads (``core.initial_state``): MuJoCo's state, as for
        any MuJoCo env, and the last reset's state observation. Meta-World places many tasks'
        objects and goals through the model (``body_pos``, ``site_pos``), not the joints, so
        MuJoCo's state alone reads the same for every goal; the observation holds the object
        and goal positions reset drew."""
        return [*(initial_state.state_arrays(self._env) or []), self._placement]

    def step(self, action: np.ndarray) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self._env.step(action)
        success = {"success": bool(info["success"])}
        return self._observe(obs), float(reward), bool(terminated), bool(truncated), success

    def close(self) -> None:
        self._goals.close()
        self._env.close()


def spaces(config: EnvConfig) -> tuple[gym.Space[Any], gym.spaces.Box]:
    """Declared from the config alone, so no simulator is built to learn them."""
    state = gym.spaces.Box(-np.inf, np.inf, (OBS_DIM,), np.float64)
    action = gym.spaces.Box(-1.0, 1.0, (ACTION_DIM,), np.float32)
    if config.obs == "state":
        return state, action
    image = gym.spaces.Box(0, 255, (*config.image_size, 3), np.uint8)
    return gym.spaces.Dict({"state": state, IMAGE_KEY: image}), action
