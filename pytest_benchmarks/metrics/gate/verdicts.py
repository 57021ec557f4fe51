"""The gate's verdicts: the per-task test (McNemar, Fisher, exact, or the sequential gate's
decision), Tarone's family and Holm's steps over it, and when a verdict fails the gate."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from pytest_benchmarks.core.results import EpisodeRecord
from pytest_benchmarks.core.settings import GATE_MODES
from pytest_benchmarks.metrics.gate.comparison import Comparison
from pytest_benchmarks.metrics.gate.family import holm_reject, tarone_mask
from pytest_benchmarks.metrics.gate.methods import Case, choose
from pytest_benchmarks.metrics.gate.pairing import Pairing
from pytest_benchmarks.metrics.gate.sequential import final_alpha
from pytest_benchmarks.metrics.stats import (
    episode_key,
    reachable_p,
)


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
    """Judge one task's new episodes against its baseline episodes at ``alpha / tasks_compared``
    with the per-task test that applies (``methods``: McNemar on paired episodes, Fisher
    otherwise, or exact).

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
    case = Case(task, baseline, new, alpha, tasks_compared, mode, can_fail, tuple(notes),
                session_tasks, pair)  # fmt: skip
    return choose(case).judge(case)


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
    """Judge a ``--benchmark-sequential`` run, read again from its episodes, as its stopping
    rule did (``methods.sequential``)."""
    case = Case(task, baseline, new, alpha, family_size, "stat", can_fail, tuple(notes),
                pair=pair, order=tuple(order))  # fmt: skip
    return choose(case).judge(case)
