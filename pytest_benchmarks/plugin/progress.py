"""A running task's events while it runs (``plugin.events``): that it started and stopped
(which the watchdog dates), its progress every few seconds, and notices the user must see at
once (a journal that cannot be written, a task that cannot be stopped from inside)."""

from __future__ import annotations

import pytest

from pytest_benchmarks.core.results import TaskResult, progress_text
from pytest_benchmarks.engine.progress import Progress
from pytest_benchmarks.plugin import events


class ProgressReporter(Progress):
    """One task's events; progress at most every ``interval_s`` seconds."""

    def __init__(self, item: pytest.Item, task_id: str, interval_s: float) -> None:
        super().__init__(interval_s)
        self.item = item
        self.task_id = task_id

    def start(self) -> None:
        """The task starts now, in this process."""
        super().start()
        events.send(self.item, events.TaskStarted.here(self.task_id))

    def end(self) -> None:
        events.send(self.item, events.TaskStopped(self.task_id))

    def notice(self, line: str) -> None:
        """A line the user sees now, not at the session's end."""
        events.send(self.item, events.Notice(self.task_id, line))

    def emit(self, result: TaskResult, elapsed_s: float) -> None:
        progress = events.Progress(
            self.task_id, result.n_episodes, result.planned, result.successes, elapsed_s
        )
        events.send(self.item, progress)


def progress_line(progress: events.Progress, worker: str | None) -> str:
    """``[gw0] metaworld/push-v3: 20/50 episodes, 18 successes, 31 s``."""
    prefix = f"[{worker}] " if worker else ""
    p = progress
    return prefix + progress_text(p.task, p.done, p.planned, p.successes, p.elapsed_s)
