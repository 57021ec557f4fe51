"""What a running task tells the controller while it runs: that it started and ended (which the
watchdog dates), its progress every few seconds, and notices the user must see at once (a
journal that cannot be written, a task that cannot be stopped from inside).

Each travels as a pytest report with ``when="progress"`` and a ``benchmark_event`` through the
ordinary report hook, so it reaches the controller the same way with or without xdist (xdist
sends a worker's reports to the controller, with the worker's node); the plugin gives these
reports no test status, so they never count as tests.
"""

from __future__ import annotations

import os
import time
from typing import Any

import psutil
import pytest

from pytest_benchmarks.core.results import TaskResult, progress_text

PROGRESS = "progress"


def process_identity() -> dict[str, Any]:
    """This process's pid and creation time: what tells it apart from a later process that
    reuses the pid."""
    return {"pid": os.getpid(), "created": psutil.Process().create_time()}


class ProgressReporter:
    """One task's events; progress at most every ``interval_s`` seconds."""

    def __init__(self, item: pytest.Item, task_id: str, interval_s: float) -> None:
        self.item = item
        self.task_id = task_id
        self.interval_s = interval_s
        self.started = self.last = time.monotonic()

    def send(self, kind: str, **fields: Any) -> None:
        report = pytest.TestReport(
            nodeid=self.item.nodeid,
            location=self.item.location,
            keywords={},
            outcome="passed",
            longrepr=None,
            when=PROGRESS,  # type: ignore[arg-type]
        )
        report.benchmark_event = {"kind": kind, "task": self.task_id, **fields}  # type: ignore[attr-defined]
        self.item.ihook.pytest_runtest_logreport(report=report)

    def start(self) -> None:
        """The task starts now, in this process."""
        self.send("start", **process_identity())

    def end(self) -> None:
        self.send("end")

    def notice(self, line: str) -> None:
        """A line the user sees now, not at the session's end."""
        self.send("notice", line=line)

    def __call__(self, result: TaskResult) -> None:
        now = time.monotonic()
        if now - self.last < self.interval_s:
            return
        self.last = now
        self.send(
            "progress",
            done=result.n_episodes,
            planned=result.planned,
            successes=result.successes,
            elapsed_s=now - self.started,
        )


def progress_line(progress: dict[str, Any], worker: str | None) -> str:
    """``[gw0] metaworld/push-v3: 20/50 episodes, 18 successes, 31 s``."""
    prefix = f"[{worker}] " if worker else ""
    fields = ("task", "done", "planned", "successes", "elapsed_s")
    return prefix + progress_text(*(progress[f] for f in fields))
