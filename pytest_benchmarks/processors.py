"""Observation transforms between a benchmark's vector env and a policy's input batch.

Every policy sees the same processed batch: a mapping from feature names (``observation.state``,
later camera images) to batched arrays, plus ``task`` with one language description per slot.
The transforms live here, not in policies, so every policy gets identical inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Batch = dict[str, Any]


@dataclass(frozen=True)
class Feature:
    """Shape (without the batch dimension) and dtype of one processed observation feature."""

    shape: tuple[int, ...]
    dtype: str

    def describe(self) -> str:
        return f"{self.dtype}{list(self.shape)}"


class FeatureMismatch(ValueError):
    """A processed observation that does not match the declared features."""


@dataclass
class EnvProcessors:
    """Turns a raw batched observation into the policy batch, then checks it against features.

    ``steps`` run in order, each taking and returning a batch; the first receives
    ``{"raw": observation}``.
    """

    features: dict[str, Feature]
    description: str
    steps: list[Callable[[Batch], Batch]] = field(default_factory=list)

    def __call__(self, observation: Any) -> Batch:
        batch: Batch = {"raw": observation}
        for step in self.steps:
            batch = step(batch)
        n = len(next(iter(batch.values()))) if batch else 0
        batch["task"] = [self.description] * n
        return batch

    def check(self, batch: Mapping[str, Any], num_envs: int) -> None:
        """Raise FeatureMismatch naming the first feature whose shape or dtype is off."""
        missing = sorted(set(self.features) - set(batch))
        if missing:
            raise FeatureMismatch(
                f"observation lacks features {missing}; produced {sorted(k for k in batch)}"
            )
        for name, feature in self.features.items():
            value = batch[name]
            shape = (num_envs, *feature.shape)
            if getattr(value, "shape", None) != shape or str(value.dtype) != feature.dtype:
                got = f"{getattr(value, 'dtype', type(value).__name__)}{list(np.shape(value))}"
                raise FeatureMismatch(
                    f"feature {name!r} is {got}, declared {feature.dtype}{list(shape)}"
                )
            if value.dtype.kind == "f" and not np.isfinite(value).all():
                raise FeatureMismatch(f"feature {name!r} holds NaN or inf")


def state_vector(
    name: str = "observation.state", dtype: str = "float32"
) -> Callable[[Batch], Batch]:
    """A step that exposes a flat state observation as one float feature."""

    def step(batch: Batch) -> Batch:
        return {name: np.asarray(batch["raw"], dtype=dtype)}

    return step
