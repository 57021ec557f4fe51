"""Observation transforms between a benchmark's vector env and a policy's input batch.

Every policy sees the same processed batch: a mapping from feature names (``observation.state``,
later camera images) to batched arrays, plus ``task`` with one language description per slot.
The transforms live here, not in policies, so every policy gets identical inputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pytest_benchmarks.core.features import Feature, FeatureMismatch

Batch = dict[str, Any]


@dataclass
class EnvProcessors:
    """Turns a raw batched observation into the policy batch, then checks it against features.

    ``steps`` run in order, each taking and returning a batch; the first receives
    ``{"raw": observation}``.
    """

    features: dict[str, Feature]
    description: str
    steps: list[Callable[[Batch], Batch]] = field(default_factory=list)
    _expected: tuple[int, list[tuple[str, tuple[int, ...], np.dtype[Any]]]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def __call__(self, observation: Any) -> Batch:
        batch: Batch = {"raw": observation}
        for step in self.steps:
            batch = step(batch)
        n = len(next(iter(batch.values()))) if batch else 0
        batch["task"] = [self.description] * n
        return batch

    def check(self, batch: Mapping[str, Any], num_envs: int, layout: bool = True) -> None:
        """Raise FeatureMismatch naming the first feature whose shape, dtype or values are off.

        ``layout=False`` checks the values only (no NaN or inf in float features): the episode
        loop checks shapes and dtypes on each episode's first step, as the env's buffers and
        the transforms on them stay the same within an episode.
        """
        if self._expected is None or self._expected[0] != num_envs:
            self._expected = (
                num_envs,
                [(n, (num_envs, *f.shape), np.dtype(f.dtype)) for n, f in self.features.items()],
            )
        finite: set[int] = set()  # ids of arrays already found finite (features may share one)
        for name, shape, dtype in self._expected[1]:
            value = batch.get(name)
            if value is None:
                raise FeatureMismatch(
                    f"observation lacks feature {name!r}; produced {sorted(batch)}"
                )
            if layout and (getattr(value, "shape", None) != shape or value.dtype != dtype):
                got = f"{getattr(value, 'dtype', type(value).__name__)}{list(np.shape(value))}"
                raise FeatureMismatch(f"feature {name!r} is {got}, declared {dtype}{list(shape)}")
            if dtype.kind == "f" and id(value) not in finite:
                if not math.isfinite(value.sum()):
                    raise FeatureMismatch(f"feature {name!r} holds NaN or inf")
                finite.add(id(value))


def camera_renames(camera_map: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """Camera name (``_image`` suffix dropped, so both spellings work) -> feature suffix."""
    return {source.removesuffix("_image"): target for source, target in camera_map}


def state_vector(
    name: str = "observation.state", dtype: str = "float32"
) -> Callable[[Batch], Batch]:
    """A step that exposes a flat state observation as one float feature."""

    def step(batch: Batch) -> Batch:
        return {name: np.asarray(batch["raw"], dtype=dtype)}

    return step
