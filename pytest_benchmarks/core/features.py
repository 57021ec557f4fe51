"""Observation features: what an env provides and a policy wants, and the diff between them.

The env side declares its processed features; a learned policy declares the features it was
trained on. They are compared once, before any episode runs, and every observation is checked
against the env's declaration by the processors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

IMAGE_PREFIX = "observation.images."


@dataclass(frozen=True)
class Feature:
    """Shape (without the batch dimension) and dtype of one processed observation feature."""

    shape: tuple[int, ...]
    dtype: str


class FeatureMismatch(ValueError):
    """Features that disagree: the policy's and the env's, or an observation and its declaration."""


def check_features(
    policy_name: str,
    task: str,
    wanted: Mapping[str, Sequence[int]],
    provided: Mapping[str, Feature],
    pad_cameras: bool = True,
) -> list[str]:
    """Raise FeatureMismatch with a readable diff; return the cameras to pad with blank images.

    A camera the policy expects and the env lacks is padded (LeRobot's empty-camera padding)
    when the env has at least one camera of its own, so a policy trained with more cameras still
    runs; a missing state or a shape that differs is an error.
    """
    lines: list[str] = []
    pad: list[str] = []
    env_cameras = [k for k in provided if k.startswith(IMAGE_PREFIX)]
    for name, shape in wanted.items():
        shape = tuple(shape)
        have = provided.get(name)
        if have is None:
            if name.startswith(IMAGE_PREFIX) and pad_cameras and env_cameras:
                pad.append(name)
                continue
            lines.append(f"  - {name} {list(shape)}: the env does not provide it")
        elif tuple(have.shape) != shape:
            lines.append(
                f"  ~ {name}: the policy wants {list(shape)}, the env gives {list(have.shape)}"
            )
    if lines:
        offered = ", ".join(f"{k} {list(f.shape)}" for k, f in provided.items())
        raise FeatureMismatch(
            f"{policy_name} does not fit {task}:\n"
            + "\n".join(lines)
            + f"\n  env features: {offered}"
        )
    return pad


def action_mismatch(shape: tuple[int, ...], space: Any, task: str) -> str | None:
    """Why a policy whose actions have ``shape`` cannot act in ``task``'s action ``space``
    (a policy of another robot, which would otherwise fail at its first action in numpy's
    words), or None where they fit or the space has no shape."""
    ours = getattr(space, "shape", None)
    if ours is None or tuple(ours) == tuple(shape):
        return None
    return (
        f"its actions have {_size(tuple(shape))} (config.json's output_features.action) but "
        f"{task} takes {_size(tuple(ours))}; a checkpoint trained for another robot or "
        "benchmark?"
    )


def _size(shape: tuple[int, ...]) -> str:
    """``6 values``, or ``shape [2, 3]`` for more than one axis."""
    return f"{shape[0]} values" if len(shape) == 1 else f"shape {list(shape)}"
