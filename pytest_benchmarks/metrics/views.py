"""Human views of a metrics file: a Markdown table (for ``$GITHUB_STEP_SUMMARY``) and a chart.

Both show each task's success rate with its 95% Wilson interval, and the baseline's beside it
when one is given.
"""

from __future__ import annotations

import io
from pathlib import Path

from pytest_benchmarks.core.files import write_atomic
from pytest_benchmarks.core.results import TaskResult, rate_text, wilson_interval
from pytest_benchmarks.metrics.gate import Comparison
from pytest_benchmarks.metrics.runs import Judgement


def _cell(result: TaskResult | None) -> str:
    if result is None or not result.n_episodes:
        return "–"
    return rate_text(result.successes, result.n_episodes)


def markdown(
    results: list[TaskResult],
    baseline: list[TaskResult] | None = None,
    judgement: Judgement | Exception | None = None,
    interrupted: str | None = None,
) -> str:
    """A Markdown table, one row per task, then the overall rate; with a ``baseline``, its
    rates and ``judgement``'s verdict per task (``runs.judge_runs``, the gate ``compare`` runs;
    an exception where the runs cannot be judged, said under the table) and the gate's closing
    line. ``interrupted`` says how the run was cut short, when it was (``partial``)."""
    ordered = sorted(results, key=lambda r: r.task.id)
    before = {r.task.id: r for r in baseline or []}
    judged = judgement.verdicts if isinstance(judgement, Judgement) else {}
    problems = judgement.problems if isinstance(judgement, Judgement) else {}
    head = ["task", "success (95% interval)", "mean steps", "time"]
    if baseline is not None:
        head[1:1] = ["baseline"]
        head.append("verdict")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in ordered:
        row = [f"`{r.task.id}`", _cell(r), mean_steps(r), f"{r.eval_s:.1f} s"]
        if r.error:
            row[1] += f" — error: {r.error}"
        if baseline is not None:
            row[1:1] = [_cell(before.get(r.task.id))]
            verdict = judged.get(r.task.id)
            problem = problems.get(r.task.id)
            row.append("**error**" if r.error else _verdict(verdict, problem, r.task.id in before))
        lines.append("| " + " | ".join(row) + " |")
    lines.append(f"\n**Overall:** {overall_text(ordered)}.")
    if interrupted is not None:
        unfinished = [f"`{r.task.id}`" for r in ordered if r.partial]
        what = f" unfinished: {', '.join(unfinished)}" if unfinished else ""
        lines.append(f"**Interrupted:** {interrupted};{what or ' every task listed finished'}.")
    if isinstance(judgement, Judgement):
        lines += ["", *(f"- {note.removeprefix('note: ')}" for note in judgement.notes)]
        lines.append(f"**Gate:** {gate_line(judgement)}")
    elif judgement is not None:
        lines.append(f"\n**Gate:** {gate_line(judgement)}")
    return "\n".join(lines) + "\n"


def mean_steps(result: TaskResult) -> str:
    """A task's mean episode length, or "–" where none is known (eval_info.json has none)."""
    if not any(e.steps for e in result.episodes):
        return "–"
    return f"{sum(e.steps for e in result.episodes) / result.n_episodes:.1f}"


def overall_text(results: list[TaskResult]) -> str:
    """``486/500 (97.2%, 95% interval 95.4–98.3) over 10 tasks``: every task's episodes."""
    successes = sum(r.successes for r in results)
    n = sum(r.n_episodes for r in results)
    low, high = wilson_interval(successes, n)
    rate = f"{100 * successes / n:.1f}%" if n else "–"
    return f"{successes}/{n} ({rate}, 95% interval {low:.1f}–{high:.1f}) over {len(results)} tasks"


def gate_line(judgement: Judgement | Exception) -> str:
    """The gate's closing line, as ``compare`` ends with it, or why the runs were not judged."""
    if isinstance(judgement, Judgement):
        return judgement.lines()[-1]
    return f"not judged: {judgement}"


def verdict_kind(verdict: Comparison | None) -> str:
    """``regression``, ``improvement``, ``held`` or ``none`` (no verdict): how a view marks it."""
    if verdict is None:
        return "none"
    if verdict.regression:
        return "regression"
    return "improvement" if verdict.verdict == "improvement" else "held"


def _verdict(verdict: Comparison | None, problem: str | None, known: bool) -> str:
    text = verdict_text(verdict, problem, known)
    if verdict is not None and verdict.regression:
        return text.replace("regression", "**regression**", 1)
    return text


def verdict_text(verdict: Comparison | None, problem: str | None, known: bool) -> str:
    """A task's verdict in words: the gate's, or why there is none (``known``: the task is in
    the baseline)."""
    if problem is not None:
        return f"not compared: {problem}"
    if verdict is None:
        return "not in baseline" if not known else "not judged"
    if verdict.regression:
        return f"regression ({verdict.test} p={verdict.p_value:.2g})"
    if verdict.verdict == "improvement":
        return "improved"
    if verdict.verdict == "cannot fail":
        need = f"; needs >= {verdict.needed} episodes" if verdict.needed else ""
        return f"cannot fail at this size{need}"
    return "no significant change"


def chart(results: list[TaskResult], path: Path, baseline: list[TaskResult] | None = None) -> None:
    """A PNG of per-task success rates with 95% intervals, the baseline beside each task."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ordered = sorted(results, key=lambda r: r.task.id)
    series: list[tuple[str, list[TaskResult | None], str, float]] = [
        ("this run", list(ordered), "tab:blue", 0.0)
    ]
    if baseline is not None:
        before = {r.task.id: r for r in baseline}
        series = [
            ("baseline", [before.get(r.task.id) for r in ordered], "tab:gray", -0.2),
            ("this run", list(ordered), "tab:blue", 0.2),
        ]
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.35 * len(ordered)))
    for label, rows, color, offset in series:
        ys, xs, lows, highs = [], [], [], []
        for i, r in enumerate(rows):
            if r is None or not r.n_episodes:
                continue
            low, high = wilson_interval(r.successes, r.n_episodes)
            rate = 100.0 * r.successes / r.n_episodes
            ys.append(i + offset)
            xs.append(rate)
            lows.append(rate - low)
            highs.append(high - rate)
        ax.errorbar(xs, ys, xerr=[lows, highs], fmt="o", color=color, label=label, capsize=3)
    ax.set_yticks(range(len(ordered)), [r.task.id for r in ordered])
    ax.invert_yaxis()
    ax.set_xlim(-2, 102)
    ax.set_xlabel("success rate (%) with 95% Wilson interval")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    fig.tight_layout()
    image = io.BytesIO()  # drawn whole, then written atomically: never a half-written chart
    fig.savefig(image, dpi=100, format=path.suffix.lower().lstrip(".") or "png")
    plt.close(fig)
    write_atomic(path, image.getvalue())
