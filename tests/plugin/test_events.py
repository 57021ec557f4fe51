"""The run's one set of events: each kind survives its wire form (what xdist carries from a
worker and the journal writes) and each road that carries it has the one method that handles
it, whichever way it came."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from pytest_benchmarks.cluster.ray_pool import RayPool
from pytest_benchmarks.core.results import EpisodeRecord, TaskResult
from pytest_benchmarks.core.tasks import TaskRef
from pytest_benchmarks.metrics import events
from pytest_benchmarks.metrics.gate import compare
from pytest_benchmarks.plugin import events as reported
from pytest_benchmarks.plugin.controller import Controller


def _examples() -> list[events.Event]:
    episodes = [EpisodeRecord(i, 1000 + i, i, bool(i % 2), 9, 1.0, 1.0, 0.1) for i in range(4)]
    result = TaskResult(
        TaskRef("toy", "toy", "walk", 0, "walk the corridor"), episodes=episodes, planned=4
    )
    comparison = compare("toy/walk", episodes, episodes[:2], notes=["a note"])

    return [
        events.TaskStarted.here("toy/walk"),
        events.EpisodeFinished.of("toy/walk", episodes[1], {"source": "module"}),
        events.TaskStopped("toy/walk"),
        events.Progress("toy/walk", 2, 4, 1, 3.5),
        events.Notice("toy/walk", "journal: cannot write"),
        events.TaskEnded.of(result),
        events.TaskFailed("toy/walk", "PolicyError: no such module", policy=True),
        events.Verdict("toy/walk", "test_x.py::test_gate", 2, asdict(comparison)),
        events.SnapshotKept("toy/walk", "toy/walk: snapshot kept: ..."),
    ]


@pytest.mark.parametrize("event", _examples(), ids=lambda e: e.kind)
def test_each_event_survives_its_wire_form(event: events.Event):
    wired = json.loads(json.dumps(event.wire()))  # plain JSON, as xdist serialises it
    parsed = events.parse(wired)
    assert type(parsed) is type(event) and parsed.wire() == wired


def _handled(reader: type) -> set[str]:
    prefix = "on_" if reader is Controller else "_on_"
    return {name.removeprefix(prefix) for name in dir(reader) if name.startswith(prefix)}


def test_every_kind_is_named_once_and_each_road_handles_what_it_carries():
    """The controller handles what the reports carry, the Ray pool what a node sends; the
    journal's own lines are events of the same kinds (tests/plugin/test_journal.py)."""
    assert set(events.KINDS) == {e.kind for e in _examples()}
    assert _handled(Controller) == reported.REPORTED
    ray_kinds = {"task_started", "episode_finished", "notice", "task_ended", "task_failed"}
    assert _handled(RayPool) == ray_kinds
    journaled = {"task_started", "episode_finished", "task_ended"}
    assert reported.REPORTED | ray_kinds | journaled == set(events.KINDS)
    ended = next(e for e in _examples() if isinstance(e, events.TaskEnded))
    assert ended.result().episodes == TaskResult.from_row(ended.row).episodes
    verdict = next(e for e in _examples() if isinstance(e, events.Verdict))
    assert verdict.judged()[2].notes == ("a note",)
    finished = next(e for e in _examples() if isinstance(e, events.EpisodeFinished))
    assert finished.record() == ended.result().episodes[1]
