"""One slot's observation in LeRobot's format: what ``lerobot-eval`` hands a policy, made
from the harness's batch through LeRobot's own ``preprocess_observation``, as a batch of one
(``policies.lerobot`` keeps a policy's state per slot; the policy server steps slots too)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from pytest_benchmarks.core.features import IMAGE_PREFIX

#: LeRobot's single-camera key (its Meta-World layout); several cameras are IMAGE_PREFIX + name.
SINGLE_IMAGE = "observation.image"
STATE = "observation.state"
ENV_STATE = "observation.environment_state"


def observation(
    batch: dict[str, Any], slot: int, pad: Sequence[tuple[str, tuple[int, ...]]] = ()
) -> dict[str, Any]:
    """One slot's observation in LeRobot's format, through ``preprocess_observation``, with
    zeros for the inputs in ``pad``."""
    from lerobot.envs.utils import preprocess_observation

    raw: dict[str, Any] = {}
    cameras = {
        k.removeprefix(IMAGE_PREFIX): v for k, v in batch.items() if k.startswith(IMAGE_PREFIX)
    }
    if cameras:
        raw["pixels"] = {k: v[slot : slot + 1] for k, v in cameras.items()}
    elif SINGLE_IMAGE in batch:
        raw["pixels"] = batch[SINGLE_IMAGE][slot : slot + 1]
    if STATE in batch:
        raw["agent_pos"] = batch[STATE][slot : slot + 1]
    if ENV_STATE in batch:
        raw["environment_state"] = batch[ENV_STATE][slot : slot + 1]
    if "robot_state" in batch:
        raw["robot_state"] = _slice_nested(batch["robot_state"], slot)
    result = preprocess_observation(raw)
    for name, shape in pad:
        result[name] = torch.zeros((1, *shape), dtype=torch.float32)
    result["task"] = [batch["task"][slot]]
    return result


def _slice_nested(value: Any, slot: int) -> Any:
    if isinstance(value, dict):
        return {k: _slice_nested(v, slot) for k, v in value.items()}
    return value[slot : slot + 1]
