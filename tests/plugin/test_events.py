"""The controller's one channel: each kind of event survives its wire form (what xdist carries
from a worker) and has the one controller method that handles it, whichever way it came."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from pytest_benchmarks.core.results import EpisodeRecord, TaskResult
from pytest_benchmarks.core.tasks import TaskRef
from pytest_benchmarks.metrics.gate import compare
from pytest_benchmarks.plugin import events
from pytest_benchmarks.plugin.controller import Controller


def _examples() -> list[events.Event]:
    episodes = [EpisodeRecord(i, 1000 + i, i, bool(i % 2), 9, 1.0, 1.0, 0.1) for i in range(4)]
    result = TaskResult(
        TaskRef("toy", "toy", "walk", 0, "walk the corridor"), episodes=episodes, planned=4
    )
    comparison = compare("toy/walk", episodes, episodes[:2], notes=["a note"])

    return [
        events.TaskStarted.here("toy/walk"),
        events.TaskStopped("toy/walk"),
        events.Progress("toy/walk", 2, 4, 1, 3.5),
        events.Notice("toy/walk", "journal: cannot write"),
        events.TaskEnded.of(result),
        events.Verdict("toy/walk", "test_x.py::test_gate", 2, asdict(comparison)),
        events.SnapshotKept("toy/walk", "toy/walk: snapshot kept: ..."),
    ]


@pytest.mark.parametrize("event", _examples(), ids=lambda e: e.kind)
def test_each_event_survives_its_wire_form_and_has_its_handler(event: events.Event):
    wired = json.loads(json.dumps(event.wire()))  # plain JSON, as xdist serialises it
    parsed = events.parse(wired)
    assert type(parsed) is type(event) and parsed.wire() == wired
    assert callable(getattr(Controller, f"on_{event.kind}"))


def test_every_kind_is_named_once_and_handled():
    assert set(events.KINDS) == {e.kind for e in _examples()}
    handlers = {name.removeprefix("on_") for name in dir(Controller) if name.startswith("on_")}
    assert handlers == set(events.KINDS)
    ended = next(e for e in _examples() if isinstance(e, events.TaskEnded))
    assert ended.result().episodes == TaskResult.from_row(ended.row).episodes
    verdict = next(e for e in _examples() if isinstance(e, events.Verdict))
    assert verdict.judged()[2].notes == ("a note",)
