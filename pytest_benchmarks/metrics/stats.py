"""Is a new success rate significantly lower than its baseline? Exact one-sided tests.

Success counts are binomial. When the baseline and the new run share episodes (same index, seed
and initial state), their outcomes are paired and McNemar's exact test looks only at the
episodes whose outcome changed; otherwise Fisher's exact test compares the two counts. Both are
one-sided (alternative: the new rate is lower).

A test on few episodes may be unable to fail at all: its smallest reachable p-value (every
baseline success lost) can lie above the level. Such a task is said so, with the episodes it
would need, and is left out of the multiple-testing correction (Tarone's rule: which tasks can
fail depends only on the baseline and the episode counts, never on the new outcomes). The tasks
that can fail are judged together by Holm's step-down procedure, which keeps the chance of any
false alarm in the session at or below ``alpha`` with more power than Bonferroni.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from pytest_benchmarks.core.results import EpisodeRecord, TaskResult, rate_text
from pytest_benchmarks.core.settings import GATE_MODES

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
    if lost + gained == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(lost, lost + gained, 0.5, alternative="greater").pvalue)


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
    #: The smallest p-value this test can reach with these counts.
    min_p: float = 0.0
    #: Whether any outcome of the new run could fail the gate (False: it cannot detect a drop).
    can_fail: bool = True
    #: Episodes per run at which it could, for the baseline's rate (None: none suffice).
    needed: int | None = None
    #: Why baseline and run are different experiments (another policy, other settings).
    notes: tuple[str, ...] = ()
    #: How the threshold was reached: "" (one task compared) or Holm's step, "Holm 2/5".
    procedure: str = ""

    @property
    def verdict(self) -> str:
        if self.regression:
            return "regression"
        if self.improvement:
            return "improvement"
        if not self.can_fail:
            return "cannot fail"
        return "no regression" if self.test == "exact" else "no significant change"

    def line(self) -> str:
        """One line a person reads at a glance."""
        head = (
            f"{self.task}: {rate_text(self.base_successes, self.base_n)} → "
            f"{rate_text(self.new_successes, self.new_n)}"
        )
        tail = "".join(f"; {note}" for note in self.notes)
        if self.test == "exact":
            body = f"{self.lost} episodes lost, {self.gained} gained → {self.verdict}"
            return f"{head}, {body}{tail}"
        if self.verdict == "cannot fail":
            need = (
                f"needs >= {self.needed} episodes at {self.base_rate:.0%}"
                if self.needed
                else "no episode count suffices at a 0% baseline"
            )
            return (
                f"{head}, {self.test} cannot detect any drop at this size (smallest p "
                f"{self.min_p:.2g} >= {self.threshold:.2g}; {need}) → cannot fail{tail}"
            )
        sign = "<" if self.p_value < self.threshold else ">="
        level = f"{self.threshold:.2g}" + (f" ({self.procedure})" if self.procedure else "")
        return f"{head}, {self.test} p={self.p_value:.2g} {sign} {level} → {self.verdict}{tail}"

    @property
    def base_rate(self) -> float:
        return self.base_successes / self.base_n if self.base_n else 0.0


def _key(e: EpisodeRecord) -> tuple[int, int, int]:
    return (e.index, e.seed, e.init_state)


def pairing(
    baseline: Sequence[EpisodeRecord], keys: Sequence[tuple[int, int, int]]
) -> tuple[bool, int]:
    """Whether episodes with these keys pair with the baseline, and the baseline successes
    among them (what a paired test can lose)."""
    by_key = {_key(e): e.success for e in baseline}
    paired = bool(keys) and all(k in by_key for k in keys)
    return paired, sum(by_key[k] for k in keys if k in by_key)


def reachable_p(baseline: Sequence[EpisodeRecord], keys: Sequence[tuple[int, int, int]]) -> float:
    """The smallest p-value a run of the episodes ``keys`` can reach against ``baseline``."""
    paired, shared_successes = pairing(baseline, keys)
    base_k = sum(e.success for e in baseline)
    return min_p_value(shared_successes if paired else base_k, len(baseline), len(keys), paired)


def compare(
    task: str,
    baseline: Sequence[EpisodeRecord],
    new: Sequence[EpisodeRecord],
    alpha: float = 0.05,
    tasks_compared: int = 1,
    mode: str = "stat",
    can_fail: bool | None = None,
    notes: Sequence[str] = (),
    session_tasks: int | None = None,
) -> Comparison:
    """Judge one task's new episodes against its baseline episodes at ``alpha / tasks_compared``.

    ``mode``: ``stat`` (significance test), ``exact`` (any shared episode that succeeded in the
    baseline and fails now is a regression; for deterministic runs, so every new episode must be
    one of the baseline's), ``off`` (never a regression). ``can_fail``: whether the task is one
    the correction counts (decided before the run, see ``tarone``); by default, whether its
    smallest reachable p-value is below the threshold. ``session_tasks``: the tasks compared
    in the session, for the episodes a task that cannot fail would need (at alpha over all of
    them, the level it faces when every task can fail); ``tasks_compared`` by default.
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
    paired = bool(shared) and len(shared) == len(new)
    min_p = reachable_p(baseline, [_key(e) for e in new])
    if mode == "exact":
        if len(shared) != len(new):
            raise ValueError(
                f"{task}: the exact gate compares the same episodes, but "
                f"{len(new) - len(shared)} of {len(new)} new episodes (index, seed, initial state) "
                "are not in the baseline; use the statistical gate"
            )
        test, p_value, p_up = "exact", 0.0 if lost else 1.0, 1.0
        regression, possible = lost > 0, any(b for b, _ in shared)
    else:
        if paired:
            test, p_value = "McNemar", mcnemar_lower(lost, gained)
            p_up = mcnemar_lower(gained, lost)
        else:
            test = "Fisher"
            p_value = fisher_lower(base_k, len(baseline), new_k, len(new))
            p_up = fisher_lower(new_k, len(new), base_k, len(baseline))
        possible = min_p < threshold if can_fail is None else can_fail
        regression = mode == "stat" and possible and p_value < threshold
    rate = base_k / len(baseline) if baseline else 0.0
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
        improvement=not regression and mode == "stat" and p_up < threshold,
        lost=lost,
        gained=gained,
        min_p=min_p,
        can_fail=possible,
        needed=None
        if possible
        else episodes_needed(rate, alpha / max(1, session_tasks or tasks_compared), paired),
        notes=tuple(notes),
    )


def summary(verdicts: Sequence[Comparison]) -> str:
    """``1 regressed, 0 improved, 2 could not fail: need >= 14 episodes``: the counts the
    plugin's summary and ``compare`` both print."""
    down = sum(v.regression for v in verdicts)
    up = sum(v.verdict == "improvement" for v in verdicts)
    blind = [v for v in verdicts if v.verdict == "cannot fail"]
    text = f"{down} regressed, {up} improved"
    if blind:
        most = max((v.needed for v in blind if v.needed is not None), default=None)
        text += f", {len(blind)} could not fail" + (f": need >= {most} episodes" if most else "")
    return text


def tarone(min_ps: Mapping[str, float], alpha: float) -> tuple[set[str], int]:
    """The tasks that can fail, by Tarone's rule: the smallest K with at most K tasks whose
    smallest reachable p-value is below alpha / K; those tasks, and K (the others cannot reach
    alpha / K). Data-independent (it reads only the baseline and the episode counts), so Holm
    over the chosen tasks keeps the session's level."""
    for k in range(1, len(min_ps) + 1):
        chosen = {task for task, p in min_ps.items() if p < alpha / k}
        if len(chosen) <= k:
            return chosen, k
    return set(), 1


def holm(
    comparisons: Sequence[Comparison], alpha: float, family: int | None = None
) -> list[Comparison]:
    """Holm's step-down over the comparisons that can fail (``family``: how many tasks the
    family holds, counting any that gave no verdict; the comparisons' count by default).

    The i-th smallest p-value is judged at alpha / (family - i) while every smaller one was a
    regression; from the first that is not, none is. Comparisons that cannot fail pass as they are.
    """
    tested = sorted(
        (c for c in comparisons if c.can_fail and c.test in ("McNemar", "Fisher")),
        key=lambda c: c.p_value,
    )
    m = max(family or 0, len(tested))
    judged: dict[str, Comparison] = {}
    stopped: float | None = None
    for i, c in enumerate(tested):
        level = alpha / (m - i)
        if stopped is None and c.p_value < level:
            judged[c.task] = replace(c, threshold=level, regression=True, improvement=False,
                                     procedure=f"Holm {i + 1}/{m}" if m > 1 else "")  # fmt: skip
            continue
        stopped = level if stopped is None else stopped
        judged[c.task] = replace(c, threshold=stopped, regression=False,
                                 procedure=f"Holm {i + 1}/{m}" if m > 1 else "")  # fmt: skip
    return [judged.get(c.task, c) for c in comparisons]


def judge(
    pairs: Mapping[str, tuple[Sequence[EpisodeRecord], Sequence[EpisodeRecord]]],
    alpha: float = 0.05,
    mode: str = "stat",
) -> dict[str, Comparison]:
    """Verdicts for a session: task id -> (baseline episodes, new episodes). Tarone's rule
    picks the tasks that can fail; Holm's step-down judges them together at ``alpha``."""
    reach = {t: reachable_p(base, [_key(e) for e in new]) for t, (base, new) in pairs.items()}
    family, k = tarone(reach, alpha)
    first = [
        compare(
            task,
            base,
            new,
            alpha,
            len(family) if task in family else k,
            mode,
            can_fail=task in family if mode != "exact" else None,
            session_tasks=len(pairs),
        )
        for task, (base, new) in pairs.items()
    ]
    return {c.task: c for c in holm(first, alpha, len(family))}


def compare_results(
    results: Sequence[TaskResult],
    baseline: Sequence[TaskResult],
    alpha: float = 0.05,
    mode: str = "stat",
) -> dict[str, Comparison]:
    """Verdicts for the tasks in both runs, by task id (see ``judge``)."""
    before = {r.task.id: r for r in baseline}
    common = sorted((r for r in results if r.task.id in before), key=lambda r: r.task.id)
    return judge({r.task.id: (before[r.task.id].episodes, r.episodes) for r in common}, alpha, mode)
