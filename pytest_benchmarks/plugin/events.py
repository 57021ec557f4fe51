"""What a task's process tells the controller, as typed events on one channel.

A running task says it started (with its pid and creation time, which the watchdog dates and
checks), how far it is, and notices the user must see at once; a test's report carries the
task's row when it ended, the gate's verdict and why ``--snapshot-update`` kept a snapshot; a
worker's end hands over the rows no report carried; at the session's end the journal gives the
rows of tasks whose process was killed. Every one of these is an ``Event`` of a ``kind``, and
the controller handles each kind in one method (``on_<kind>``), whichever way it came, as
pytest-xdist handles its workers' events (``worker_<name>``).

The channel is the test report, the one thing xdist carries from a worker to the controller
while a test runs: a list of events on one report attribute (plain JSON data, which xdist
serialises). Events sent while a test runs ride on a report of ``when="event"``, which the
plugin gives no test status, so it never counts as a test.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import psutil
import pytest

from pytest_benchmarks.core.results import TaskResult
from pytest_benchmarks.metrics.gate import Comparison
from pytest_benchmarks.plugin.session import GATE, KEPT, PENDING

#: The report attribute that holds a report's events.
ATTRIBUTE = "benchmark_events"
#: ``when`` of a report that carries events only (no test phase).
EVENT = "event"


@dataclass(frozen=True)
class Event:
    """One fact about a task; ``kind`` names the controller's handler (``on_<kind>``)."""

    kind: ClassVar[str] = ""
    task: str = ""

    def wire(self) -> dict[str, Any]:
        """The event as plain JSON data."""
        return {"kind": self.kind, **asdict(self)}


@dataclass(frozen=True)
class TaskStarted(Event):
    """The task starts now in process ``pid`` (created at ``created``, which tells it apart
    from a later process that reuses the pid)."""

    kind: ClassVar[str] = "task_started"
    pid: int = -1
    created: float = -1.0

    @classmethod
    def here(cls, task: str) -> TaskStarted:
        return cls(task, os.getpid(), psutil.Process().create_time())


@dataclass(frozen=True)
class TaskStopped(Event):
    """The task's process is done with it (finished, failed or interrupted)."""

    kind: ClassVar[str] = "task_stopped"


@dataclass(frozen=True)
class Progress(Event):
    kind: ClassVar[str] = "progress"
    done: int = 0
    planned: int = 0
    successes: int = 0
    elapsed_s: float = 0.0


@dataclass(frozen=True)
class Notice(Event):
    """A line the user sees now, not at the session's end."""

    kind: ClassVar[str] = "notice"
    line: str = ""


@dataclass(frozen=True)
class TaskEnded(Event):
    """The task's row (``TaskResult.to_row``): its episodes, and its error if it failed."""

    kind: ClassVar[str] = "task_ended"
    row: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, result: TaskResult) -> TaskEnded:
        return cls(result.task.id, result.to_row())

    def result(self) -> TaskResult:
        return TaskResult.from_row(self.row)


@dataclass(frozen=True)
class Verdict(Event):
    """The gate's verdict on the task at Holm's first step, for its test function's family
    (its key and size): the controller applies the later steps (``gate.judge_families``)."""

    kind: ClassVar[str] = "verdict"
    family: str = ""
    family_size: int = 0
    comparison: dict[str, Any] = field(default_factory=dict)

    def judged(self) -> tuple[str, int, Comparison]:
        return self.family, self.family_size, Comparison.of(self.comparison)


@dataclass(frozen=True)
class SnapshotKept(Event):
    """Why --snapshot-update left the task's stored snapshot in place."""

    kind: ClassVar[str] = "snapshot_kept"
    line: str = ""


KINDS: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (TaskStarted, TaskStopped, Progress, Notice, TaskEnded, Verdict, SnapshotKept)
}


def parse(data: dict[str, Any]) -> Event:
    """An event from its wire form."""
    fields = dict(data)
    return KINDS[fields.pop("kind")](**fields)


def attach(report: pytest.TestReport, events: list[Event]) -> None:
    """Put ``events`` on ``report`` (after any it carries already)."""
    if events:
        carried = getattr(report, ATTRIBUTE, None) or []
        setattr(report, ATTRIBUTE, [*carried, *(e.wire() for e in events)])


def read(report: pytest.TestReport) -> list[Event]:
    """The events a report carries, in order."""
    return [parse(data) for data in getattr(report, ATTRIBUTE, None) or []]


def send(item: pytest.Item, event: Event) -> None:
    """Send ``event`` now, while the item's test runs: a report of its own through the
    report hook, which xdist forwards from a worker to the controller."""
    report = pytest.TestReport(
        nodeid=item.nodeid,
        location=item.location,
        keywords={},
        outcome="passed",
        longrepr=None,
        when=EVENT,  # type: ignore[arg-type]
    )
    attach(report, [event])
    item.ihook.pytest_runtest_logreport(report=report)


def attach_test_events(report: pytest.TestReport, item: pytest.Item) -> None:
    """Put on a test's report what the test left in its item's stash: the task's row on
    whichever report comes first, the verdict and the kept note on the call phase's."""
    found: list[Event] = []
    result = item.stash.get(PENDING, None)
    if result is not None:
        found.append(TaskEnded.of(result))
        del item.stash[PENDING]
    if report.when == "call":
        gated = item.stash.get(GATE, None)
        if gated is not None:
            family, size, comparison = gated
            found.append(Verdict(comparison.task, family, size, asdict(comparison)))
        kept = item.stash.get(KEPT, None)
        if kept is not None:
            found.append(SnapshotKept(line=kept))
    attach(report, found)
