"""A benchmark's history across runs: each task's success rate over checkpoints or commits,
with each step between neighbouring runs judged by the gate ``compare`` runs.

Runs are put in the order they were recorded (``run.started_at``), or as given. A run joins
the first series whose latest run the gate can compare it with; a run it cannot (another
benchmark, settings that bear on outcomes, no shared task) starts a series of its own, and the
reason is kept to be shown beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pytest_benchmarks.core.results import wilson_interval
from pytest_benchmarks.metrics import eval_info
from pytest_benchmarks.metrics.document import load_results
from pytest_benchmarks.metrics.runs import InputError, Judgement, Unjudgeable, judge_runs, task_name
from pytest_benchmarks.metrics.views import verdict_kind, verdict_text

#: How a step is marked in the tables: the gate flagged a drop, a rise, or could not judge.
MARKS = {"regression": "▼", "improvement": "▲", "unjudged": "?"}
#: Which mark a run's overall cell takes when its tasks' differ: the first in this order.
ORDER = {"regression": 0, "unjudged": 1, "improvement": 2}


@dataclass
class Run:
    """One input: its label (the file's name; its path where two share a name)."""

    label: str
    path: Path
    document: dict[str, Any]

    @property
    def started_at(self) -> str:
        return str(self.document["run"].get("started_at") or "–")


@dataclass
class Point:
    """One task in one run, and the gate's word on the step from the run before."""

    successes: int
    n: int
    error: str | None = None
    #: ``regression``, ``improvement``, ``unjudged`` or "" (no change flagged, or first run).
    mark: str = ""
    why: str = ""

    @property
    def rate(self) -> float | None:
        return 100.0 * self.successes / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.successes, self.n)

    def text(self) -> str:
        """``90% [60–98] ▼``: the rate, its 95% interval and the step's mark."""
        if self.error:
            return "error"
        if not self.n:
            return "–"
        low, high = self.interval
        mark = MARKS.get(self.mark, "")
        return f"{self.rate:.0f}% [{low:.0f}–{high:.0f}]" + (f" {mark}" if mark else "")


@dataclass
class Step:
    """A run judged against the run before it in its series."""

    before: str
    after: str
    #: The gate's closing line, and its notes (settings that differ without bearing on outcomes).
    line: str
    notes: list[str]
    flagged: dict[str, str]


@dataclass
class Series:
    """Runs the gate can compare in turn, and why the first one stands apart from the others."""

    runs: list[Run]
    apart: str | None = None
    tasks: dict[str, list[Point | None]] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    #: The first run against the last, over three runs or more: a drift no step shows.
    span: Step | None = None
    #: Each task's name by its id: the key where the series mixes in ``eval_info.json``.
    aliases: dict[str, str] = field(default_factory=dict)

    @property
    def overall(self) -> list[Point]:
        """All tasks' episodes of each run together, marked by the gate's step as a whole: a
        regression where the gate fails it, else a task it could not judge, else a rise."""
        totals = [Point(0, 0) for _ in self.runs]
        for points in self.tasks.values():
            for total, point in zip(totals, points, strict=True):
                if point is not None:
                    total.successes += point.successes
                    total.n += point.n
                    if point.mark and (not total.mark or ORDER[point.mark] < ORDER[total.mark]):
                        total.mark = point.mark
        return totals

    def changed(self) -> list[str]:
        """Tasks with a step the gate flagged, then the rest, each by name."""
        spanned = set(self.span.flagged) if self.span is not None else set()
        flagged = [
            t for t, ps in self.tasks.items() if t in spanned or any(p and p.mark for p in ps)
        ]
        return sorted(flagged) + sorted(set(self.tasks) - set(flagged))

    def flagged(self, task: str) -> bool:
        """Whether a step, or the first-to-last judgement, flagged ``task``."""
        in_span = self.span is not None and task in self.span.flagged
        return in_span or any(p and p.mark for p in self.tasks[task])

    def dropped(self, task: str) -> bool:
        """Whether a step, or the first-to-last judgement, found ``task`` regressed."""
        in_span = self.span is not None and "regression" in self.span.flagged.get(task, "")
        return in_span or any(p and p.mark == "regression" for p in self.tasks[task])


def labels(paths: list[Path]) -> list[str]:
    """Each run's file name, or its path where names repeat."""
    names = [path.name for path in paths]
    return [path.name if names.count(path.name) == 1 else str(path) for path in paths]


def ordered(runs: list[Run], as_given: bool) -> tuple[list[Run], str | None]:
    """The runs by their recorded time (as given with ``as_given``, or where one has none),
    and a line saying which order was used when it was not the recorded one."""
    if as_given:
        return runs, None
    undated = [run.label for run in runs if not run.document["run"].get("started_at")]
    if undated:
        return runs, f"ordered as given: {', '.join(undated[:3])} has no recorded start time"
    try:
        return sorted(runs, key=lambda run: datetime.fromisoformat(run.started_at)), None
    except (TypeError, ValueError) as exc:
        return runs, f"ordered as given: a start time is not a date ({exc})"


def build(runs: list[Run], alpha: float, mode: str) -> list[Series]:
    """The series of runs, each step judged."""
    series: list[Series] = []
    for run in runs:
        refusals = []
        for candidate in series:
            try:
                judged = judge_runs(candidate.runs[-1].document, run.document, alpha, mode)
            except (Unjudgeable, InputError) as exc:
                refusals.append(f"not comparable with {candidate.runs[-1].label}: {exc}")
                continue
            _extend(candidate, run, judged)
            break
        else:
            started = Series([run], apart=refusals[-1] if refusals else None)
            _extend(started, run, None)
            series.append(started)
    for one in series:
        if len(one.runs) >= 3:
            one.span = _span(one, alpha, mode)
        _rename(one)
    return series


def _rename(series: Series) -> None:
    """Key every task by its name where the series mixes in ``eval_info.json`` (whose tasks
    match by name only): the points of one task under its id and its name become one row."""
    if not any(r.document["run"].get("source") == eval_info.SOURCE for r in series.runs):
        return
    merged: dict[str, list[Point | None]] = {}
    for key, points in series.tasks.items():
        name = series.aliases.get(key, key)
        before = merged.get(name, [None] * len(points))
        merged[name] = [a if a is not None else b for a, b in zip(points, before, strict=True)]
    series.tasks = merged
    for step in [*series.steps, *([series.span] if series.span else [])]:
        step.flagged = {series.aliases.get(k, k): why for k, why in step.flagged.items()}


def _span(series: Series, alpha: float, mode: str) -> Step | None:
    """The gate's word on the first run against the last."""
    first, last = series.runs[0], series.runs[-1]
    try:
        judged = judge_runs(first.document, last.document, alpha, mode)
    except (Unjudgeable, InputError) as exc:
        return Step(first.label, last.label, f"not judged: {exc}", [], {})
    flagged = {}
    for task in judged.verdicts:
        mark, why = _step(judged, task)
        if mark:
            flagged[task] = why
    return Step(first.label, last.label, judged.lines()[-1], judged.notes, flagged)


def _extend(series: Series, run: Run, judged: Judgement | None) -> None:
    """Add ``run`` to ``series``: its points, by task id (``_rename`` names them where the
    series mixes in ``eval_info.json``), marked by the step the gate judged."""
    if judged is not None:
        series.runs.append(run)
        for points in series.tasks.values():
            points.append(None)
    judged_as = task_name(*(r.document for r in series.runs[-2:]))  # as judge_runs named it
    flagged: dict[str, str] = {}
    for result in load_results(run.document):
        point = Point(result.successes, result.n_episodes, result.error)
        key = result.task.id
        series.aliases[key] = result.task.name
        point.mark, point.why = _step(judged, judged_as(result))
        if point.mark:
            flagged[key] = point.why
        series.tasks.setdefault(key, [None] * len(series.runs))[-1] = point
    if judged is not None:
        line = judged.lines()[-1]
        series.steps.append(Step(series.runs[-2].label, run.label, line, judged.notes, flagged))


def _step(judged: Judgement | None, key: str) -> tuple[str, str]:
    """The mark and the words of one task's step (none for a series' first run)."""
    if judged is None:
        return "", ""
    verdict = judged.verdicts.get(key)
    problem = judged.problems.get(key)
    if problem is not None:
        return "unjudged", verdict_text(None, problem, True)
    if verdict is None:
        return "", "new in this run" if key in judged.only_new else ""
    kind = verdict_kind(verdict)
    return (kind if kind in MARKS else ""), verdict_text(verdict, None, True)


def markdown(series: list[Series], order_note: str | None) -> str:
    """The history as Markdown tables (for ``$GITHUB_STEP_SUMMARY``): a table per series, the
    overall row first, and each step's closing line."""
    lines = [f"_{order_note}._", ""] if order_note else []
    for number, one in enumerate(series, 1):
        runs = ", ".join(r.label for r in one.runs)
        lines.append(f"### Series {number}: {len(one.runs)} runs ({runs})")
        if one.apart:
            lines += ["", f"Shown apart: {one.apart}"]
        head = ["task", *(f"`{r.label}`" for r in one.runs)]
        lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        overall = ["**overall**", *(p.text() for p in one.overall)]
        lines.append("| " + " | ".join(overall) + " |")
        for task in one.changed():
            cells = ["–" if p is None else p.text() for p in one.tasks[task]]
            lines.append("| " + " | ".join([f"`{task}`", *cells]) + " |")
        lines.append("")
        for step in one.steps:
            lines.append(_step_line("", step))
        if one.span is not None:
            lines.append(_step_line("first to last: ", one.span))
        lines.append("")
    marks = ", ".join(f"{mark} {kind}" for kind, mark in MARKS.items())
    lines.append(f"Each cell: success rate [95% interval]; marks the gate's step from the run "
                 f"before: {marks}.")  # fmt: skip
    return "\n".join(lines) + "\n"


def _step_line(prefix: str, step: Step) -> str:
    flagged = "; ".join(f"`{t}` {why}" for t, why in sorted(step.flagged.items()))
    return f"- {prefix}`{step.before}` → `{step.after}`: {step.line}" + (
        f" ({flagged})" if flagged else ""
    )
