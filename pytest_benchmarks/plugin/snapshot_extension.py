"""The syrupy extension behind ``assert evaluate() == snapshot``: where a task's snapshot file
lives, how it is written and read back; its comparison is the regression gate's decision
(``metrics.gate``), never equality.

Files are named by the task's stable id, never by xdist node ids, so workers write disjoint files
and shards of one suite share a snapshot directory. Snapshots are never discovered as "unused":
a run that covers only some tasks (``-k``, ``--benchmark-task``, ``--benchmark-env``, a CI
shard) must not report or delete the others. Remove a dropped task's file by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from syrupy.data import SnapshotCollection, SnapshotCollections
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode
from syrupy.location import PyTestLocation

from pytest_benchmarks.core.files import write_atomic
from pytest_benchmarks.core.results import TaskResult
from pytest_benchmarks.core.tasks import TaskRef
from pytest_benchmarks.metrics import gate
from pytest_benchmarks.metrics.gate import Comparison
from pytest_benchmarks.metrics.snapshots import (
    ABSENT,
    DIRNAME,
    NAMES,
    REMEDY,
    SnapshotFormatError,
    document,
    dumps,
    file_stem,
    keep_reason,
    read,
)


@dataclass(frozen=True)
class GateContext:
    """How to judge: the gate mode and level, this run's policy and settings, the task's family
    (the tasks of its test that can fail, and Tarone's K), and syrupy's update flag."""

    mode: str = "stat"
    alpha: float = 0.05
    update: bool = False
    replace: bool = False
    settings: dict[str, Any] = field(default_factory=dict)
    policy: dict[str, Any] = field(default_factory=dict)
    family: frozenset[str] = frozenset()
    k: int = 1
    #: Tasks of the test function with a snapshot: the level a blind task's advice assumes.
    compared: int = 1
    #: --benchmark-sequential: the plan's episode indices in order (empty: the fixed gate).
    order: tuple[int, ...] = ()
    #: The environment this run's task ran in (``run_info.fingerprint``), stored and compared.
    fingerprint: dict[str, Any] = field(default_factory=dict)


def benchmark_param(item: pytest.Item) -> Any:
    """The ``benchmark_task`` parameter of a test item, or None."""
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("benchmark_task") if callspec else None


def task_of(test_location: PyTestLocation) -> TaskRef:
    """The task a benchmark test runs, from its ``benchmark_task`` parameter."""
    task = benchmark_param(test_location.item)
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
        #: Why --snapshot-update left the stored snapshot in place.
        self.kept: str | None = None

    def serialize(self, data: Any, **_: Any) -> str:
        if not isinstance(data, TaskResult):
            raise TypeError(f"task snapshots store a TaskResult, not {type(data).__name__}")
        return dumps(document(data, self.context.settings, self.context.fingerprint))

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        path = Path(test_location.filepath)
        test = getattr(test_location.item, "originalname", test_location.methodname)
        if test_location.classname:
            test = f"{test_location.classname}.{test}"
        return str(path.parent / DIRNAME / path.stem / test)

    @classmethod
    def get_file_basename(cls, *, test_location: PyTestLocation, index: Any) -> str:
        """One file per task and test: a second comparison in one test (syrupy's index 1, 2...)
        is judged against the same snapshot; a name given with ``snapshot(name=...)`` is kept."""
        suffix = f"[{index}]" if isinstance(index, str) else ""
        return file_stem(task_of(test_location).id, suffix)

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
            self.kept = keep_reason(
                str(snapshot_data), str(serialized_data), ctx.settings, ctx.replace
            )
            # Updating stores this run's outcome exactly, whenever it differs at all.
            return self.kept is not None or bool(serialized_data == snapshot_data)
        if ctx.mode == "off":
            return True
        new = read(str(serialized_data))
        stored = read(str(snapshot_data))
        if stored.id != new.id:
            raise SnapshotFormatError(f"holds task {stored.id!r}, not {new.id!r}")
        found = gate.pair(
            gate.Side(stored.episodes, stored.settings, stored.fingerprint, stored.policy),
            gate.Side(new.episodes, ctx.settings, ctx.fingerprint, ctx.policy),
            NAMES, REMEDY, ABSENT,
        )  # fmt: skip
        size = len(ctx.family) if new.id in ctx.family else ctx.k
        if ctx.order:
            self.comparison = gate.compare_sequential(
                new.id, stored.episodes, new.episodes, ctx.order, ctx.alpha, size,
                can_fail=new.id in ctx.family, notes=found.notes, pair=found.paired,
            )  # fmt: skip
            return not self.comparison.regression
        self.comparison = gate.compare(
            new.id, stored.episodes, new.episodes, ctx.alpha, size, ctx.mode,
            can_fail=new.id in ctx.family if ctx.mode == "stat" else None,
            notes=found.notes, session_tasks=ctx.compared, pair=found.paired,
        )  # fmt: skip
        return not self.comparison.regression

    def diff_lines(self, serialized_data: Any, snapshot_data: Any) -> Any:
        if self.comparison is not None:
            yield self.comparison.line()
        else:
            yield from super().diff_lines(serialized_data, snapshot_data)
