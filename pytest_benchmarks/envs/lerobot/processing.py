"""LeRobot's env processors (``EnvConfig.get_env_processors``) as a step of the harness's
observation transforms.

Where a type declares an env preprocessor (LIBERO's ``LiberoProcessorStep``: the robot state
flattened to 8 values, the images turned 180 degrees), the raw batched observation goes through
LeRobot's own ``preprocess_observation`` and that pipeline, as ``lerobot-eval``'s rollout does,
and comes back as numpy under the names the pipeline gave: images HWC uint8 again (exact for
steps that move or drop pixels, as LIBERO's does), everything else float32. Every policy then
sees what a LeRobot policy sees under ``lerobot-eval``. Types whose pipelines are empty (PushT,
ALOHA, Meta-World, plugins that declare none) keep the direct numpy path. An env postprocessor
would change the actions on their way to the env, which the harness does not do: a type that
declares one is refused in one line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from pytest_benchmarks.core.errors import one_line
from pytest_benchmarks.core.features import Feature
from pytest_benchmarks.core.processors import Batch
from pytest_benchmarks.envs.lerobot.env import LeRobotEnvError

#: Where LeRobot's observation names put a camera image.
IMAGE_NAMES = ("observation.image", "observation.images.")


def env_preprocessor(config: Any) -> Any | None:
    """The config's env preprocessor, or None where it has no steps."""
    try:
        pre, post = config.get_env_processors()
    except Exception as exc:
        what = f"lerobot:{config.type}: get_env_processors"
        raise LeRobotEnvError(f"{what}: {one_line(exc)}") from exc
    if getattr(post, "steps", None):
        names = ", ".join(type(step).__name__ for step in post.steps)
        raise LeRobotEnvError(
            f"lerobot:{config.type}: its env postprocessor ({names}) changes the actions, which "
            "this harness does not apply; write a native benchmark for it"
        )
    return pre if getattr(pre, "steps", None) else None


def pipeline_step(pre: Any) -> Callable[[Batch], Batch]:
    """The transform step: ``preprocess_observation``, then ``pre``, then back to numpy."""

    def step(batch: Batch) -> Batch:
        from lerobot.envs.utils import preprocess_observation

        return to_numpy(pre(preprocess_observation(batch["raw"])))

    return step


def to_numpy(observation: dict[str, Any]) -> Batch:
    """LeRobot's tensors as the harness's arrays: images (float CHW in [0, 1]) as HWC uint8."""
    import torch

    out: Batch = {}
    for name, value in observation.items():
        if not isinstance(value, torch.Tensor):
            continue  # the task's words, nested dicts a pipeline left: no policy input
        tensor = value.detach().cpu()
        if name.startswith(IMAGE_NAMES) and tensor.ndim == 4:
            tensor = (tensor * 255).round().clamp(0, 255).to(torch.uint8).permute(0, 2, 3, 1)
            out[name] = np.ascontiguousarray(tensor.numpy())
        else:
            out[name] = tensor.float().numpy()
    return out


def sampled_features(step: Callable[[Batch], Batch], space: gym.Space[Any]) -> dict[str, Feature]:
    """The features ``step`` gives: its output on one sample of the env's observation space."""
    sample = gym.vector.utils.batch_space(space, 1).sample()
    try:
        produced = step({"raw": sample})
    except Exception as exc:
        raise LeRobotEnvError(f"LeRobot's env preprocessor: {one_line(exc)}") from exc
    return {
        name: Feature(tuple(value.shape[1:]), str(value.dtype)) for name, value in produced.items()
    }
