"""Sequential, anytime-valid gating: a task's paired episodes judged as they finish, so a task
stops as soon as its answer is clear instead of running its whole plan.

Episode *i* of the new run is paired with the snapshot's episode *i* (same seed and initial
state); ``D_i = baseline_i - new_i`` is 1 (lost), -1 (gained) or 0. Two e-processes run over the
pairs in index order, and each is a nonnegative supermartingale under its null, so Ville's
inequality bounds the chance it *ever* crosses ``1/level``, however often it is looked at and
whenever the run stops (Ramdas, Grünwald, Vovk and Shafer, "Game-theoretic statistics and
safe anytime-valid inference", Statistical Science 2023):

- **REGRESSED** (null: no drop, ``P(lost) <= P(gained)``): a mixture sequential probability ratio
  test on the discordant pairs (Robbins 1970). Given a discordant pair, lost has probability
  ``theta``; under the null ``theta <= 1/2``. For each ``theta' > 1/2`` the likelihood ratio
  ``(2 theta')^L (2 (1 - theta'))^G`` against ``theta = 1/2`` has expectation at most 1 under every
  ``theta <= 1/2``; its mixture over ``theta'`` uniform on ``[1/2, 1]`` is the e-value, in closed
  form (``regression_e``). A task is REGRESSED when it reaches ``m / alpha`` (Bonferroni over the
  ``m`` tasks of the family that can reach it at all, as Tarone's rule chooses them for the
  fixed gate: decided from the baselines and plan alone).
- **HELD** (null: the drop is at least ``delta``, the gate's minimum detectable drop): a betting
  e-process on ``Y_i = delta - D_i`` (Waudby-Smith and Ramdas, "Estimating means of bounded
  random variables by betting", JRSS-B 2024), ``K_t = prod (1 + lambda_i Y_i)`` with each bet
  ``lambda_i`` chosen from the pairs before *i* (aGRAPA, their eq. 26), clipped so no factor
  can reach 0. Under the null ``E[Y] <= 0``, so ``K`` is a supermartingale; a task is HELD when
  ``K`` reaches ``1 / beta``: the chance of calling a task with a drop of ``delta`` or more
  HELD is at most ``beta`` (0.2: the fixed gate's 80% power, stated the same way).

A task that reaches neither by its last planned episode ends with the plan, undecided: its
verdict is not REGRESSED (the fixed test is not applied afterwards; that would be a second look
the level does not pay for).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from pytest_benchmarks.core.results import EpisodeRecord, TaskResult
from pytest_benchmarks.metrics.stats import episode_key, moved_start

#: The chance of calling HELD a task that dropped by the minimum detectable drop or more.
DEFAULT_BETA = 0.2
#: The drop HELD rules out: the committed gate's stated minimum detectable drop (30 points).
DEFAULT_DELTA = 0.3
#: The largest bet, as a fraction of the one at which a lost pair's factor reaches 0.
MAX_BET = 0.9

REGRESSED, HELD, UNDECIDED = "REGRESSED", "HELD", "reached the maximum"


def regression_e(lost: ArrayLike, gained: ArrayLike) -> np.ndarray:
    """The mixture e-value for a drop after ``lost`` and ``gained`` discordant pairs,
    ``2 * int_{1/2}^{1} (2 theta)^L (2 (1 - theta))^G dtheta``, elementwise over arrays."""
    from scipy.special import betainc, betaln  # here: the plugin loads without scipy's 0.3 s

    a, b = np.asarray(lost, dtype=float) + 1, np.asarray(gained, dtype=float) + 1
    upper = 1.0 - betainc(a, b, 0.5)  # the Beta(a, b) mass above 1/2
    with np.errstate(divide="ignore"):
        value: np.ndarray = np.exp((a + b - 1) * np.log(2.0) + betaln(a, b) + np.log(upper))
    return value


def max_regression_e(successes: int) -> float:
    """The largest e-value a task can reach: every one of the baseline's ``successes`` lost."""
    return float(regression_e(successes, 0))


def family(max_es: dict[str, float], alpha: float) -> tuple[set[str], int]:
    """The tasks that can be REGRESSED, by Tarone's rule for e-values: the smallest ``m`` with
    at most ``m`` tasks able to reach ``m / alpha``; those tasks, and ``m``."""
    for m in range(1, len(max_es) + 1):
        chosen = {task for task, e in max_es.items() if e >= m / alpha}
        if len(chosen) <= m:
            return chosen, m
    return set(), 1


class HoldProcess:
    """Betting e-processes against "the drop is at least ``delta``", one per element of the
    arrays fed to ``update`` (one task, or many simulated ones), fed pair by pair."""

    def __init__(self, size: int = 1, delta: float = DEFAULT_DELTA) -> None:
        self.delta = delta
        self.value: np.ndarray = np.ones(size)
        self.n = 0
        self.total: np.ndarray = np.zeros(size)
        self.squares: np.ndarray = np.zeros(size)

    def bet(self) -> np.ndarray:
        """aGRAPA: the growth-optimal bet for the pairs so far, ``mean / second moment`` of
        ``Y`` (shrunk toward "no drop" by one pseudo-pair), clipped to
        ``[0, MAX_BET / (1 - delta)]`` so a lost pair's factor stays above 0."""
        mean = (self.total + self.delta) / (self.n + 1)
        second = (self.squares + self.delta**2) / (self.n + 1)
        return np.clip(mean / second, 0.0, MAX_BET / (1.0 - self.delta))

    def update(self, diff: ArrayLike) -> np.ndarray:
        """One more pair each (``diff`` = baseline - new); the e-values after it."""
        y = self.delta - np.asarray(diff, dtype=float)
        self.value = self.value * (1.0 + self.bet() * y)
        self.n += 1
        self.total = self.total + y
        self.squares = self.squares + y * y
        return self.value


@dataclass(frozen=True)
class Decision:
    """Where a task's sequential gate stands after ``episodes`` pairs."""

    state: str  # REGRESSED, HELD, or "" while it runs, UNDECIDED at the plan's end
    episodes: int
    lost: int
    gained: int
    regression_e: float
    hold_e: float

    def line(self) -> str:
        """``HELD after 12 episodes (0 lost, 0 gained; e 1 vs 200, hold e 5.3 >= 5)``."""
        why = {REGRESSED: "drop e-value", HELD: "hold e-value"}.get(self.state, "")
        return (
            f"{self.state or 'running'} after {self.episodes} episodes ({self.lost} lost, "
            f"{self.gained} gained; drop e {self.regression_e:.3g}, hold e {self.hold_e:.3g})"
            + (f" by its {why}" if why else "")
        )


class SequentialTest:
    """Both e-processes of one task, fed its pairs in index order one at a time: each pair
    costs one update, however often the task is asked (the run asks after every episode)."""

    def __init__(
        self,
        threshold: float,
        beta: float = DEFAULT_BETA,
        delta: float = DEFAULT_DELTA,
        can_fail: bool = True,
    ) -> None:
        self.threshold, self.beta, self.can_fail = threshold, beta, can_fail
        self.hold = HoldProcess(1, delta)
        self.n = self.lost = self.gained = 0
        self.e_drop = self.e_hold = 1.0
        self.state = ""

    def add(self, diff: int) -> str:
        """One more pair (``diff`` = baseline - new); the state after it: REGRESSED when the
        drop e-value reaches ``threshold`` (never where ``can_fail`` is False), HELD when the
        hold e-value reaches ``1 / beta``, else "". A decided test takes no more pairs."""
        if self.state:
            return self.state
        self.n += 1
        self.lost += int(diff == 1)
        self.gained += int(diff == -1)
        self.e_drop = float(regression_e(self.lost, self.gained))
        self.e_hold = float(self.hold.update([diff])[0])
        if self.can_fail and self.e_drop >= self.threshold:
            self.state = REGRESSED
        elif self.e_hold >= 1.0 / self.beta:
            self.state = HELD
        return self.state

    def decision(self, planned: int) -> Decision:
        """Where it stands: decided, UNDECIDED once ``planned`` pairs ran, "" before."""
        state = self.state or (UNDECIDED if self.n >= planned else "")
        return Decision(state, self.n, self.lost, self.gained, self.e_drop, self.e_hold)


def decide(
    diffs: Sequence[int],
    threshold: float,
    planned: int,
    beta: float = DEFAULT_BETA,
    delta: float = DEFAULT_DELTA,
    can_fail: bool = True,
) -> Decision:
    """Walk the pairs in index order (``diffs``: baseline - new per episode) and stop at the
    first that decides (``SequentialTest.add``); UNDECIDED once ``planned`` pairs ran without
    a decision, "" while fewer did."""
    test = SequentialTest(threshold, beta, delta, can_fail)
    for diff in diffs:
        if test.add(diff):
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
    ) -> None:
        self.base = {e.index: e for e in baseline}
        #: The plan's episode indices in order; the episodes a resumed file kept, and those run.
        self.order = tuple(order)
        self.ran = {e.index: e for e in kept}
        self.test = SequentialTest(threshold, can_fail=can_fail)
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
        if moved is not None:  # the gate refuses the task: no further episode can help it
            return f"UNPAIRED at episode {moved[0]}: another initial state than the snapshot's"
        while not self.test.state and self.read < len(self.order):
            index = self.order[self.read]
            diff = _diff(self.base.get(index), self.ran.get(index))
            if diff is None:
                break
            self.test.add(diff)
            self.read += 1
        if not self.test.state:
            return None
        return self.test.decision(len(self.order)).line()
