"""LeRobot policies (``lerobot:REPO_ID_OR_DIR``), when LeRobot is installed.

LeRobot's ``PreTrainedPolicy`` keeps one action queue for the whole batch and resets it as a
whole, as LeRobot's own evaluation does (all envs start together). The harness refills slots
one by one, so this adapter resets the policy whenever any slot starts an episode; with
``--benchmark-batch-size=1`` that is exactly LeRobot's behaviour.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


class LeRobotPolicy:
    def __init__(self, policy: Any, identity: dict[str, str | None], device: str) -> None:
        self.policy, self._identity, self.device = policy, identity, device

    @classmethod
    def load(cls, source: str, num_envs: int, device: str) -> LeRobotPolicy:
        from lerobot.configs.policies import PreTrainedConfig
        from lerobot.policies.factory import get_policy_class

        config = PreTrainedConfig.from_pretrained(source)
        policy = get_policy_class(config.type).from_pretrained(source).to(device).eval()
        identity = {"source": "lerobot", "id": source, "revision": None}
        return cls(policy, identity, device)

    def reset(self, slots: Sequence[int], seeds: Sequence[int]) -> None:
        if slots:
            self.policy.reset()

    def act(self, batch: dict[str, Any]) -> np.ndarray:
        import torch

        tensors: dict[str, Any] = {
            k: torch.as_tensor(v, device=self.device) for k, v in batch.items()
            if isinstance(v, np.ndarray)
        }  # fmt: skip
        tensors["task"] = list(batch["task"])
        with torch.inference_mode():
            actions = self.policy.select_action(tensors)
        return actions.to("cpu", torch.float32).numpy()

    def identity(self) -> dict[str, str | None]:
        return dict(self._identity)
