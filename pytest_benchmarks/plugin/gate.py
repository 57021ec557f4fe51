"""The regression gate: ``assert evaluate() == snapshot`` judges a task against its baseline.

``evaluate()`` returns a GatedResult, a TaskResult whose comparison with syrupy's ``snapshot``
fixture is handed to ``check_against_snapshot``; TaskResult itself stays plain data. The
snapshot file format is ``metrics.snapshots``; the syrupy extension that stores and compares
it, ``snapshot_extension``; the statistics, ``metrics.stats``.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.location import PyTestLocation

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.plan import plan_episodes
from pytest_benchmarks.core.results import TaskResult
from pytest_benchmarks.core.tasks import TaskRef
from pytest_benchmarks.metrics.snapshots import SnapshotFormatError, read
from pytest_benchmarks.metrics.stats import reachable_p, tarone
from pytest_benchmarks.plugin.session import GATE, KEPT, get_state
from pytest_benchmarks.plugin.snapshot_extension import (
    BenchmarkSnapshotExtension,
    GateContext,
    benchmark_param,
)

UPDATE_HINT = "store it with --snapshot-update"


def _location(item: pytest.Item) -> str:
    return BenchmarkSnapshotExtension.get_location(test_location=PyTestLocation(item), index=0)


def family(item: pytest.Item) -> tuple[str, frozenset[str], int, int]:
    """The test function's key, its tasks (in this session's selection) whose gate can fail,
    Tarone's K (see ``stats.tarone``) and how many of its tasks have a snapshot.

    Decided from the snapshots and the planned episodes only, never from outcomes, and once per
    test function from the collected items, so every xdist worker reaches the same answer.
    """
    state = get_state(item.config)
    name = getattr(item, "originalname", None)
    key = f"{item.path}::{name or item.name}"
    if key not in state.gate_families:
        settings = state.settings
        reach: dict[str, float] = {}
        for sibling in item.session.items:
            task = benchmark_param(sibling)
            if sibling.path != item.path or getattr(sibling, "originalname", None) != name:
                continue
            if not isinstance(task, TaskRef) or task.id in reach:
                continue
            try:
                stored = read(Path(_location(sibling)).read_text())
            except (OSError, UnicodeDecodeError, SnapshotFormatError):
                continue  # no snapshot, or a broken one its own test reports
            benchmark = catalog.get(task.env)
            keys = [
                (s.index, s.seed, s.init_state)
                for s in plan_episodes(benchmark, task, settings.seed, settings.indices)
            ]
            reach[task.id] = reachable_p(stored.episodes, keys)
        chosen, k = tarone(reach, settings.alpha)
        state.gate_families[key] = (frozenset(chosen), k, len(reach))
    members, k, compared = state.gate_families[key]
    return key, members, k, compared


def check_against_snapshot(result: TaskResult, assertion: SnapshotAssertion) -> bool:
    """``result == snapshot``: True when the gate passes; otherwise the test fails with one line.

    With ``--snapshot-update`` the result is stored (rewritten only if its outcome changed, and
    never replacing a snapshot of more episodes or other settings without
    ``--benchmark-snapshot-replace``).
    """
    item = assertion.test_location.item
    settings = get_state(item.config).settings
    update = bool(assertion.update_snapshots)
    if settings.gate == "off" and not update:
        return True
    gated = assertion.use_extension(BenchmarkSnapshotExtension)
    extension = gated.extension
    assert isinstance(extension, BenchmarkSnapshotExtension)
    key, members, k, compared = family(item)
    extension.context = GateContext(
        mode=settings.gate,
        alpha=settings.alpha,
        update=update,
        replace=settings.snapshot_replace,
        settings=settings.snapshot_settings(result.task),
        policy=result.policy,
        family=members,
        k=k,
        compared=compared,
    )
    passed = gated == result
    execution = gated.executions[max(gated.executions)]
    comparison = extension.comparison
    if comparison is not None:
        item.stash[GATE] = (key, len(members), comparison)
    if extension.kept is not None:
        item.stash[KEPT] = extension.kept
    blind = comparison is not None and comparison.verdict == "cannot fail"
    if passed and blind and settings.gate_power == "fail":
        assert comparison is not None
        pytest.fail(f"{comparison.line()} (--benchmark-gate-power=fail)", pytrace=False)
    if passed:
        return True
    where = execution.snapshot_location
    if execution.exception is not None:
        pytest.fail(f"{result.task.id}: snapshot {where}: {execution.exception}", pytrace=False)
    if comparison is not None:
        pytest.fail(f"{comparison.line()} (if intended, {UPDATE_HINT})", pytrace=False)
    pytest.fail(f"{result.task.id}: no snapshot at {where}; {UPDATE_HINT}", pytrace=False)


class GatedResult(TaskResult):
    """A TaskResult that, compared with syrupy's ``snapshot``, asks the gate for its verdict."""

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SnapshotAssertion):
            return check_against_snapshot(self, other)
        return super().__eq__(other)

    __hash__ = None

    @classmethod
    def of(cls, result: TaskResult) -> GatedResult:
        return cls(**{f.name: getattr(result, f.name) for f in fields(result)})
