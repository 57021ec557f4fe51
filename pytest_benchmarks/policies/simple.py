"""Policies that need no model: uniform random actions and zero actions, for pipeline checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np


class RandomPolicy:
    """Uniform samples from the action space, one RNG per slot seeded by the episode's seed."""

    def __init__(self, action_space: gym.spaces.Box, num_envs: int) -> None:
        self.space = action_space
        self.rngs = [np.random.default_rng(0) for _ in range(num_envs)]

    def reset(self, slots: Sequence[int], seeds: Sequence[int]) -> None:
        for slot, seed in zip(slots, seeds, strict=True):
            self.rngs[slot] = np.random.default_rng(seed)

    def act(self, batch: dict[str, Any]) -> np.ndarray:
        low, high = self.space.low, self.space.high
        rows = [rng.uniform(low, high).astype(self.space.dtype) for rng in self.rngs]
        return np.stack(rows)

    def identity(self) -> dict[str, str | None]:
        return {"source": "random", "id": "uniform", "revision": None}


class NoopPolicy:
    """Zero actions (clipped into the action space): the robot holds still."""

    def __init__(self, action_space: gym.spaces.Box, num_envs: int) -> None:
        zero = np.clip(np.zeros(action_space.shape), action_space.low, action_space.high)
        self.actions = np.broadcast_to(zero.astype(action_space.dtype), (num_envs, *zero.shape))

    def reset(self, slots: Sequence[int], seeds: Sequence[int]) -> None:
        pass

    def act(self, batch: dict[str, Any]) -> np.ndarray:
        return self.actions.copy()

    def identity(self) -> dict[str, str | None]:
        return {"source": "noop", "id": "zeros", "revision": None}
