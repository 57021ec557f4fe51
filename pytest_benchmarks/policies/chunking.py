"""Action chunks: a policy that predicts several steps at once is asked again only when a
slot's queue runs dry, and a slot's queue is dropped when its episode ends."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


class ChunkQueues:
    """One queue of pending actions per slot."""

    def __init__(self, num_envs: int) -> None:
        self.queues: list[deque[np.ndarray]] = [deque() for _ in range(num_envs)]

    def reset(self, slots: Sequence[int]) -> None:
        """The episodes in ``slots`` ended: their leftover actions must not leak into new ones."""
        for slot in slots:
            self.queues[slot].clear()

    def next(
        self, batch: dict[str, Any], predict: Callable[[dict[str, Any]], np.ndarray]
    ) -> np.ndarray:
        """This step's action per slot; ``predict`` (batch -> (num_envs, chunk, action)) runs when
        any queue is empty and refills only the empty ones."""
        if any(not q for q in self.queues):
            chunks = np.asarray(predict(batch))
            if chunks.ndim != 3 or chunks.shape[0] != len(self.queues) or chunks.shape[1] < 1:
                raise ValueError(
                    f"an action chunk must have shape (num_envs, chunk >= 1, action), got "
                    f"{list(chunks.shape)}"
                )
            for q, chunk in zip(self.queues, chunks, strict=True):
                if not q:
                    q.extend(chunk)
        return np.stack([q.popleft() for q in self.queues])
