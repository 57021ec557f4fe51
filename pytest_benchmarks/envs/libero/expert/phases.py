"""The phase machine every LIBERO step expert runs on: named phases in a fixed order, each with
a budget of steps, left when its own goal is reached or its budget is spent; the last phase
holds for the rest of the step.

An expert declares its ``PHASES`` and its ``BUDGET`` (steps a phase may take, in ``constants``)
and, each step, says whether the phase reached its goal; the counting, the budgets and the order
are kept here, once, for all of them.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import numpy as np


class PhaseMachine[P: Hashable]:
    """``phase``: the current phase (the last one once past it); ``count``: the steps it has
    taken."""

    PHASES: tuple[P, ...]
    #: Steps a phase may take before the next begins, whether or not it reached its goal; a
    #: phase not named has no budget.
    BUDGET: Mapping[P, int] = {}

    phase_index: int = 0
    count: int = 0

    def enter(self, phase: P | None = None, count: int = 0) -> None:
        """Begin at ``phase`` (the first by default), as if it had taken ``count`` steps."""
        self.phase_index = 0 if phase is None else self.PHASES.index(phase)
        self.count = count

    @property
    def phase(self) -> P:
        return self.PHASES[min(self.phase_index, len(self.PHASES) - 1)]

    def tick(self) -> None:
        """One more step in the current phase."""
        self.count += 1

    def spent(self) -> bool:
        """Whether the current phase has taken more steps than its budget."""
        budget = self.BUDGET.get(self.phase)
        return budget is not None and self.count > budget

    def advance(self, reached: bool | np.bool_) -> bool:
        """On to the next phase when this one ``reached`` its goal or spent its budget; whether
        it moved on."""
        done = bool(reached) or self.spent()
        if done:
            self.phase_index, self.count = self.phase_index + 1, 0
        return done

    def finishing(self, after: int) -> bool:
        """Whether the machine is in its last phase and has been for more than ``after`` steps."""
        return self.phase_index >= len(self.PHASES) - 1 and self.count > after
