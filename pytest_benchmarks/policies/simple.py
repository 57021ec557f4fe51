"""Policies that need no model: random and zero actions for pipeline checks, and a degraded
expert (its action replaced by a random one in a fixed fraction of steps) for gate checks."""

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
        low: Any = self.space.low
        high: Any = self.space.high
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


class NoisyPolicy:
    """Another policy whose action is replaced by a uniform random one in ``fraction`` of steps.

    Each slot draws from its own RNG, seeded by its episode's seed, so the degraded policy is as
    reproducible per episode as the one it wraps.
    """

    def __init__(
        self, inner: Any, action_space: gym.spaces.Box, num_envs: int, fraction: float
    ) -> None:
        self.inner = inner
        self.space = action_space
        self.fraction = fraction
        self.rngs = [np.random.default_rng(0) for _ in range(num_envs)]

    def reset(self, slots: Sequence[int], seeds: Sequence[int]) -> None:
        self.inner.reset(slots, seeds)
        for slot, seed in zip(slots, seeds, strict=True):
            self.rngs[slot] = np.random.default_rng([seed, 1])

    def act(self, batch: dict[str, Any]) -> np.ndarray:
        actions = np.array(self.inner.act(batch), copy=True)
        low: Any = self.space.low
        high: Any = self.space.high
        for slot, rng in enumerate(self.rngs):
            if rng.random() < self.fraction:
                actions[slot] = rng.uniform(low, high)
        return actions.astype(self.space.dtype, copy=False)

    def identity(self) -> dict[str, str | None]:
        inner = self.inner.identity()
        return {
            **inner,
            "source": f"{inner['source']}+noise",
            "id": f"{inner['id']}+noise:{self.fraction}",
        }
