"""Progress of a running task: a line every few seconds, from whichever process runs it.

Progress travels as a pytest report with ``when="progress"`` through the ordinary report hook,
so it reaches the terminal the same way with or without xdist (a worker's reports are sent to
the controller, which prints whole lines); the plugin gives these reports no test status, so
they never count as tests.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from pytest_benchmarks.core.results import TaskResult

PROGRESS = "progress"


class ProgressReporter:
    """Reports a running task's episodes and successes at most every ``interval_s`` seconds."""

    def __init__(self, item: pytest.Item, interval_s: float) -> None:
        self.item = item
        self.interval_s = interval_s
        self.started = self.last = time.monotonic()

    def __call__(self, result: TaskResult) -> None:
        now = time.monotonic()
        if now - self.last < self.interval_s:
            return
        self.last = now
        report = pytest.TestReport(
            nodeid=self.item.nodeid,
            location=self.item.location,
            keywords={},
            outcome="passed",
            longrepr=None,
            when=PROGRESS,  # type: ignore[arg-type]
        )
        report.benchmark_progress = {  # type: ignore[attr-defined]
            "task": result.task.id,
            "done": result.n_episodes,
            "planned": result.planned,
            "successes": result.successes,
            "elapsed_s": now - self.started,
        }
        self.item.ihook.pytest_runtest_logreport(report=report)


def progress_line(progress: dict[str, Any], worker: str | None) -> str:
    """``[gw0] metaworld/push-v3: 20/50 episodes, 18 successes, 31 s``."""
    prefix = f"[{worker}] " if worker else ""
    return (
        f"{prefix}{progress['task']}: {progress['done']}/{progress['planned']} episodes, "
        f"{progress['successes']} successes, {progress['elapsed_s']:.0f} s"
    )
