"""The Policy protocol: what the rollout needs from a policy.

A policy acts on a whole batch: the rollout calls ``act`` once per vector-env step with the
processed observations of every slot, and ``reset`` for the slots whose episodes start, with
those episodes' seeds so stochastic policies are reproducible per episode.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Policy(Protocol):
    """What the rollout needs from a policy."""

    def reset(self, slots: Sequence[int], seeds: Sequence[int]) -> None:
        """Forget per-episode state of ``slots``; new episodes with ``seeds`` start there."""

    def act(self, batch: dict[str, Any]) -> np.ndarray:
        """Actions for every slot, shape ``(num_envs, *action_shape)``."""

    def identity(self) -> dict[str, str | None]:
        """``source``, ``id`` and ``revision`` recorded in the metrics JSON."""
