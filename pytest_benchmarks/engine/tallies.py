"""Each slot's running episode and its tallies while the episode loop steps a vector env.

Kept as Python lists: a step's bookkeeping then costs a few list operations rather than a numpy
call per tally (each a microsecond at this size).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pytest_benchmarks.core.plan import EpisodeSpec
from pytest_benchmarks.core.results import EpisodeRecord


class Tallies:
    """What each of ``n`` slots runs (``running``, ``active``) and has gathered so far."""

    def __init__(self, n: int) -> None:
        self.running: list[EpisodeSpec | None] = [None] * n
        #: A slot runs an episode (``any`` on a list is cheaper than on an array, every step).
        self.active = [False] * n
        self.sum_reward = [0.0] * n
        self.max_reward = [-math.inf] * n
        self.steps = [0] * n
        self.succeeded = [False] * n
        self.started = [0.0] * n
        self.initial: list[str | None] = [None] * n
        self.sketch: list[tuple[float, ...] | None] = [None] * n

    def assign(self, slot: int, spec: EpisodeSpec | None) -> None:
        """The slot's next episode, or None: it is parked."""
        self.running[slot] = spec
        self.active[slot] = spec is not None

    def begin(
        self,
        slots: Sequence[int],
        now: float,
        digests: Sequence[str | None] | None = None,
        sketches: Sequence[Sequence[float] | None] | None = None,
    ) -> None:
        """Fresh tallies for the episodes that began in ``slots`` at ``now``, from the initial
        states of these digests and sketches (per slot of the env, ``core.initial_state``)."""
        for slot in slots:
            self.sum_reward[slot], self.max_reward[slot] = 0.0, -math.inf
            self.steps[slot], self.succeeded[slot] = 0, False
            self.started[slot] = now
            self.initial[slot] = None if digests is None else digests[slot]
            sketch = None if sketches is None else sketches[slot]
            self.sketch[slot] = None if sketch is None else tuple(float(x) for x in sketch)

    def add(self, rewards: list[float], wins: list[bool]) -> None:
        """One step of every slot. Parked slots report reward 0, no success and no end; their
        tallies are reset before they run another episode, so nothing here needs masking."""
        sum_reward, max_reward, steps, succeeded = (
            self.sum_reward, self.max_reward, self.steps, self.succeeded
        )  # fmt: skip
        for slot, reward in enumerate(rewards):
            sum_reward[slot] += reward
            if reward > max_reward[slot]:
                max_reward[slot] = reward
            steps[slot] += 1
            succeeded[slot] = succeeded[slot] or wins[slot]

    def live(self) -> list[int]:
        """The slots that run an episode."""
        return [slot for slot, on in enumerate(self.active) if on]

    def end(self, slot: int, now: float) -> EpisodeRecord:
        """The record of the slot's episode, which ended at ``now``; the slot goes idle."""
        spec = self.running[slot]
        assert spec is not None
        self.active[slot] = False
        return EpisodeRecord(
            index=spec.index,
            seed=spec.seed,
            init_state=spec.init_state,
            success=bool(self.succeeded[slot]),
            steps=int(self.steps[slot]),
            sum_reward=float(self.sum_reward[slot]),
            max_reward=float(self.max_reward[slot]),
            duration_s=now - self.started[slot],
            initial_digest=self.initial[slot],
            initial_sketch=self.sketch[slot],
        )

    def where(self, steps_ahead: int = 0) -> str:
        """The running episodes and their step numbers, for an error line."""
        return ", ".join(
            f"episode {spec.index} step {self.steps[slot] + steps_ahead}"
            for slot, spec in enumerate(self.running)
            if spec
        )

    def where_not_finite(self, rewards: list[float]) -> str:
        """The running episodes whose last step's reward is NaN or infinite, with it."""
        return ", ".join(
            f"{rewards[slot]} (episode {spec.index} step {self.steps[slot] + 1})"
            for slot, spec in enumerate(self.running)
            if spec and not math.isfinite(rewards[slot])
        )
