"""Meta-World's MT1 goals, drawn only as far as the episodes reach.

``metaworld.MT1(task, seed)`` builds an env and resets it 50 times to draw 50 goals (about 1.2 s
per task here: more than ten state-only episodes of most tasks). Each goal comes from the
resets before it and the seeded global RNG alone, so the same resets, stopped after goal k,
give MT1's first k+1 goals exactly; ``MT1Goals`` draws them the way ``metaworld._make_tasks``
does, when an episode first asks, with its own RNG state (the caller's global RNG untouched).
metaworld is pinned; a test compares the goals with MT1's, byte for byte.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: MT1's number of goal variations per task.
N_GOALS = 50


class MT1Goals:
    """``metaworld.MT1(task, seed=seed).train_tasks``, each drawn when first indexed."""

    def __init__(self, task: str, seed: int) -> None:
        from metaworld import env_dict

        self._task = task
        self._cls = env_dict.ALL_V3_ENVIRONMENTS[task]
        self._kwargs = dict(env_dict.ML1_ARGS_KWARGS[task]["kwargs"])
        del self._kwargs["task_id"]
        caller = np.random.get_state()
        np.random.seed(seed)
        self._rng: Any = np.random.get_state()
        np.random.set_state(caller)
        self._env: Any = None
        self._tasks: list[Any] = []

    def __len__(self) -> int:
        return N_GOALS

    def __getitem__(self, index: int) -> Any:
        if not 0 <= index < N_GOALS:
            raise IndexError(f"goal {index} of {self._task}: MT1 has goals 0-{N_GOALS - 1}")
        while len(self._tasks) <= index:
            self._tasks.append(self._draw())
        if len(self._tasks) == N_GOALS:
            self.close()
        return self._tasks[index]

    def _draw(self) -> Any:
        from metaworld import _MT_OVERRIDE, _encode_task

        if self._env is None:  # as _make_tasks sets up its env
            self._env = self._cls()
            self._env._freeze_rand_vec = False
            self._env._set_task_called = True
            self._env._set_task_inner(**self._kwargs)
        caller = np.random.get_state()
        np.random.set_state(self._rng)
        try:
            self._env.reset()
            rand_vec = self._env._last_rand_vec
        finally:
            self._rng = np.random.get_state()
            np.random.set_state(caller)
        data = {**self._kwargs, "rand_vec": rand_vec, "env_cls": self._cls, **_MT_OVERRIDE}
        return _encode_task(self._task, data)

    def close(self) -> None:
        """Close the env that draws the goals (drawn goals stay)."""
        if self._env is not None:
            self._env.close()
            self._env = None
