"""The regression gate: ``assert evaluate() == snapshot`` judges a task against its baseline.

``evaluate()`` returns a GatedResult, a TaskResult whose comparison with syrupy's ``snapshot``
fixture is handed to ``check_against_snapshot``; TaskResult itself stays plain data.

A syrupy extension stores one JSON file per task, named by the task's stable id
(``__benchmark_snapshots__/<test module>/<test>/<benchmark>/<task>.json``), never by xdist
node ids, so workers write disjoint files and shards of one suite share a snapshot directory.
It compares by statistics, not equality: a run fails only on a significant drop (see
``stats``). Snapshots are never discovered as "unused": a run that covers only some tasks
(``-k``, ``--benchmark-task``, ``--benchmark-env``, a CI shard) must not report or delete the
others. Remove a dropped task's file by hand.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.data import SnapshotCollection, SnapshotCollections
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode
from syrupy.location import PyTestLocation

from pytest_benchmarks.core.files import write_atomic
from pytest_benchmarks.core.results import EpisodeRecord, TaskResult
from pytest_benchmarks.core.tasks import TaskRef
from pytest_benchmarks.metrics.stats import Comparison, compare
from pytest_benchmarks.plugin.session import GATE, get_state

_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]")
#: Beside syrupy's own ``__snapshots__``, not inside it: syrupy's default extension claims every
#: file in its directory that no extension used, and would report (and with --snapshot-update
#: delete) the snapshots of tasks a partial run left out.
DIRNAME = "__benchmark_snapshots__"
UPDATE_HINT = "store it with --snapshot-update"


class SnapshotFormatError(ValueError):
    """A snapshot file that is not a task snapshot this version can read."""


@dataclass(frozen=True)
class GateContext:
    """How to judge: the gate mode, the level, the tasks sharing it, and syrupy's update flag."""

    mode: str = "stat"
    alpha: float = 0.05
    tasks_compared: int = 1
    update: bool = False


def document(result: TaskResult) -> dict[str, Any]:
    """What a snapshot keeps: the counts and each episode's outcome, never timings."""
    return {
        "id": result.task.id,
        "env": result.task.env,
        "suite": result.task.suite,
        "task": result.task.task,
        "successes": result.successes,
        "n_episodes": result.n_episodes,
        "pc_success": result.pc_success,
        "policy": result.policy,
        "episodes": [
            {
                "index": e.index,
                "seed": e.seed,
                "init_state": e.init_state,
                "success": e.success,
                "steps": e.steps,
            }
            for e in result.episodes
        ],
    }


def dumps(doc: dict[str, Any]) -> str:
    """Indented JSON with one line per episode, so that a changed episode is a one-line diff."""
    doc = dict(doc)
    episodes = doc.pop("episodes")
    head = json.dumps(doc, indent=2)[: -len("\n}")]
    rows = ",\n".join(f"    {json.dumps(e)}" for e in episodes)
    body = f"[\n{rows}\n  ]" if episodes else "[]"
    return f'{head},\n  "episodes": {body}\n}}\n'


def parse(text: str) -> tuple[str, list[EpisodeRecord]]:
    """The task id and episode outcomes of a snapshot; SnapshotFormatError if it is not one."""
    try:
        doc = json.loads(text)
        episodes = [
            EpisodeRecord(
                index=int(e["index"]),
                seed=int(e["seed"]),
                init_state=int(e["init_state"]),
                success=bool(e["success"]),
                steps=int(e["steps"]),
                sum_reward=0.0,
                max_reward=0.0,
                duration_s=0.0,
            )
            for e in doc["episodes"]
        ]
        return str(doc["id"]), episodes
    except json.JSONDecodeError as exc:
        raise SnapshotFormatError(f"not valid JSON ({exc})") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise SnapshotFormatError(f"not a task snapshot (bad or missing field {exc})") from None


def task_of(test_location: PyTestLocation) -> TaskRef:
    """The task a benchmark test runs, from its ``benchmark_task`` parameter."""
    task = _param(test_location.item)
    if not isinstance(task, TaskRef):
        raise TypeError(
            f"{test_location.nodeid}: task snapshots need a test marked "
            "@pytest.mark.benchmark_env(NAME)"
        )
    return task


class BenchmarkSnapshotExtension(SingleFileSnapshotExtension):
    """One JSON file per task, compared by the regression gate instead of by equality."""

    _write_mode = WriteMode.TEXT
    file_extension = "json"
    write_immediately = True

    def __init__(self) -> None:
        self.context = GateContext()
        self.comparison: Comparison | None = None

    def serialize(self, data: Any, **_: Any) -> str:
        if not isinstance(data, TaskResult):
            raise TypeError(f"task snapshots store a TaskResult, not {type(data).__name__}")
        return dumps(document(data))

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        path = Path(test_location.filepath)
        test = getattr(test_location.item, "originalname", test_location.methodname)
        if test_location.classname:
            test = f"{test_location.classname}.{test}"
        return str(path.parent / DIRNAME / path.stem / test)

    @classmethod
    def get_file_basename(cls, *, test_location: PyTestLocation, index: Any) -> str:
        parts = [_UNSAFE.sub("_", part) for part in task_of(test_location).id.split("/")]
        suffix = f"[{index}]" if isinstance(index, str) else f".{index}" if index else ""
        return "/".join(parts) + _UNSAFE.sub("_", suffix)

    @classmethod
    def matches_test_location(
        cls, *, test_location: PyTestLocation, snapshot_location: str
    ) -> bool:
        return Path(snapshot_location).is_relative_to(cls.dirname(test_location=test_location))

    def discover_snapshots(
        self, *, test_location: PyTestLocation, ignore_extensions: list[str] | None = None
    ) -> SnapshotCollections:
        """Nothing: a task's snapshot is never unused because this run left the task out."""
        return SnapshotCollections()

    @classmethod
    def write_snapshot_collection(
        cls, *, snapshot_collection: SnapshotCollection, name_order: Any = None
    ) -> None:
        """Replace the file atomically: a concurrent reader sees the old or the new snapshot."""
        data = next(iter(snapshot_collection)).data
        write_atomic(Path(snapshot_collection.location), str(data))

    def matches(self, *, serialized_data: Any, snapshot_data: Any) -> bool:
        ctx = self.context
        if ctx.update:
            # Updating stores this run's outcome exactly, whenever it differs at all.
            return bool(serialized_data == snapshot_data)
        if ctx.mode == "off":
            return True
        task, new = parse(str(serialized_data))
        stored, old = parse(str(snapshot_data))
        if stored != task:
            raise SnapshotFormatError(f"holds task {stored!r}, not {task!r}")
        self.comparison = compare(task, old, new, ctx.alpha, ctx.tasks_compared, ctx.mode)
        return not self.comparison.regression

    def diff_lines(self, serialized_data: Any, snapshot_data: Any) -> Any:
        if self.comparison is not None:
            yield self.comparison.line()
        else:
            yield from super().diff_lines(serialized_data, snapshot_data)


def _param(item: pytest.Item) -> Any:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("benchmark_task") if callspec else None


def _location(item: pytest.Item) -> str:
    return BenchmarkSnapshotExtension.get_location(test_location=PyTestLocation(item), index=0)


def tasks_compared(item: pytest.Item) -> int:
    """Tasks of this test, in this session's selection, that have a snapshot (Bonferroni's m).

    Computed once per test function from the collected items, so every xdist worker, which
    collects the whole session, reaches the same number.
    """
    state = get_state(item.config)
    key = f"{item.path}::{getattr(item, 'originalname', item.name)}"
    if key not in state.gate_counts:
        name = getattr(item, "originalname", None)
        siblings = {
            task.id: i
            for i in item.session.items
            if i.path == item.path
            and getattr(i, "originalname", None) == name
            and isinstance(task := _param(i), TaskRef)
        }
        found = sum(Path(_location(i)).is_file() for i in siblings.values())
        state.gate_counts[key] = max(1, found)
    return state.gate_counts[key]


def check_against_snapshot(result: TaskResult, assertion: SnapshotAssertion) -> bool:
    """``result == snapshot``: True when the gate passes; otherwise the test fails with one line.

    With ``--snapshot-update`` the result is stored (rewritten only if its outcome changed).
    """
    item = assertion.test_location.item
    settings = get_state(item.config).settings
    update = bool(assertion.update_snapshots)
    if settings.gate == "off" and not update:
        return True
    gated = assertion.use_extension(BenchmarkSnapshotExtension)
    extension = gated.extension
    assert isinstance(extension, BenchmarkSnapshotExtension)
    extension.context = GateContext(settings.gate, settings.alpha, tasks_compared(item), update)
    passed = gated == result
    execution = gated.executions[max(gated.executions)]
    if extension.comparison is not None:
        item.stash[GATE] = extension.comparison
    if passed:
        return True
    where = execution.snapshot_location
    if execution.exception is not None:
        pytest.fail(f"{result.task.id}: snapshot {where}: {execution.exception}", pytrace=False)
    if extension.comparison is not None:
        pytest.fail(f"{extension.comparison.line()} (if intended, {UPDATE_HINT})", pytrace=False)
    pytest.fail(f"{result.task.id}: no snapshot at {where}; {UPDATE_HINT}", pytrace=False)


class GatedResult(TaskResult):
    """A TaskResult that, compared with syrupy's ``snapshot``, asks the gate for its verdict."""

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SnapshotAssertion):
            return check_against_snapshot(self, other)
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def of(cls, result: TaskResult) -> GatedResult:
        return cls(**{f.name: getattr(result, f.name) for f in fields(result)})
