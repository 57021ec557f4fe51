"""The gate's verdicts: the per-task test (McNemar, Fisher, exact, or the sequential gate's
decision), Tarone's family and Holm's steps over it, and when a verdict fails the gate."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pytest_benchmarks.core.results import EpisodeRecord, TaskResult, rate_text
from pytest_benchmarks.core.settings import GATE_MODES
from pytest_benchmarks.metrics.gate.family import holm_reject, tarone_mask
from pytest_benchmarks.metrics.gate.pairing import Pairing
from pytest_benchmarks.metrics.gate.sequential import (
    REGRESSED,
    UNDECIDED,
    decide,
    early_threshold,
    final_alpha,
    paired_diffs,
    task_drop,
)
from pytest_benchmarks.metrics.stats import (
    episode_key,
    episodes_needed,
    fisher_lower,
    mcnemar_lower,
    reachable_p,
)

#: How the gate's lines mark each verdict (``Comparison.verdict``); the rest are held.
LABELS = {"regression": "REGRESSION", "cannot fail": "cannot fail", "improvement": "improved"}


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
    #: A sequential gate's decision (``sequential.Decision.line``): how many episodes it read
    #: and why it stopped.
    decision: str = ""
    #: The sequential gate's state (REGRESSED, HELD, or UNDECIDED: ran its plan, judged by
    #: the fixed paired test); "" for the fixed gate.
    state: str = ""
    #: The share of alpha Holm's steps judge this task at (the sequential gate's final tests
    #: get what its early stops left).
    share: float = 1.0

    @property
    def holm_tested(self) -> bool:
        """Whether Holm's steps judge this verdict: a fixed test of a task that can fail, or
        the final fixed test of a sequential task that ran its plan."""
        fixed = self.test in ("McNemar", "Fisher") or self.state == UNDECIDED
        return self.can_fail and fixed

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
        if self.test == "sequential" and self.state != UNDECIDED:
            return f"{head}, sequential: {self.decision} → {self.verdict}{tail}"
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
        test = f"sequential: {self.decision}, McNemar" if self.state == UNDECIDED else self.test
        return f"{head}, {test} p={self.p_value:.2g} {sign} {level} → {self.verdict}{tail}"

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Comparison:
        """A verdict from its fields as ``dataclasses.asdict`` gave them (a report's payload)."""
        return cls(**{**data, "notes": tuple(data.get("notes", ()))})

    @property
    def label(self) -> str:
        """The verdict as the gate's lines mark it: REGRESSION, cannot fail, improved, held."""
        return LABELS.get(self.verdict, "held")

    @property
    def base_rate(self) -> float:
        return self.base_successes / self.base_n if self.base_n else 0.0


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
    pair: bool = True,
) -> Comparison:
    """Judge one task's new episodes against its baseline episodes at ``alpha / tasks_compared``.

    ``mode``: ``stat`` (significance test), ``exact`` (any shared episode that succeeded in the
    baseline and fails now is a regression; for deterministic runs, so every new episode must be
    one of the baseline's), ``off`` (never a regression). ``can_fail``: whether the task is one
    the correction counts (decided before the run, see ``tarone``); by default, whether its
    smallest reachable p-value is below the threshold. ``session_tasks``: the tasks compared
    in the session, for the episodes a task that cannot fail would need (at alpha over all of
    them, the level it faces when every task can fail); ``tasks_compared`` by default.
    ``pair``: False where the pipeline found the episodes unpaired (``pairing.pair``): Fisher.
    """
    if mode not in GATE_MODES:
        raise ValueError(f"unknown gate mode {mode!r}; valid: {', '.join(GATE_MODES)}")
    base_k = sum(e.success for e in baseline)
    new_k = sum(e.success for e in new)
    by_key = {episode_key(e): e.success for e in baseline} if pair else {}
    shared = [(by_key[episode_key(e)], e.success) for e in new if episode_key(e) in by_key]
    lost = sum(b and not n for b, n in shared)
    gained = sum(n and not b for b, n in shared)
    threshold = alpha / max(1, tasks_compared)
    paired = bool(shared) and len(shared) == len(new)
    min_p = reachable_p(baseline, [episode_key(e) for e in new] if pair else [])
    if not pair:
        min_p = fisher_lower(base_k, len(baseline), 0, len(new)) if baseline and new else 1.0
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


def tarone(min_ps: Mapping[str, float], alpha: float) -> tuple[set[str], int]:
    """The tasks that can fail, by Tarone's rule (``family.tarone_mask``): the smallest K with
    at most K tasks whose smallest reachable p-value is below alpha / K; those tasks, and K.
    Data-independent (it reads only the baseline and the episode counts), so Holm over the
    chosen tasks keeps the session's level."""
    if not min_ps:
        return set(), 1
    tasks = list(min_ps)
    chosen, k = tarone_mask([[min_ps[t] for t in tasks]], alpha)
    return {t for t, c in zip(tasks, chosen[0], strict=True) if c}, int(k[0])


def holm(
    comparisons: Sequence[Comparison], alpha: float, family: int | None = None
) -> list[Comparison]:
    """Holm's step-down (``family.holm_reject``) over the comparisons it tests
    (``Comparison.holm_tested``; ``family``: how many tasks the family holds, counting any that
    gave no verdict or stopped early; the tested comparisons' count by default).

    The i-th smallest p-value is judged at alpha * share / (family - i) while every smaller one
    was a regression; from the first that is not, none is. The others pass as they are.
    """
    tested = sorted((c for c in comparisons if c.holm_tested), key=lambda c: c.p_value)
    if not tested:
        return list(comparisons)
    m = max(family or 0, len(tested))
    share = tested[0].share
    reject = holm_reject([[c.p_value for c in tested]], True, alpha * share, m)[0]
    judged: dict[str, Comparison] = {}
    stopped: float | None = None
    for i, (c, regression) in enumerate(zip(tested, reject, strict=True)):
        level = alpha * share / (m - i)
        if not regression:
            stopped = level if stopped is None else stopped
        judged[c.task] = replace(
            c,
            threshold=level if regression else stopped or level,
            regression=bool(regression),
            improvement=c.improvement and not regression,
            procedure=f"Holm {i + 1}/{m}" if m > 1 else "",
        )
    return [judged.get(c.task, c) for c in comparisons]


def judge(
    pairs: Mapping[str, tuple[Sequence[EpisodeRecord], Sequence[EpisodeRecord]]],
    alpha: float = 0.05,
    mode: str = "stat",
    order: Sequence[int] = (),
    pairings: Mapping[str, Pairing] | None = None,
) -> dict[str, Comparison]:
    """Verdicts for a session: task id -> (baseline episodes, new episodes). Tarone's rule
    picks the tasks that can fail; Holm's step-down judges them together at ``alpha``.
    ``pairings``: each task's first step (``pairing.pair``: unpaired, and the notes to say).

    ``order``: a sequential run's plan (its episode indices in order): each task is judged as
    its stopping rule did (``compare_sequential``), the family chosen from the baseline's
    episodes of the plan at the final tests' level."""
    found = defaultdict(Pairing, pairings or {})
    if order:
        planned = set(order)
        reach = {
            t: reachable_p(base, [episode_key(e) for e in base if e.index in planned])
            for t, (base, _) in pairs.items()
        }
        family, k = tarone(reach, final_alpha(alpha))
        first = [
            compare_sequential(task, base, new, order, alpha,
                               len(family) if task in family else k, task in family,
                               found[task].notes, found[task].paired)
            for task, (base, new) in pairs.items()
        ]  # fmt: skip
        return {c.task: c for c in holm(first, alpha, len(family))}
    reach = {
        t: reachable_p(base, [episode_key(e) for e in new]) for t, (base, new) in pairs.items()
    }
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
            notes=found[task].notes,
            session_tasks=len(pairs),
            pair=found[task].paired,
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


def judge_families(
    verdicts: Iterable[tuple[str, int, Comparison]], mode: str, alpha: float
) -> tuple[list[Comparison], set[str]]:
    """Holm's later steps over each family (a pytest test function's tasks: its key, its size
    counting tasks that gave no verdict, and each verdict at Holm's first step), ``stat``
    mode only; the verdicts after them, and the tasks only the later steps found regressed."""
    families: dict[str, tuple[int, list[Comparison]]] = {}
    for key, size, comparison in verdicts:
        families.setdefault(key, (size, []))[1].append(comparison)
    judged: list[Comparison] = []
    late: set[str] = set()
    for size, group in families.values():
        if mode != "stat":
            judged += group
            continue
        for before, after in zip(group, holm(group, alpha, size), strict=True):
            judged.append(after)
            if after.regression and not before.regression:
                late.add(after.task)
    return judged, late


def fails(comparison: Comparison, power: str) -> bool:
    """Whether a verdict fails the gate: a regression, or, with ``power="fail"``
    (--benchmark-gate-power), a task whose test cannot detect any drop."""
    return comparison.regression or (power == "fail" and comparison.verdict == "cannot fail")


def compare_sequential(
    task: str,
    baseline: Sequence[EpisodeRecord],
    new: Sequence[EpisodeRecord],
    order: Sequence[int],
    alpha: float,
    family_size: int,
    can_fail: bool,
    notes: Sequence[str] = (),
    pair: bool = True,
) -> Comparison:
    """Judge a ``--benchmark-sequential`` run, read again from its episodes: REGRESSED early
    when its stopping rule said so (``p_value`` is ``1 / e``, the e-value's calibration), HELD
    when it stopped for futility (never a regression), and a task that ran its plan undecided
    by the fixed paired test at the rest of alpha, at Holm's first step over the family (the
    later steps come with the session's other verdicts, ``holm``). Unpaired (``pair``
    False: the episodes moved with the environment, so nothing stopped early), the whole plan
    is judged by Fisher at the final tests' level."""
    if not pair:
        fixed = compare(task, baseline, new, final_alpha(alpha), family_size, "stat",
                        can_fail=can_fail, notes=notes, pair=False)  # fmt: skip
        return replace(fixed, share=final_alpha(1.0))
    diffs = paired_diffs(baseline, new, order)
    threshold = early_threshold(alpha, family_size)
    delta = task_drop(baseline, order, alpha, family_size)
    decision = decide(diffs, threshold, len(order), delta=delta, can_fail=can_fail)
    counts = {
        "task": task,
        "base_successes": sum(e.success for e in baseline),
        "base_n": len(baseline),
        "new_successes": sum(e.success for e in new),
        "new_n": len(new),
        "test": "sequential",
        "lost": decision.lost,
        "gained": decision.gained,
        "can_fail": can_fail,
        "notes": tuple(notes),
        "decision": decision.line(),
        "state": decision.state,
        "share": final_alpha(1.0),
    }
    if decision.state == UNDECIDED:
        level = final_alpha(alpha) / max(1, family_size)
        p_value = mcnemar_lower(decision.lost, decision.gained)
        regression = can_fail and p_value < level
        improvement = not regression and mcnemar_lower(decision.gained, decision.lost) < level
        return Comparison(**counts, p_value=p_value, threshold=level, regression=regression,
                          improvement=improvement)  # fmt: skip
    e_value = decision.regression_e
    return Comparison(
        **counts,
        p_value=min(1.0, 1.0 / e_value) if e_value > 0 else 1.0,
        threshold=1.0 / threshold,
        regression=decision.state == REGRESSED,
        improvement=False,
    )
