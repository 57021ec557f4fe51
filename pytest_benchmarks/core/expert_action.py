"""Scripted experts that need the simulator: the env computes the expert's next action from
privileged state (``EnvConfig.privileged``) and puts it in the observation under ``EXPERT_KEY``;
the benchmark's processors pass it on as the ``EXPERT_FEATURE`` feature, and ``ExpertActionPolicy``
acts with it. The expert then runs in the process that steps the env, whatever the policy's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

#: The raw observation's key, and the policy batch's feature, of the expert's action.
EXPERT_KEY = "expert_action"
EXPERT_FEATURE = "expert.action"


class ExpertActionPolicy:
    """The scripted expert, as a policy: it takes the action the env's expert computed."""

    def __init__(self, expert_id: str) -> None:
        self._id = expert_id

    def reset(self, slots: Sequence[int], seeds: Sequence[int]) -> None:
        pass  # the env's expert starts over at each reset

    def act(self, batch: dict[str, Any]) -> np.ndarray:
        return np.asarray(batch[EXPERT_FEATURE], dtype=np.float64)

    def identity(self) -> dict[str, str | None]:
        return {"source": "scripted", "id": self._id, "revision": None}
