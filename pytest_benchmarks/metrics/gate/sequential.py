"""The sequential gate: a task's paired episodes judged as they finish, so a task stops as soon
as its answer is clear, with the fixed plan's power kept.

Episode *i* of the new run is paired with the snapshot's episode *i* (same seed and initial
state); ``D_i = baseline_i - new_i``. The session's ``alpha`` is split in two (``SHARE``):

- **REGRESSED early**: the drop e-value (``evalues.regression_e``) reaching
  ``m / (SHARE * alpha)``, Bonferroni over the ``m`` tasks of the family, stops a task at once;
- **the fixed test at the end**: a task still undecided at its last planned episode gets the
  fixed paired test (McNemar) at the rest of alpha, ``(1 - SHARE) * alpha``, with Holm over the
  family fixed before the run (``family.tarone_mask`` at that level), every task that stopped
  early counted with p = 1. Holm is monotone in the p-values, so counting a stopped task as
  p = 1 can only reject less than Holm on the whole plan's p-values would: the two parts cost
  at most ``SHARE * alpha`` and ``(1 - SHARE) * alpha``, and the session's false alarms stay
  within alpha.
- **HELD** is futility: the hold e-process (``evalues.HoldProcess``) against "the drop is at
  least ``delta``" reaching ``1 / beta``. It costs no alpha (stopping a task early can only
  reject less), only power: a task that dropped by ``delta`` or more is called HELD with
  probability at most ``beta`` (0.02). ``delta`` is the plan's own smallest drop of interest
  (``smallest_drop``): the drop its final fixed test catches with 80% power when the new run
  repeats the baseline's episodes, about 20 points at 50 episodes and 50 at 20.

The figures that chose these defaults are ``pytest-benchmarks plan`` (docs/statistics.md).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

from pytest_benchmarks.core.results import EpisodeRecord, TaskResult
from pytest_benchmarks.metrics.gate.evalues import HoldProcess, regression_e
from pytest_benchmarks.metrics.stats import episode_key, moved_start

#: The share of alpha spent on stopping REGRESSED early; the rest is the final fixed test's.
SHARE = 0.05
#: The chance of calling HELD a task that dropped by ``DELTA`` or more.
BETA = 0.02
#: The drop HELD rules out where no plan says otherwise (``smallest_drop`` at 50 episodes).
DELTA = 0.2
#: The power at which the plan's smallest drop of interest is caught (``smallest_drop``).
POWER = 0.8
#: The largest drop HELD is called against (the hold e-process needs delta < 1).
MAX_DELTA = 0.95

REGRESSED, HELD, UNDECIDED = "REGRESSED", "HELD", "ran its plan"
#: ``SequentialTest.state`` codes, by name.
STATES = ("", REGRESSED, HELD)


def early_threshold(alpha: float, family: int, share: float = SHARE) -> float:
    """The drop e-value that stops a task REGRESSED: ``family / (share * alpha)``."""
    return max(1, family) / (share * alpha)


def final_alpha(alpha: float, share: float = SHARE) -> float:
    """The level of the final fixed tests (Holm over the family): what the early part left."""
    return (1.0 - share) * alpha


def task_drop(
    baseline: Iterable[EpisodeRecord], order: Sequence[int], alpha: float, family: int
) -> float:
    """The drop a task's HELD is called against: ``smallest_drop`` for the baseline's
    successes among the plan's episodes, at Holm's first step of the final tests."""
    planned = set(order)
    wins = sum(e.success for e in baseline if e.index in planned)
    return smallest_drop(wins, len(planned), final_alpha(alpha) / max(1, family))


@lru_cache(maxsize=4096)
def smallest_drop(successes: int, planned: int, level: float, power: float = POWER) -> float:
    """The smallest drop (in points of rate, to 0.01) that the fixed paired test at ``level``
    catches with ``power`` when the new run repeats the plan's episodes, ``successes`` of the
    ``planned`` successes in the baseline, each lost with probability drop / rate: the plan's
    smallest drop of interest, which HELD is called against. ``MAX_DELTA`` where no drop is
    caught that often."""
    from scipy.stats import binom

    from pytest_benchmarks.metrics.stats import mcnemar_lower

    if successes <= 0 or planned <= 0:
        return MAX_DELTA
    needed = next((k for k in range(1, successes + 1) if mcnemar_lower(k, 0) < level), None)
    if needed is None:
        return MAX_DELTA
    rate = successes / planned
    for points in range(1, int(rate * 100) + 1):
        if binom.sf(needed - 1, successes, min(1.0, points / 100 / rate)) >= power:
            return min(MAX_DELTA, points / 100)
    return MAX_DELTA


def plan_drops(successes: ArrayLike, planned: int, level: ArrayLike) -> np.ndarray:
    """``smallest_drop`` elementwise (each distinct pair computed once)."""
    k, at = np.broadcast_arrays(np.asarray(successes, dtype=int), np.asarray(level, dtype=float))
    pairs = {(int(a), float(b)) for a, b in zip(k.ravel(), at.ravel(), strict=True)}
    table = {pair: smallest_drop(pair[0], planned, pair[1]) for pair in pairs}
    flat = [table[int(a), float(b)] for a, b in zip(k.ravel(), at.ravel(), strict=True)]
    return np.asarray(flat, dtype=float).reshape(k.shape)


class SequentialTest:
    """Both e-processes of one or many tasks (one per element), fed pairs in index order:
    each pair costs one update, however often a task is asked; a decided task takes no more."""

    def __init__(
        self,
        threshold: ArrayLike,
        size: int = 1,
        beta: float = BETA,
        delta: ArrayLike = DELTA,
        can_fail: ArrayLike = True,
    ) -> None:
        self.threshold = np.broadcast_to(np.asarray(threshold, dtype=float), (size,))
        self.delta = np.broadcast_to(np.asarray(delta, dtype=float), (size,))
        self.can_fail = np.broadcast_to(np.asarray(can_fail, dtype=bool), (size,))
        self.beta = beta
        self.hold = HoldProcess(size, self.delta)
        self.n = np.zeros(size, dtype=int)
        self.lost = np.zeros(size, dtype=int)
        self.gained = np.zeros(size, dtype=int)
        self.e_drop: np.ndarray = np.ones(size)
        #: 0 while running, else the index of its state in ``STATES``.
        self.state: np.ndarray = np.zeros(size, dtype=np.int8)

    def add(self, diff: ArrayLike) -> np.ndarray:
        """One more pair each (``diff`` = baseline - new) for the undecided elements; the
        states after it: REGRESSED when the drop e-value reaches ``threshold`` (only where
        ``can_fail``), HELD when the hold e-value reaches ``1 / beta``."""
        d = np.asarray(diff)
        running = self.state == 0
        self.n += running
        self.lost += running & (d == 1)
        self.gained += running & (d == -1)
        self.e_drop = np.where(running, regression_e(self.lost, self.gained), self.e_drop)
        hold = self.hold.update(d, running)
        regressed = running & self.can_fail & (self.e_drop >= self.threshold)
        held = running & ~regressed & (hold >= 1.0 / self.beta)
        self.state = np.where(regressed, 1, np.where(held, 2, self.state)).astype(np.int8)
        return self.state

    def decision(self, planned: int, i: int = 0) -> Decision:
        """Where element ``i`` stands: decided, UNDECIDED once ``planned`` pairs ran, "" before."""
        state = STATES[self.state[i]] or (UNDECIDED if self.n[i] >= planned else "")
        return Decision(
            state, int(self.n[i]), int(self.lost[i]), int(self.gained[i]),
            float(self.e_drop[i]), float(self.hold.value[i]), 1.0 / self.beta,
            float(self.delta[i]),
        )  # fmt: skip


@dataclass(frozen=True)
class Decision:
    """Where a task's sequential gate stands after ``episodes`` pairs."""

    state: str  # REGRESSED, HELD, or "" while it runs, UNDECIDED at the plan's end
    episodes: int
    lost: int
    gained: int
    regression_e: float
    hold_e: float
    hold_at: float = 1.0 / BETA
    #: The drop HELD rules out.
    delta: float = DELTA

    def line(self) -> str:
        """``HELD after 20 episodes (0 lost, 0 gained; drop e 1, hold e 57.9 >= 50: no
        20-point drop)``."""
        counts = f"{self.lost} lost, {self.gained} gained"
        if self.state == UNDECIDED:
            return f"{UNDECIDED} ({self.episodes} episodes, {counts})"
        held = f" >= {self.hold_at:.3g}: no {self.delta * 100:.0f}-point drop"
        why = {REGRESSED: "", HELD: held}.get(self.state, "")
        return (
            f"{self.state or 'running'} after {self.episodes} episodes ({counts}; drop e "
            f"{self.regression_e:.3g}, hold e {self.hold_e:.3g}{why})"
        )


def decide(
    diffs: Sequence[int],
    threshold: float,
    planned: int,
    beta: float = BETA,
    delta: float = DELTA,
    can_fail: bool = True,
) -> Decision:
    """Walk the pairs in index order (``diffs``: baseline - new per episode) and stop at the
    first that decides; UNDECIDED once ``planned`` pairs ran without a decision, "" while
    fewer did."""
    test = SequentialTest(threshold, 1, beta, delta, can_fail)
    for diff in diffs:
        if test.add([diff])[0]:
            break
    return test.decision(planned)


def _diff(baseline: EpisodeRecord | None, new: EpisodeRecord | None) -> int | None:
    """``baseline - new`` success for one index, or None where it cannot be read yet: not
    finished, or not paired (another seed or initial state than the baseline's)."""
    if baseline is None or new is None or episode_key(baseline) != episode_key(new):
        return None
    return int(baseline.success) - int(new.success)


def paired_diffs(
    baseline: Iterable[EpisodeRecord], new: Iterable[EpisodeRecord], order: Sequence[int]
) -> list[int]:
    """``baseline - new`` for the episodes of ``order`` (the plan's indices, in order) up to the
    first that has not finished or does not pair with the baseline's (same index, seed and
    initial state): the prefix a decision may read, whatever order episodes finished in."""
    base = {e.index: e for e in baseline}
    ran = {e.index: e for e in new}
    diffs = []
    for index in order:
        diff = _diff(base.get(index), ran.get(index))
        if diff is None:
            break
        diffs.append(diff)
    return diffs


class SequentialStop:
    """A task's stopping rule in a run: asked after episodes end, it reads the pairs that
    became readable since it was last asked (the index-order prefix grows) and says why the
    task is decided (``Decision.line``), or None while it is not."""

    def __init__(
        self,
        baseline: Iterable[EpisodeRecord],
        order: Sequence[int],
        threshold: float,
        can_fail: bool,
        kept: Iterable[EpisodeRecord] = (),
        delta: float = DELTA,
        moved_ok: bool = False,
    ) -> None:
        self.base = {e.index: e for e in baseline}
        #: Whether episodes that started elsewhere are explained (the environment changed under
        #: the snapshot): then the task runs its whole plan and is judged unpaired.
        self.moved_ok = moved_ok
        self.unpaired = False
        #: The plan's episode indices in order; the episodes a resumed file kept, and those run.
        self.order = tuple(order)
        self.ran = {e.index: e for e in kept}
        self.test = SequentialTest(threshold, delta=delta, can_fail=can_fail)
        self.read = 0  # pairs of ``order`` fed to the test
        self.seen = 0  # episodes of the result taken

    def carried(self, episodes: Iterable[EpisodeRecord]) -> SequentialStop:
        """This rule for a task carried on (a node lost mid-task) from ``episodes``: a copy that
        counts them as kept, as a resumed file's."""
        again = copy.deepcopy(self)
        again.ran.update({e.index: e for e in episodes})
        return again

    def __call__(self, result: TaskResult) -> str | None:
        fresh = result.episodes[self.seen :]
        for episode in fresh:
            self.ran[episode.index] = episode
        self.seen = len(result.episodes)
        moved = moved_start(self.base.values(), fresh)
        if moved is not None and not self.moved_ok:  # refused: no further episode can help it
            return f"UNPAIRED at episode {moved[0]}: another initial state than the snapshot's"
        self.unpaired = self.unpaired or moved is not None
        if self.unpaired:  # no pair to read: the whole plan, judged unpaired at its end
            return None
        while not self.test.state[0] and self.read < len(self.order):
            index = self.order[self.read]
            diff = _diff(self.base.get(index), self.ran.get(index))
            if diff is None:
                break
            self.test.add([diff])
            self.read += 1
        if not self.test.state[0]:
            return None
        return self.test.decision(len(self.order)).line()
