"""The regression gate: ``assert evaluate() == snapshot`` judges a task against its baseline.

``evaluate()`` returns a GatedResult, a TaskResult whose comparison with syrupy's ``snapshot``
fixture is handed to ``check_against_snapshot``; TaskResult itself stays plain data. The
comparison only answers and records its one-line reason (``VERDICT``); ``verdict`` turns that
into the test's failure when the test's call ends, so ``==`` never raises. The
snapshot file format is ``metrics.snapshots``; the syrupy extension that stores and compares
it, ``snapshot_extension``; the decision, ``metrics.gate``.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.location import PyTestLocation

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.plan import plan_episodes
from pytest_benchmarks.core.results import TaskResult
from pytest_benchmarks.core.settings import Settings
from pytest_benchmarks.core.tasks import TaskRef
from pytest_benchmarks.metrics import run_info
from pytest_benchmarks.metrics.gate import environment_changes, fails, tarone
from pytest_benchmarks.metrics.gate.sequential import (
    SequentialStop,
    early_threshold,
    final_alpha,
    task_drop,
)
from pytest_benchmarks.metrics.snapshots import SnapshotFormatError, read
from pytest_benchmarks.metrics.stats import reachable_p
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
    With --benchmark-sequential, at the level its final fixed tests share (``final_alpha``).
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
        level = final_alpha(settings.alpha) if settings.sequential else settings.alpha
        chosen, k = tarone(reach, level)
        state.gate_families[key] = (frozenset(chosen), k, len(reach))
    members, k, compared = state.gate_families[key]
    return key, members, k, compared


def gate_item(item: pytest.Item, task: TaskRef) -> pytest.Item | None:
    """The test that gates ``task`` against its snapshot: ``item`` itself where it takes the
    ``snapshot`` fixture, else the first test of its module that does, for the same task."""
    if "snapshot" in getattr(item, "fixturenames", ()):
        return item
    for sibling in item.session.items:
        if sibling.path != item.path or "snapshot" not in getattr(sibling, "fixturenames", ()):
            continue
        found = benchmark_param(sibling)
        if isinstance(found, TaskRef) and found.id == task.id:
            return sibling
    return None


def stopping_rule(item: pytest.Item, task: TaskRef) -> SequentialStop | None:
    """--benchmark-sequential: the task's stopping rule against its snapshot (``gate_item``:
    the plan's stopping rule whichever of the task's tests runs the plan first) at its
    family's level; None without the option or a gate test with a readable snapshot (the gate
    test then fails with its own line)."""
    state = get_state(item.config)
    if not state.settings.sequential:
        return None
    gated = gate_item(item, task)
    if gated is None:
        return None
    try:
        stored = read(Path(_location(gated)).read_text())
    except (OSError, UnicodeDecodeError, SnapshotFormatError):
        return None
    _, members, k, _ = family(gated)
    kept = state.resumed.get(task.id)
    size = len(members) if task.id in members else k
    alpha, order = state.settings.alpha, state.settings.indices
    moved_ok = bool(environment_changes(stored.fingerprint, run_fingerprint(task, state.settings)))
    return SequentialStop(
        baseline=stored.episodes,
        order=order,
        threshold=early_threshold(alpha, size),
        can_fail=task.id in members,
        kept=kept.episodes if kept is not None else (),
        delta=task_drop(stored.episodes, order, alpha, size),
        moved_ok=moved_ok,
    )


def run_fingerprint(task: TaskRef, settings: Settings) -> dict[str, Any]:
    """The environment this run's ``task`` runs in (``run_info.fingerprint``): its benchmark's
    simulator packages, and the renderer where it renders images."""
    return run_info.benchmark_fingerprint(task.env, settings.env_config(task).obs != "state")


#: Why the gate failed a test's task, in one line, for ``verdict`` (item stash).
VERDICT = pytest.StashKey[str]()


def verdict(item: pytest.Item, raised: BaseException | None) -> None:
    """The gate's verdict as the test's outcome, when its call has ended: a failed comparison
    fails the test with its one line, whether the test asserted it (the AssertionError gives way
    to the line) or ignored the False."""
    line = item.stash.get(VERDICT, None)
    if line is not None and (raised is None or isinstance(raised, AssertionError)):
        raise pytest.fail.Exception(line, pytrace=False) from None  # the line alone


def check_against_snapshot(result: TaskResult, assertion: SnapshotAssertion) -> bool:
    """``result == snapshot``: True when the gate passes; otherwise False, with the one line
    that says why recorded for ``verdict``.

    With ``--snapshot-update`` the result is stored (rewritten only if its outcome changed, and
    never replacing a snapshot of more episodes or other settings without
    ``--benchmark-snapshot-replace``).
    """
    item = assertion.test_location.item
    settings = get_state(item.config).settings
    update = bool(assertion.update_snapshots)
    if settings.gate == "off" and not update:
        return True
    # The fixture itself, with the extension for this one comparison (syrupy restores it after):
    # its failed comparison is the one pytest's assertion report then reads.
    extension = assertion(extension_class=BenchmarkSnapshotExtension).extension
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
        order=tuple(settings.indices) if settings.sequential else (),
        fingerprint=run_fingerprint(result.task, settings),
    )
    passed = assertion == result
    execution = assertion.executions[max(assertion.executions)]
    comparison = extension.comparison
    if comparison is not None:
        item.stash[GATE] = (key, len(members), comparison)
    if extension.kept is not None:
        item.stash[KEPT] = extension.kept
    where = execution.snapshot_location
    if passed and comparison is not None and fails(comparison, settings.gate_power):
        line = f"{comparison.line()} (--benchmark-gate-power=fail)"
    elif passed:
        return True
    elif execution.exception is not None:
        line = f"{result.task.id}: snapshot {where}: {execution.exception}"
    elif comparison is not None:
        line = f"{comparison.line()} (if intended, {UPDATE_HINT})"
    else:
        line = f"{result.task.id}: no snapshot at {where}; {UPDATE_HINT}"
    item.stash[VERDICT] = line
    return False


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
