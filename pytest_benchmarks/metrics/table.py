"""The per-task table printed at the end of a session."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_benchmarks.core.results import TaskResult, wilson_interval


def _rate(successes: int, n: int) -> str:
    if not n:
        return f"{'0/0':>9}  {'-':>6}  {'':>14}"
    low, high = wilson_interval(successes, n)
    return f"{f'{successes}/{n}':>9}  {100.0 * successes / n:5.1f}%  [{low:5.1f}, {high:5.1f}]"


def table(results: Sequence[TaskResult]) -> list[str]:
    """One line per task (successes/n, rate, 95% Wilson interval, steps, time), then overall."""
    ordered = sorted(results, key=lambda r: r.task.id)
    width = max([len(r.task.id) for r in ordered] + [len("overall")])
    lines = [
        f"{'task':<{width}}  {'success':>9}  {'rate':>6}  {'95% interval':>14}  "
        f"{'steps':>6}  {'time':>7}"
    ]
    for r in ordered:
        steps = (
            f"{sum(e.steps for e in r.episodes) / r.n_episodes:6.1f}" if r.episodes else "     -"
        )
        line = (
            f"{r.task.id:<{width}}  {_rate(r.successes, r.n_episodes)}  {steps}  {r.eval_s:6.1f}s"
        )
        if r.partial:
            line += f"  ({r.n_episodes} of {r.planned} planned)"
        if r.error:
            line += f"  ERROR {r.error}"
        lines.append(line)
    episodes = [e for r in ordered for e in r.episodes]
    successes = sum(e.success for e in episodes)
    steps = f"{sum(e.steps for e in episodes) / len(episodes):6.1f}" if episodes else "     -"
    total = sum(r.eval_s for r in ordered)
    lines.append(
        f"{'overall':<{width}}  {_rate(successes, len(episodes))}  {steps}  {total:6.1f}s"
        f"  ({len(ordered)} tasks)"
    )
    return lines
