"""Exact one-sided tests for "the new success rate is lower than its baseline's".

Success counts are binomial. When the baseline and the new run share episodes (same index, seed
and initial state), their outcomes are paired and McNemar's exact test looks only at the
episodes whose outcome changed; otherwise Fisher's exact test compares the two counts.

A test on few episodes may be unable to fail at all: its smallest reachable p-value (every
baseline success lost) can lie above the level; ``episodes_needed`` says how many it would
need. What the gate decides from these tests is ``metrics.gate``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

from pytest_benchmarks.core.results import EpisodeRecord

#: Episode counts searched for "needs >= N episodes"; beyond this the answer is "more than".
MAX_EPISODES = 10_000


@lru_cache(maxsize=4096)
def fisher_lower(base_successes: int, base_n: int, new_successes: int, new_n: int) -> float:
    """One-sided Fisher exact p-value for "the new success rate is lower than the baseline's"."""
    from scipy.stats import fisher_exact

    table = [
        [base_successes, base_n - base_successes],
        [new_successes, new_n - new_successes],
    ]
    return float(fisher_exact(table, alternative="greater").pvalue)


@lru_cache(maxsize=4096)
def mcnemar_lower(lost: int, gained: int) -> float:
    """One-sided exact McNemar p-value from the discordant pairs.

    ``lost``: episodes that succeeded in the baseline and fail now; ``gained``: the reverse.
    Under no change each discordant episode is lost or gained with probability 1/2.
    """
    return float(mcnemar_p(lost, gained))


def mcnemar_p(lost: ArrayLike, gained: ArrayLike) -> np.ndarray:
    """``mcnemar_lower`` elementwise over arrays: P(X >= lost), X ~ Binomial(lost + gained,
    1/2); 1 where no pair is discordant."""
    from scipy.stats import binom

    k, n = np.asarray(lost), np.asarray(lost) + np.asarray(gained)
    value: np.ndarray = np.where(n > 0, binom.sf(k - 1, np.maximum(n, 1), 0.5), 1.0)
    clipped: np.ndarray = np.minimum(value, 1.0)
    return clipped


def min_p_value(base_successes: int, base_n: int, new_n: int, paired: bool) -> float:
    """The smallest p-value the test can give with these counts: every baseline success lost.

    Paired, only the baseline's successes among the shared episodes can be lost
    (``base_successes`` is that count); unpaired, the new run succeeds nowhere.
    """
    if paired:
        return mcnemar_lower(base_successes, 0)
    if base_n == 0 or new_n == 0:
        return 1.0
    return fisher_lower(base_successes, base_n, 0, new_n)


def episodes_needed(rate: float, threshold: float, paired: bool) -> int | None:
    """Episodes per run (baseline and new alike) at which a drop from ``rate`` can fail at all.

    None when no count suffices below MAX_EPISODES (a 0% baseline cannot drop).
    """
    if rate <= 0:
        return None

    def can_fail(n: int) -> bool:
        k = int(rate * n + 1e-9)  # successes a baseline of n episodes at this rate surely has
        return min_p_value(k, n, n, paired) < threshold

    low, high = 1, 1
    while not can_fail(high):
        if high >= MAX_EPISODES:
            return None
        low, high = high + 1, min(2 * high, MAX_EPISODES)
    while low < high:  # can_fail grows with n apart from rounding: the smallest such n nearby
        mid = (low + high) // 2
        if can_fail(mid):
            high = mid
        else:
            low = mid + 1
    return high


def episode_key(e: EpisodeRecord) -> tuple[int, int, int]:
    """What pairs an episode with a baseline's: its index, seed and initial state."""
    return (e.index, e.seed, e.init_state)


def pairing(
    baseline: Sequence[EpisodeRecord], keys: Sequence[tuple[int, int, int]]
) -> tuple[bool, int]:
    """Whether episodes with these keys pair with the baseline, and the baseline successes
    among them (what a paired test can lose)."""
    by_key = {episode_key(e): e.success for e in baseline}
    paired = bool(keys) and all(k in by_key for k in keys)
    return paired, sum(by_key[k] for k in keys if k in by_key)


def reachable_p(baseline: Sequence[EpisodeRecord], keys: Sequence[tuple[int, int, int]]) -> float:
    """The smallest p-value a run of the episodes ``keys`` can reach against ``baseline``."""
    paired, shared_successes = pairing(baseline, keys)
    base_k = sum(e.success for e in baseline)
    return min_p_value(shared_successes if paired else base_k, len(baseline), len(keys), paired)


def moved_start(
    baseline: Iterable[EpisodeRecord], new: Iterable[EpisodeRecord]
) -> tuple[int, str, str] | None:
    """The first episode (by index) that the plan pairs with a baseline episode (same index,
    seed and initial state number) but whose initial simulator state's digest
    (``core.initial_state``) differs: (index, new digest, baseline digest), or None. Unproven,
    not refused, where either run kept no digest."""
    stored = {episode_key(e): e.initial_digest for e in baseline}
    for e in sorted(new, key=lambda e: e.index):
        theirs = stored.get(episode_key(e))
        if theirs and e.initial_digest and theirs != e.initial_digest:
            return e.index, e.initial_digest, theirs
    return None
