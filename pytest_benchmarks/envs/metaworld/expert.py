"""Meta-World's own scripted experts (``metaworld.policies``), one per task, applied to a batch."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from importlib import metadata
from typing import Any

import numpy as np

from pytest_benchmarks.envs.metaworld.env import (
    ACTION_DIM,
)


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
            "revision": package_version("metaworld"),
        }


@cache
def package_version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None
