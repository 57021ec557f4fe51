"""The gate's lines: each verdict marked by its outcome and the closing count, the lines the
pytest gate's summary and ``pytest-benchmarks compare`` both print."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pytest_benchmarks.metrics.gate.comparison import Comparison
from pytest_benchmarks.metrics.gate.pairing import MOVED_NOTE
from pytest_benchmarks.metrics.gate.refusals import ENVIRONMENT_NOTE
from pytest_benchmarks.metrics.gate.sequential import SHARE
from pytest_benchmarks.metrics.gate.verdicts import fails

#: The order the lines list verdicts in: what fails first.
ORDER = ("REGRESSION", "cannot fail", "improved", "held")


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


def closing_line(
    verdicts: Sequence[Comparison],
    alpha: float,
    mode: str,
    power: str,
    unjudged: int = 0,
    families: int = 1,
    planned: int = 0,
) -> str:
    """``3 tasks compared (stat, alpha 0.05, Holm over 2 that can fail): 1 regressed, ...
    → REGRESSION``: the line the pytest gate's summary and ``compare`` both end with.
    ``unjudged``: tasks that could not be compared (errored, no episodes); ``planned``: each
    task's plan, for a sequential run's episodes used."""
    level = ""
    able = sum(v.can_fail for v in verdicts)
    sequential = [v for v in verdicts if v.test == "sequential"]
    if mode == "stat" and sequential:
        level = (
            f", alpha {alpha:g}, sequential: e-values at {SHARE:.0%} of alpha, then McNemar "
            f"with Holm over {able} that can fail"
        )
    elif mode == "stat":
        level = f", alpha {alpha:g}, Holm over {able} that can fail"
    if mode == "stat" and families > 1:
        level += f" within each of {families} tests"
    if sequential and planned:
        used = sum(v.new_n for v in sequential)
        states = [v.state for v in sequential]
        why = ", ".join(f"{states.count(s)} {s}" for s in sorted(set(states)))
        level += f"; {used} of {planned * len(sequential)} planned episodes used: {why}"
    if any(v.regression for v in verdicts):
        outcome = "REGRESSION"
    elif unjudged:
        outcome = f"{unjudged} {_tasks(unjudged).upper()} NOT COMPARABLE"
    elif any(fails(v, power) for v in verdicts):
        outcome = "GATE CANNOT FAIL"
    else:
        outcome = "no regression"
    compared = f"{len(verdicts)} {_tasks(len(verdicts))} compared"
    return f"{compared} ({mode}{level}): {summary(verdicts)} → {outcome}"


def _tasks(n: int) -> str:
    return "task" if n == 1 else "tasks"


def environment_lines(verdicts: Sequence[Comparison]) -> list[str]:
    """``  environment: 10 tasks' snapshots ran in another environment (mujoco 3.1.6 → 3.3.0)``
    for each environment change the verdicts note (held ones too: the lines list only those
    that fail or improve)."""
    marker = f"{ENVIRONMENT_NOTE} ("
    found: dict[str, int] = {}
    for c in verdicts:
        for note in c.notes:
            if note.startswith(marker):
                what = note.removeprefix(marker).removesuffix(")")
                found[what] = found.get(what, 0) + 1
    moved = sum(any(note.startswith(MOVED_NOTE) for note in c.notes) for c in verdicts)
    return [
        f"  environment: {_whose(n)} snapshots ran in another environment ({what})"
        for what, n in found.items()
    ] + (
        [f"  environment: {_whose(moved)} initial states moved with it: judged unpaired (Fisher)"]
        if moved
        else []
    )


def _whose(n: int) -> str:
    return f"{n} task's" if n == 1 else f"{n} tasks'"


def verdict_lines(
    verdicts: Sequence[Comparison], every: bool = True, late: Iterable[str] = ()
) -> list[str]:
    """One line per verdict, marked by its outcome (``  REGRESSION  task: ...``), what fails
    first; ``every=False`` leaves out the tasks that held, but for those with notes
    (``  note:      task: ...``, last). ``late``: tasks only Holm's later
    steps found regressed (the pytest gate's tests had passed them)."""
    after = set(late)
    ordered = sorted(verdicts, key=lambda c: (ORDER.index(c.label), c.task))
    return [
        f"  {c.label:<10} {c.line()}"
        + (" (Holm's step-down, after the tests ran: the session fails)" if c.task in after else "")
        for c in ordered
        if every or c.label != "held"
    ] + ([] if every else [f"  {'note:':<10} {c.line()}" for c in ordered if _noted(c)])


def _noted(c: Comparison) -> bool:
    """A held verdict with something to say beyond the environment (``environment_lines``
    says that): other settings, another policy, episodes not paired, unproven starts. A pass
    that judged other episodes than it seems to must not pass without a word."""
    said = (ENVIRONMENT_NOTE, MOVED_NOTE)
    return c.label == "held" and any(not note.startswith(said) for note in c.notes)
