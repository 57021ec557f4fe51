"""What a task's process tells the controller, carried on xdist's test reports.

The events themselves (``metrics.events``) are the run's one set of facts, which the journal
and a Ray node's mailbox carry too. Here they ride to the controller: a running task says it
started (with its pid and creation time, which the watchdog dates and checks), how far it is,
and notices the user must see at once; a test's report carries the task's row when it ended,
the gate's verdict and why ``--snapshot-update`` kept a snapshot; a worker's end hands over the
rows no report carried; at the session's end the journal gives the rows of tasks whose process
was killed. The controller handles each kind in one method (``on_<kind>``), whichever way it
came, as pytest-xdist handles its workers' events (``worker_<name>``).

The channel is the test report, the one thing xdist carries from a worker to the controller
while a test runs: a list of events on one report attribute (plain JSON data, which xdist
serialises). Events sent while a test runs ride on a report of ``when="event"``, which the
plugin gives no test status, so it never counts as a test.
"""

from __future__ import annotations

from dataclasses import asdict

import pytest

from pytest_benchmarks.metrics.events import (
    Event,
    Notice,
    Progress,
    SnapshotKept,
    TaskEnded,
    TaskStarted,
    TaskStopped,
    Verdict,
    parse,
)
from pytest_benchmarks.plugin.session import GATE, KEPT, PENDING

__all__ = [
    "REPORTED",
    "Event",
    "Notice",
    "Progress",
    "SnapshotKept",
    "TaskEnded",
    "TaskStarted",
    "TaskStopped",
    "Verdict",
    "attach",
    "attach_test_events",
    "parse",
    "read",
    "send",
]

#: The report attribute that holds a report's events.
ATTRIBUTE = "benchmark_events"
#: ``when`` of a report that carries events only (no test phase).
EVENT = "event"
#: The kinds a report carries (the controller has an ``on_<kind>`` for each).
REPORTED = frozenset(
    e.kind for e in (TaskStarted, TaskStopped, Progress, Notice, TaskEnded, Verdict, SnapshotKept)
)


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
