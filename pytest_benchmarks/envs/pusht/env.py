"""PushT as a gymnasium env for this harness: gym-pusht's own env, its observations kept.

``state`` asks gym-pusht for ``environment_state_agent_pos`` (the T's 8 keypoints and the
agent's position), the others for ``pixels_agent_pos`` at the configured image size. The start
comes from the episode's seed through gym-pusht's own RNG, so episode i with seed s is
lerobot-eval's episode with seed s.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from pytest_benchmarks.core.expert_action import EXPERT_KEY
from pytest_benchmarks.core.tasks import EnvConfig

KEYPOINTS_DIM = 16
BOARD = 512.0


def spaces(config: EnvConfig) -> tuple[gym.spaces.Dict, gym.spaces.Box]:
    """Declared from the config alone (gym-pusht's own spaces), so no simulator is built."""
    entries: dict[str, gym.Space[Any]] = {"agent_pos": gym.spaces.Box(0, BOARD, (2,), np.float64)}
    if config.obs == "state":
        entries["environment_state"] = gym.spaces.Box(0, BOARD, (KEYPOINTS_DIM,), np.float64)
    else:
        entries["pixels"] = gym.spaces.Box(0, 255, (*config.image_size, 3), np.uint8)
    if config.privileged:
        entries[EXPERT_KEY] = gym.spaces.Box(0, BOARD, (2,), np.float64)
    return gym.spaces.Dict(entries), gym.spaces.Box(0, BOARD, (2,), np.float32)


class PushTTaskEnv(gym.Env[dict[str, Any], np.ndarray]):
    """gym-pusht's PushT, with ``success`` in its step info and the expert when asked."""

    def __init__(self, config: EnvConfig) -> None:
        from gym_pusht.envs.pusht import PushTEnv

        height, width = config.image_size
        obs_type = "environment_state_agent_pos" if config.obs == "state" else "pixels_agent_pos"
        self._env = PushTEnv(
            obs_type=obs_type, render_mode="rgb_array", observation_width=width,
            observation_height=height, visualization_width=width, visualization_height=height,
        )  # fmt: skip
        self._expert: Any = None
        if config.privileged:
            from pytest_benchmarks.envs.pusht.expert import PushController

            self._expert = PushController()
        self.observation_space, self.action_space = spaces(config)

    def _observe(self, raw: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        obs = dict(raw)
        if self._expert is not None:
            env = self._env
            pose = np.array([*env.block.position, env.block.angle])
            obs[EXPERT_KEY] = self._expert.act(np.array(env.agent.position), pose)
        return obs

    def render(self) -> np.ndarray:
        """gym-pusht's view at the configured size, with the last action's marker (videos)."""
        return self._env.render()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        raw, _ = self._env.reset(seed=seed)
        if self._expert is not None:
            self._expert.reset()
        return self._observe(raw), {}

    def step(self, action: np.ndarray) -> tuple[dict[str, np.ndarray], float, bool, bool,
                                                  dict[str, Any]]:  # fmt: skip
        raw, reward, terminated, truncated, info = self._env.step(action)
        success = {"success": bool(info["is_success"]), "coverage": float(info["coverage"])}
        return self._observe(raw), float(reward), bool(terminated), bool(truncated), success

    def close(self) -> None:
        self._env.close()
