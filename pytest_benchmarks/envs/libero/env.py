"""LIBERO as a gymnasium env for one task: its suite's initial states, settling, cameras
(culled, blank or none), the 8-D state, LeRobot's layout, and the spaces declared before any
simulator starts."""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from pytest_benchmarks.core.expert_action import EXPERT_KEY
from pytest_benchmarks.core.tasks import EnvConfig, TaskRef
from pytest_benchmarks.envs.libero.reset import (
    CompiledScene,
    PropertySamplers,
    compiled_from_construction,
)
from pytest_benchmarks.envs.libero.setup import libero_dir
from pytest_benchmarks.envs.mujoco import render as mujoco_render
from pytest_benchmarks.envs.mujoco import view_cull

if TYPE_CHECKING:
    from pytest_benchmarks.envs.libero.expert.plan import PlanExpert


CAMERAS = ("agentview_image", "robot0_eye_in_hand_image")
#: The camera episode videos show.
VIDEO_CAMERA = "agentview_image"
STATE_KEYS = {"robot0_eef_pos": 3, "robot0_eef_quat": 4, "robot0_gripper_qpos": 2}
ACTION_DIM = 7
#: LeRobot's LIBERO wrapper's camera names (its ``camera_name_mapping``).
LEROBOT_CAMERAS = {"agentview": "image", "robot0_eye_in_hand": "image2"}
#: Zero motion with the gripper open: what a robot at rest does while the scene settles.
NOOP = np.array([0.0] * 6 + [-1.0])
DEFAULT_SETTLE_STEPS = 10
N_INIT_STATES = 50


class LiberoTaskEnv(gym.Env[dict[str, Any], np.ndarray]):
    """One LIBERO task; ``reset(options={"init_state": k, "index": i})`` starts episode i from
    the suite's state k (``index`` pins the fixtures' placement: ``PropertySamplers``)."""

    def __init__(self, config: EnvConfig) -> None:
        from pytest_benchmarks.envs.libero.setup import prepare
        from pytest_benchmarks.envs.libero.substeps import LeanSubsteps

        prepare()
        from libero.libero import benchmark, get_libero_path
        from libero.libero.envs.env_wrapper import ControlEnv

        suite = benchmark.get_benchmark_dict()[config.task.suite]()
        task = suite.get_task(config.task.task_id)
        self._init_states = suite.get_task_init_states(config.task.task_id)
        bddl = os.path.join(get_libero_path("bddl_files"), task.problem_folder, task.bddl_file)
        pixels = config.obs in ("pixels", "lerobot")
        height, width = config.image_size
        size, mode = config.image_size, config.render
        processor = (lambda xml: mujoco_render.configure_xml(xml, size, mode)) if pixels else None
        # robosuite rebuilds the model from its MJCF on every (hard) reset: the processor sizes
        # the offscreen buffer and sets the render mode each time, and every reset reuses the
        # scene compiled when the env was made (``reset``).
        with compiled_from_construction(processor):
            self._env = ControlEnv(
                bddl_file_name=bddl,
                has_renderer=False,
                has_offscreen_renderer=pixels,
                use_camera_obs=pixels,
                camera_names=[c.removesuffix("_image") for c in CAMERAS],
                camera_heights=height,
                camera_widths=width,
            )
        self.scene: CompiledScene = self._env.env.compiled_scene
        LeanSubsteps.install(self._env.env)
        self._samplers = PropertySamplers(self._env.env)
        self._keys = list(STATE_KEYS) + (list(CAMERAS) if pixels else [])
        self._render = config.render if pixels else None
        self._unread = tuple(config.blank_cameras) if pixels else ()
        self._aspect = config.image_size[1] / config.image_size[0]  # width / height
        self._meshes_for: Callable[[], Any] = lambda: None  # the context set up for the mode
        self._last: dict[str, np.ndarray] = {}
        self._expert: PlanExpert | None = None
        if config.privileged:
            # The experts' module (and scipy's rotations, half a second) only where one acts.
            from pytest_benchmarks.envs.libero.expert.plan import PlanExpert, goal_of, unsupported

            goal = goal_of(bddl_path(config.task))
            problem = unsupported(goal)
            if problem:
                raise ValueError(f"{config.task.id}: {problem}")
            self._expert = PlanExpert(self._env.env, goal)
        self._settle = DEFAULT_SETTLE_STEPS if config.settle_steps is None else config.settle_steps
        self.observation_space, self.action_space = spaces(config)

    def _observe(self, raw: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        self._last = {key: raw[key] for key in self._keys}
        if self._expert is not None:
            self._last[EXPERT_KEY] = self._expert.act(raw["robot0_eef_pos"])
        return self._last

    def _blank_cameras(self, cameras: tuple[str, ...] = CAMERAS) -> dict[str, Any]:
        """Swap the camera observables' sensors for black frames; return the real ones."""
        observables = self._env.env._observables
        real = {camera: observables[camera]._sensor for camera in cameras}
        for camera, sensor in real.items():
            observables[camera]._sensor = blank_sensor(sensor, observables[camera]._data_shape)
        return real

    def _cull_cameras(self, cameras: tuple[str, ...]) -> None:
        """Wrap the camera observables' sensors so each frame hides the geoms outside that
        camera's view (``view_cull``: the same pixels without shadows and reflections)."""
        env = self._env.env
        for camera in cameras:
            observable = env._observables[camera]
            camera_id = env.sim.model.camera_name2id(camera.removesuffix("_image"))
            observable._sensor = culled_sensor(observable._sensor, env, camera_id, self._aspect)

    def _restore_cameras(self, real: dict[str, Any]) -> None:
        for camera, sensor in real.items():
            self._env.env._observables[camera]._sensor = sensor

    def render(self) -> np.ndarray:
        """The agentview camera, upright (for videos); needs pixel observations."""
        if VIDEO_CAMERA not in self._last:
            raise RuntimeError("LIBERO videos need --benchmark-obs=pixels")
        return np.ascontiguousarray(self._last[VIDEO_CAMERA][::-1, ::-1])

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        state = int((options or {}).get("init_state", 0))
        episode = (options or {}).get("index")
        if episode is not None:  # the harness's episodes: a scene that depends on no other
            self._samplers.pin(int(episode))
        if seed is not None:
            self._env.seed(seed)
        self._env.reset()
        if self._render is not None:  # the reset made a new scene: set it up before any frame
            context = self._env.env.sim._render_context_offscreen
            context.gl_ctx.make_current()
            mujoco_render.configure_scene(context.scn, self._render)
            if self._meshes_for() is not context:  # a new context (``reset`` keeps one)
                mujoco_render.configure_meshes(context.model._model, context.con, self._render)
                self._meshes_for = weakref.ref(context)
        # The reset made new camera observables: cameras no policy input reads render nothing
        # this episode; in fast mode the others leave out what they cannot see.
        self._blank_cameras(self._unread)
        if self._render == mujoco_render.FAST:
            self._cull_cameras(tuple(c for c in CAMERAS if c not in self._unread))
        # No frame before the last settle step's is seen: their cameras render nothing. robosuite
        # samples a camera at the first substep of each step, so the last step's own frame is
        # rendered as it always is.
        blank = self._settle > 0 and self._render is not None
        real = self._blank_cameras() if blank else {}
        raw = self._env.set_init_state(self._init_states[state % len(self._init_states)])
        for step in range(self._settle):
            if step == self._settle - 1:
                self._restore_cameras(real)
            raw, _, _, _ = self._env.step(NOOP)
        if self._expert is not None:
            self._expert.reset()
        return self._observe(raw), {}

    def step(
        self, action: np.ndarray
    ) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        if self._render is not None:
            # robosuite renders into whichever GL context is current: with several envs in one
            # process (--benchmark-sync) that is the last one made, so each step makes its own.
            self._env.env.sim._render_context_offscreen.gl_ctx.make_current()
        raw, reward, _, _ = self._env.step(action)
        success = bool(self._env.check_success())
        return self._observe(raw), float(reward), False, False, {"success": success}

    def close(self) -> None:
        self._env.close()
        self.scene.release()


def culled_sensor(sensor: Any, env: Any, camera: int, aspect: float) -> Any:
    """A robosuite camera sensor that renders with the geoms outside its view hidden (the env's
    sim as of each call: a reset makes a new one)."""

    def culled(cache: dict[str, Any]) -> np.ndarray:
        sim = env.sim
        shown = sim._render_context_offscreen.vopt.geomgroup
        with view_cull.hidden_outside(sim.model._model, sim.data._data, camera, aspect, shown):
            return sensor(cache)

    culled.__name__ = sensor.__name__
    culled.__modality__ = sensor.__modality__  # type: ignore[attr-defined]
    return culled


def blank_sensor(sensor: Any, shape: tuple[int, ...]) -> Any:
    """A robosuite sensor of the same name and modality that renders nothing."""

    def blank(_cache: dict[str, Any]) -> np.ndarray:
        return np.zeros(shape, np.uint8)

    blank.__name__ = sensor.__name__
    blank.__modality__ = sensor.__modality__  # type: ignore[attr-defined]
    return blank


def spaces(config: EnvConfig) -> tuple[gym.spaces.Dict, gym.spaces.Box]:
    """Declared per task from the config alone, so no simulator is built to learn them."""
    entries: dict[str, gym.Space[Any]] = {
        key: gym.spaces.Box(-np.inf, np.inf, (size,), np.float64)
        for key, size in STATE_KEYS.items()
    }
    if config.obs in ("pixels", "lerobot"):
        height, width = config.image_size
        for camera in CAMERAS:
            entries[camera] = gym.spaces.Box(0, 255, (height, width, 3), np.uint8)
    if config.privileged:
        entries[EXPERT_KEY] = gym.spaces.Box(-1.0, 1.0, (ACTION_DIM,), np.float64)
    action = gym.spaces.Box(-1.0, 1.0, (ACTION_DIM,), np.float64)
    return gym.spaces.Dict(entries), action


def quat_to_axis_angle(quat: np.ndarray) -> np.ndarray:
    """Batched (x, y, z, w) quaternions to axis-angle vectors, as robosuite's quat2axisangle."""
    w = np.clip(quat[..., 3], -1.0, 1.0)
    den = np.sqrt(1.0 - w * w)
    angle = 2.0 * np.arccos(w)
    safe = np.where(np.isclose(den, 0.0), 1.0, den)
    result = quat[..., :3] * (angle / safe)[..., None]
    return np.where(np.isclose(den, 0.0)[..., None], 0.0, result)


def quat_to_axis_angle_lerobot(quat: np.ndarray) -> np.ndarray:
    """Axis-angle as LeRobot's ``LiberoProcessorStep`` computes it: in float32, with torch's
    operations where torch is installed (LeRobot's layout is for LeRobot's policies), so that
    the state is bit for bit LeRobot's."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return axis_angle_float32_numpy(quat)
    return axis_angle_float32_torch(quat)


def axis_angle_float32_torch(quat: np.ndarray) -> np.ndarray:
    import torch

    q = torch.from_numpy(np.asarray(quat)).to(torch.float32)
    w = q[:, 3].clamp(-1.0, 1.0)
    den = torch.sqrt(torch.clamp(1.0 - w * w, min=0.0))
    result = torch.zeros((q.shape[0], 3))
    mask = den > 1e-10
    if mask.any():
        angle = 2.0 * torch.acos(w[mask])
        result[mask] = q[mask, :3] / den[mask].unsqueeze(1) * angle.unsqueeze(1)
    return result.numpy()


def axis_angle_float32_numpy(quat: np.ndarray) -> np.ndarray:
    """The same in numpy (equal to within float32 rounding), for installs without torch."""
    q = np.asarray(quat, dtype=np.float32)
    w = np.clip(q[:, 3], -1.0, 1.0)
    den = np.sqrt(np.clip(1.0 - w * w, 0.0, None))
    safe = np.where(den > 1e-10, den, np.float32(1.0))
    result = q[:, :3] / safe[:, None] * (np.float32(2.0) * np.arccos(w))[:, None]
    return np.where((den > 1e-10)[:, None], result, np.float32(0.0)).astype(np.float32)


def bddl_path(task: TaskRef) -> Path:
    """The task's BDDL problem file inside the installed hf-libero package."""
    return libero_dir() / "bddl_files" / task.suite / f"{task.task}.bddl"
