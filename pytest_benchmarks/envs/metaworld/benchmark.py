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

from collections.abc import Callable, Sequence
from functools import cache
from importlib import metadata
from typing import Any

import gymnasium as gym
import numpy as np

from pytest_benchmarks.core.benchmark import Benchmark
from pytest_benchmarks.core.features import Feature
from pytest_benchmarks.core.processors import Batch, EnvProcessors, camera_renames
from pytest_benchmarks.core.tasks import EnvConfig, TaskRef
from pytest_benchmarks.envs.metaworld.goals import N_GOALS, MT1Goals
from pytest_benchmarks.envs.metaworld.tasks import DESCRIPTIONS, GROUPS
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
        return self._observe(obs), {}

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


class ScriptedMetaWorldPolicy:
    """Meta-World's hand-written expert for one task, applied row by row to the batch."""

    def __init__(self, task: str) -> None:
        from metaworld.policies import ENV_POLICY_MAP

        expert: Any = ENV_POLICY_MAP[task]  # a concrete policy class, typed as the base
        self._expert = expert()
        self._name = type(self._expert).__name__

    def reset(self, slots: Sequence[int], seeds: Sequence[int]) -> None:
        pass  # the experts are stateless

    def act(self, batch: dict[str, Any]) -> np.ndarray:
        states = np.asarray(batch["observation.state"], dtype=np.float64)
        actions = np.empty((len(states), ACTION_DIM), dtype=np.float32)
        for row, state in enumerate(states):
            actions[row] = self._expert.get_action(state)
        # The experts' gains can overshoot; the env would clip to [-1, 1] anyway. (Rounding to
        # float32 first clips to the same values: -1 and 1 are exact.) Ufuncs, not np.clip,
        # whose dispatch costs more than the clipping at this size.
        np.minimum(actions, 1.0, out=actions)
        np.maximum(actions, -1.0, out=actions)
        return actions

    def identity(self) -> dict[str, str | None]:
        return {
            "source": "scripted",
            "id": f"metaworld.policies.{self._name}",
            "revision": _version("metaworld"),
        }


class MetaWorld(Benchmark):
    name = "metaworld"
    extra = "metaworld"
    requires = ("metaworld", "mujoco")
    observation_modes = ("state", "pixels", "lerobot")
    cameras = (CAMERA,)
    fps = 80  # frame_skip 5 x timestep 0.0025 s; LeRobot's MetaworldEnv says the same
    robot_type = "sawyer"
    packages = ("mujoco", "metaworld")

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
        return {"name": self.name, "version": _version("metaworld")}


@cache
def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None
