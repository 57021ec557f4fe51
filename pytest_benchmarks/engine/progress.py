"""A running task's progress, at most every few seconds (``--benchmark-progress``): the one
timing the plugin's progress events and the API's progress lines share."""

from __future__ import annotations

import time

from pytest_benchmarks.core.results import TaskResult


class Progress:
    """Sees the task's result after every episode and ``emit``s it, with the seconds since the
    task started, when ``interval_s`` has passed since the last time (0: every episode)."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.started = self.last = time.monotonic()

    def start(self) -> None:
        """A task starts now."""
        self.started = self.last = time.monotonic()

    def __call__(self, result: TaskResult) -> None:
        now = time.monotonic()
        if now - self.last < self.interval_s:
            return
        self.last = now
        self.emit(result, now - self.started)

    def emit(self, result: TaskResult, elapsed_s: float) -> None:
        raise NotImplementedError
