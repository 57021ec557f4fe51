"""The facts of a run, as typed events: one set for every road a fact travels.

A task starts (in a process, with its pid and creation time, which the watchdog dates and
checks; on a Ray node, with the node's id), finishes an episode, says how far it is, tells the
user a line at once, and ends with its row; the gate gives its verdict and ``--snapshot-update``
says why it kept a snapshot. The same ``Event`` classes are written to the per-episode journal
(``metrics.journal``), carried on xdist's test reports to the controller (``plugin.events``)
and sent by a Ray node to the controller's mailbox (``cluster``); each reader handles a kind in
one method (``on_<kind>``), as pytest-xdist handles its workers' events (``worker_<name>``).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import psutil

from pytest_benchmarks.core.results import EpisodeRecord, TaskResult
from pytest_benchmarks.metrics.gate import Comparison


@dataclass(frozen=True)
class Event:
    """One fact about a task; ``kind`` names its handlers (``on_<kind>``)."""

    kind: ClassVar[str] = ""
    task: str = ""

    def wire(self) -> dict[str, Any]:
        """The event as plain JSON data."""
        return {"kind": self.kind, **asdict(self)}


@dataclass(frozen=True)
class TaskStarted(Event):
    """The task starts now in process ``pid`` (created at ``created``, which tells it apart
    from a later process that reuses the pid), or on Ray node ``node``; in the journal, ``row``
    is the task's row without its episodes (those it carries on follow as episodes)."""

    kind: ClassVar[str] = "task_started"
    pid: int = -1
    created: float = -1.0
    node: str = ""
    row: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def here(cls, task: str, **more: Any) -> TaskStarted:
        return cls(task, os.getpid(), psutil.Process().create_time(), **more)


@dataclass(frozen=True)
class EpisodeFinished(Event):
    """One finished episode's record (``EpisodeRecord``) and the policy that ran it."""

    kind: ClassVar[str] = "episode_finished"
    episode: dict[str, Any] = field(default_factory=dict)
    policy: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, task: str, record: EpisodeRecord, policy: dict[str, Any]) -> EpisodeFinished:
        return cls(task, asdict(record), policy)

    def record(self) -> EpisodeRecord:
        return EpisodeRecord(**self.episode)


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
    """The task's row (``TaskResult.to_row``), finished or not; in the journal without its
    episodes, which have lines of their own."""

    kind: ClassVar[str] = "task_ended"
    row: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, result: TaskResult) -> TaskEnded:
        return cls(result.task.id, result.to_row())

    def result(self) -> TaskResult:
        return TaskResult.from_row({"episodes": [], **self.row})


@dataclass(frozen=True)
class TaskFailed(Event):
    """What stopped a task outside its episodes (its policy could not be built, its node's
    code failed): ``line`` for the user, ``trace`` for the report."""

    kind: ClassVar[str] = "task_failed"
    line: str = ""
    policy: bool = False
    trace: str = ""


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
    for cls in (
        TaskStarted,
        EpisodeFinished,
        TaskStopped,
        Progress,
        Notice,
        TaskEnded,
        TaskFailed,
        Verdict,
        SnapshotKept,
    )
}


def parse(data: dict[str, Any]) -> Event:
    """An event from its wire form."""
    fields = dict(data)
    return KINDS[fields.pop("kind")](**fields)
