"""The history as a page and as a chart: each series' runs in order, every task's rate drawn
with its interval over the runs, and the steps the gate flagged marked.

The page stays usable with many tasks: those with a flagged step are shown first, the others
are folded into one collapsed table past ``OPEN_AT_MOST`` tasks.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_benchmarks.core.files import write_atomic
from pytest_benchmarks.metrics.history import MARKS, Point, Series
from pytest_benchmarks.metrics.html_report import render

if TYPE_CHECKING:
    from matplotlib.axes import Axes

#: Tasks shown open in a series' table; past it, tasks with no flagged step are folded.
OPEN_AT_MOST = 20
#: The drawing's size per run, and its height, in pixels.
STEP_PX, HEIGHT_PX = 28, 44


@dataclass
class Drawing:
    """One task's rates over the runs as an inline SVG: its interval band, points and labels."""

    width: int
    band: str
    line: str
    points: list[tuple[float, float, str]]
    label: str


def drawing(points: list[Point | None], labels: list[str]) -> Drawing:
    """The SVG's shapes: x by run, y by rate (100% at the top)."""

    def y(rate: float) -> float:
        return 5 + (HEIGHT_PX - 10) * (1 - rate / 100)

    known = [(i, p) for i, p in enumerate(points) if p is not None and p.n and not p.error]
    xs = {i: STEP_PX / 2 + i * STEP_PX for i, _ in known}
    upper = [f"{xs[i]:.1f},{y(p.interval[1]):.1f}" for i, p in known]
    lower = [f"{xs[i]:.1f},{y(p.interval[0]):.1f}" for i, p in reversed(known)]
    words = []
    for i, point in enumerate(points):
        said = "no run of it" if point is None else point.text()
        words.append(f"{labels[i]} {said}" + (f" ({point.mark})" if point and point.mark else ""))
    return Drawing(
        width=max(STEP_PX * len(points), 60),
        band=" ".join(upper + lower),
        line=" ".join(f"{xs[i]:.1f},{y(p.rate or 0.0):.1f}" for i, p in known),
        points=[(xs[i], y(p.rate or 0.0), p.mark or "held") for i, p in known],
        label="; ".join(words),
    )


def page(title: str, series: list[Series], order_note: str | None, alpha: float, mode: str) -> str:
    """The whole history page, as text."""
    shown = []
    for one in series:
        names = [run.label for run in one.runs]
        tasks = []
        for task in one.changed():
            points = one.tasks[task]
            tasks.append((task, points, drawing(points, names), one.dropped(task)))
        flagged = [t for t in tasks if one.flagged(t[0])]
        fold = len(tasks) > OPEN_AT_MOST
        overall = one.overall
        shown.append({
            "series": one,
            "overall": (overall, drawing(list(overall), names)),
            "open": flagged if fold else tasks,
            "folded": tasks[len(flagged):] if fold else [],
        })  # fmt: skip
    return render(
        "history.html", title=title, shown=shown, order_note=order_note, alpha=alpha, mode=mode,
        marks=MARKS, height=HEIGHT_PX,
    )  # fmt: skip


def chart(series: list[Series], path: Path) -> None:
    """One panel per series: the overall rate with its interval band, and each task with a
    flagged step, its regressions marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(series), 1, figsize=(9, 3.2 * len(series)), squeeze=False)
    for number, (one, ax) in enumerate(zip(series, axes[:, 0], strict=True), 1):
        labels = [run.label for run in one.runs]
        _draw(ax, "overall", one.overall, "black", 2.0)
        flagged = [t for t in one.changed() if one.flagged(t)]
        for task in flagged[:8]:
            _draw(ax, task, one.tasks[task], None, 1.0)
        ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
        ax.set_ylim(-2, 102)
        ax.set_ylabel("success (%)")
        ax.set_title(f"series {number}" + (f" (apart: {one.apart[:80]})" if one.apart else ""),
                     fontsize=9, loc="left")  # fmt: skip
        ax.grid(axis="y", alpha=0.3)
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, fontsize=8)
    fig.tight_layout()
    image = io.BytesIO()  # drawn whole, then written atomically: never a half-written chart
    fig.savefig(image, dpi=100, format=path.suffix.lower().lstrip(".") or "png")
    plt.close(fig)
    write_atomic(path, image.getvalue())


def _draw(ax: Axes, name: str, points: list[Point | None] | list[Point], color: str | None,
          width: float) -> None:  # fmt: skip
    known = [(i, p) for i, p in enumerate(points) if p is not None and p.n and not p.error]
    xs = [i for i, _ in known]
    (line,) = ax.plot(xs, [p.rate or 0.0 for _, p in known], marker="o", color=color, lw=width,
                      label=name, markersize=3)  # fmt: skip
    ax.fill_between(xs, [p.interval[0] for _, p in known], [p.interval[1] for _, p in known],
                    color=line.get_color(), alpha=0.12)  # fmt: skip
    drops = [(i, p.rate or 0.0) for i, p in known if p.mark == "regression"]
    if drops:
        ax.plot(*zip(*drops, strict=True), "v", color="tab:red", markersize=9)
