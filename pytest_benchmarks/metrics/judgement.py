"""The session's judgement of the gate's verdicts, as pure functions: Holm's step-down over
each test function's tasks, and the summary lines it ends with. The tests judged each task at
Holm's first step (alpha over the tasks that can fail); the later steps need every p-value,
so they run once, at session end, on the verdicts the reports carried."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pytest_benchmarks.metrics.stats import Comparison, holm, summary


def judge(
    verdicts: Iterable[Mapping[str, Any]], gate: str, alpha: float
) -> tuple[list[Comparison], set[str]]:
    """Each verdict (family, family_size, comparison) after Holm's step-down over its family
    (``stat`` gate only), and the tasks only the later steps found regressed."""
    families: dict[str, tuple[int, list[Comparison]]] = {}
    for verdict in verdicts:
        data = dict(verdict["comparison"], notes=tuple(verdict["comparison"]["notes"]))
        _, group = families.setdefault(verdict["family"], (verdict["family_size"], []))
        group.append(Comparison(**data))
    judged: list[Comparison] = []
    late: set[str] = set()
    for size, group in families.values():
        if gate != "stat":
            judged += group
            continue
        for before, after in zip(group, holm(group, alpha, size), strict=True):
            judged.append(after)
            if after.regression and not before.regression:
                late.add(after.task)
    return judged, late


def summary_lines(
    judged: list[Comparison], late: set[str], kept: list[str], gate: str, alpha: float
) -> list[str]:
    """Each snapshot --snapshot-update kept, a count line, then each regression, each task that
    could not fail and each improvement."""
    lines = list(kept)
    if not judged:
        return lines
    ordered = sorted(judged, key=lambda c: c.task)
    down = [c for c in ordered if c.regression]
    up = [c for c in ordered if c.verdict == "improvement"]
    blind = [c for c in ordered if c.verdict == "cannot fail"]
    level = f", alpha {alpha:g}, Holm over the tasks that can fail" if gate == "stat" else ""
    lines.append(f"snapshot gate ({gate}{level}): {len(ordered)} compared, {summary(ordered)}")
    after = " (Holm's step-down, after the tests ran: the session fails)"
    lines += [f"  REGRESSION {c.line()}{after if c.task in late else ''}" for c in down]
    lines += [f"  cannot fail {c.line()}" for c in blind]
    lines += [f"  improved   {c.line()}" for c in up]
    if up:
        lines.append(
            "  improvements pass; run with --snapshot-update to make them the new baseline"
        )
    return lines
