"""Is a new success rate significantly lower than its baseline? Exact one-sided tests.

Success counts are binomial. When the baseline and the new run share episodes (same index, seed
and initial state), their outcomes are paired and McNemar's exact test looks only at the
episodes whose outcome changed; otherwise Fisher's exact test compares the two counts. Both are
one-sided (alternative: the new rate is lower). A session compares several tasks, so each task
is judged at ``alpha / m`` (Bonferroni over the m tasks compared), which keeps the chance of any
false alarm in the session at or below ``alpha``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_benchmarks.core.results import EpisodeRecord, TaskResult, rate_text
from pytest_benchmarks.core.settings import GATE_MODES


def fisher_lower(base_successes: int, base_n: int, new_successes: int, new_n: int) -> float:
    """One-sided Fisher exact p-value for "the new success rate is lower than the baseline's"."""
    from scipy.stats import fisher_exact

    table = [
        [base_successes, base_n - base_successes],
        [new_successes, new_n - new_successes],
    ]
    return float(fisher_exact(table, alternative="greater").pvalue)


def mcnemar_lower(lost: int, gained: int) -> float:
    """One-sided exact McNemar p-value from the discordant pairs.

    ``lost``: episodes that succeeded in the baseline and fail now; ``gained``: the reverse.
    Under no change each discordant episode is lost or gained with probability 1/2.
    """
    if lost + gained == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(lost, lost + gained, 0.5, alternative="greater").pvalue)


@dataclass(frozen=True)
class Comparison:
    """The verdict on one task: counts, the test used, its p-value and the threshold."""

    task: str
    base_successes: int
    base_n: int
    new_successes: int
    new_n: int
    test: str
    p_value: float
    threshold: float
    regression: bool
    improvement: bool
    #: Paired episodes that went from success to failure, and the reverse.
    lost: int = 0
    gained: int = 0

    def line(self) -> str:
        """One line a person reads at a glance."""
        head = (
            f"{self.task}: {rate_text(self.base_successes, self.base_n)} → "
            f"{rate_text(self.new_successes, self.new_n)}"
        )
        if self.test == "exact":
            verdict = "regression" if self.regression else "no regression"
            return f"{head}, {self.lost} episodes lost, {self.gained} gained → {verdict}"
        sign = "<" if self.p_value < self.threshold else ">="
        verdict = "regression" if self.regression else "no significant drop"
        return f"{head}, {self.test} p={self.p_value:.2g} {sign} {self.threshold:.2g} → {verdict}"


def _key(e: EpisodeRecord) -> tuple[int, int, int]:
    return (e.index, e.seed, e.init_state)


def compare(
    task: str,
    baseline: Sequence[EpisodeRecord],
    new: Sequence[EpisodeRecord],
    alpha: float = 0.05,
    tasks_compared: int = 1,
    mode: str = "stat",
) -> Comparison:
    """Judge one task's new episodes against its baseline episodes.

    ``mode``: ``stat`` (significance test), ``exact`` (any shared episode that succeeded in the
    baseline and fails now is a regression; for deterministic runs, so every new episode must be
    one of the baseline's), ``off`` (never a regression).
    """
    if mode not in GATE_MODES:
        raise ValueError(f"unknown gate mode {mode!r}; valid: {', '.join(GATE_MODES)}")
    base_k = sum(e.success for e in baseline)
    new_k = sum(e.success for e in new)
    by_key = {_key(e): e.success for e in baseline}
    shared = [(by_key[_key(e)], e.success) for e in new if _key(e) in by_key]
    lost = sum(b and not n for b, n in shared)
    gained = sum(n and not b for b, n in shared)
    threshold = alpha / max(1, tasks_compared)
    base_rate = base_k / len(baseline) if baseline else 0.0
    new_rate = new_k / len(new) if new else 0.0
    if mode == "exact":
        if len(shared) != len(new):
            raise ValueError(
                f"{task}: the exact gate compares the same episodes, but "
                f"{len(new) - len(shared)} of {len(new)} new episodes (index, seed, initial state) "
                "are not in the baseline; use the statistical gate"
            )
        test, p_value = "exact", 0.0 if lost else 1.0
        regression = lost > 0
    elif shared and len(shared) == len(new):
        test, p_value = "McNemar", mcnemar_lower(lost, gained)
        regression = mode == "stat" and p_value < threshold
    else:
        test, p_value = "Fisher", fisher_lower(base_k, len(baseline), new_k, len(new))
        regression = mode == "stat" and p_value < threshold
    return Comparison(
        task=task,
        base_successes=base_k,
        base_n=len(baseline),
        new_successes=new_k,
        new_n=len(new),
        test=test,
        p_value=p_value,
        threshold=threshold,
        regression=regression,
        improvement=not regression and new_rate > base_rate,
        lost=lost,
        gained=gained,
    )


def compare_results(
    results: Sequence[TaskResult],
    baseline: Sequence[TaskResult],
    alpha: float = 0.05,
    mode: str = "stat",
) -> dict[str, Comparison]:
    """Verdicts for the tasks in both runs, by task id; each at alpha / (tasks compared)."""
    before = {r.task.id: r for r in baseline}
    common = sorted((r for r in results if r.task.id in before), key=lambda r: r.task.id)
    return {
        r.task.id: compare(
            r.task.id, before[r.task.id].episodes, r.episodes, alpha, len(common), mode
        )
        for r in common
    }
