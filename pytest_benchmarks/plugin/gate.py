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
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.data import SnapshotCollection, SnapshotCollections
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode
from syrupy.location import PyTestLocation

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.errors import one_line
from pytest_benchmarks.core.files import write_atomic
from pytest_benchmarks.core.plan import plan_episodes
from pytest_benchmarks.core.results import EpisodeRecord, TaskResult
from pytest_benchmarks.core.tasks import TaskRef
from pytest_benchmarks.metrics.stats import Comparison, compare, reachable_p, tarone
from pytest_benchmarks.plugin.session import GATE, KEPT, get_state

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


@dataclass(frozen=True)
class Snapshot:
    """What a snapshot file holds, read back."""

    id: str
    episodes: list[EpisodeRecord]
    policy: dict[str, Any]
    #: The settings the episodes ran with; empty in snapshots written before they were stored.
    settings: dict[str, Any]


def document(result: TaskResult, settings: dict[str, Any]) -> dict[str, Any]:
    """What a snapshot keeps: the counts, the policy, the settings the outcome depends on, and
    each episode's outcome, never timings."""
    return {
        "id": result.task.id,
        "env": result.task.env,
        "suite": result.task.suite,
        "task": result.task.task,
        "successes": result.successes,
        "n_episodes": result.n_episodes,
        "pc_success": result.pc_success,
        "policy": result.policy,
        "settings": settings,
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


#: What a snapshot file must hold (``document`` writes it); extra keys are allowed.
SNAPSHOT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "episodes"],
    "properties": {
        "id": {"type": "string"},
        "successes": {"type": "integer", "minimum": 0},
        "n_episodes": {"type": "integer", "minimum": 0},
        "policy": {"type": "object"},
        "settings": {"type": "object"},
        "episodes": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["index", "seed", "init_state", "success", "steps"],
                "properties": {
                    "index": {"type": "integer", "minimum": 0},
                    "seed": {"type": "integer", "minimum": 0},
                    "init_state": {"type": "integer", "minimum": 0},
                    "success": {"type": "boolean"},
                    "steps": {"type": "integer", "minimum": 0},
                },
            },
        },
    },
}


def read(text: str) -> Snapshot:
    """A snapshot's content, checked against SNAPSHOT_SCHEMA and for counts that agree with
    its episodes and indices that are unique; SnapshotFormatError (one line) if it is not."""
    import jsonschema

    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError, ValueError) as exc:
        raise SnapshotFormatError(f"not valid JSON ({one_line(exc)})") from None
    try:
        jsonschema.validate(doc, SNAPSHOT_SCHEMA)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "top level"
        raise SnapshotFormatError(
            f"not a task snapshot ({where}: {exc.message.splitlines()[0][:120]})"
        ) from None
    episodes = [
        EpisodeRecord(
            **{k: e[k] for k in ("index", "seed", "init_state", "success", "steps")},
            sum_reward=0.0,
            max_reward=0.0,
            duration_s=0.0,
        )
        for e in doc["episodes"]
    ]
    indices = [e.index for e in episodes]
    if len(set(indices)) != len(indices):
        repeated = sorted({i for i in indices if indices.count(i) > 1})
        raise SnapshotFormatError(f"episode index {repeated[0]} appears more than once")
    counts = {"n_episodes": len(episodes), "successes": sum(e.success for e in episodes)}
    for key, actual in counts.items():
        if key in doc and doc[key] != actual:
            raise SnapshotFormatError(f"{key} is {doc[key]}, but its episodes give {actual}")
    settings = doc.get("settings") or {}
    if settings.get("obs", "state") != "state" and "render" not in settings:
        # Pixel snapshots stored before the render mode was recorded were rendered faithfully.
        settings = {**settings, "render": "faithful"}
    return Snapshot(doc["id"], episodes, doc.get("policy") or {}, settings)


def setting_changes(stored: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """``seed 1000 → 5000`` for each setting the snapshot recorded that this run changes."""
    return [
        f"{key} {_text(stored[key])} → {_text(current.get(key))}"
        for key in sorted(stored)
        if key in current and stored[key] != current[key]
    ]


def check_render(stored: dict[str, Any], current: dict[str, Any]) -> None:
    """Refuse, in one line, to judge images of one render mode against another's outcomes
    (settings record the mode only where images were rendered)."""
    old, new = stored.get("render"), current.get("render")
    if old and new and old != new:
        raise SnapshotFormatError(
            f"the snapshot was rendered {old}, this run {new}: runs of different render modes "
            f"are not compared; run with --benchmark-render={old}, or store a {new} snapshot "
            "with --snapshot-update --benchmark-snapshot-replace"
        )


def differences(snap: Snapshot, policy: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    """Why the snapshot and this run are not the same experiment, one note each."""
    notes = []
    old = snap.policy.get("id"), snap.policy.get("revision")
    if snap.policy and old != (policy.get("id"), policy.get("revision")):
        notes.append(
            f"the snapshot is of another policy ({_policy_text(snap.policy)}, this run "
            f"{_policy_text(policy)}): a different experiment"
        )
    changes = setting_changes(snap.settings, settings)
    if changes:
        notes.append(f"the snapshot ran other settings ({', '.join(changes)})")
    return notes


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "x".join(map(str, value))
    return "default" if value is None else str(value)


def _policy_text(policy: dict[str, Any]) -> str:
    revision = policy.get("revision")
    return f"{policy.get('id')}" + (f"@{revision}" if revision else "")


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
        #: Why --snapshot-update left the stored snapshot in place.
        self.kept: str | None = None

    def serialize(self, data: Any, **_: Any) -> str:
        if not isinstance(data, TaskResult):
            raise TypeError(f"task snapshots store a TaskResult, not {type(data).__name__}")
        return dumps(document(data, self.context.settings))

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
            self.kept = self.keep_reason(str(serialized_data), str(snapshot_data))
            # Updating stores this run's outcome exactly, whenever it differs at all.
            return self.kept is not None or bool(serialized_data == snapshot_data)
        if ctx.mode == "off":
            return True
        new = read(str(serialized_data))
        stored = read(str(snapshot_data))
        if stored.id != new.id:
            raise SnapshotFormatError(f"holds task {stored.id!r}, not {new.id!r}")
        check_render(stored.settings, ctx.settings)
        size = len(ctx.family) if new.id in ctx.family else ctx.k
        self.comparison = compare(
            new.id, stored.episodes, new.episodes, ctx.alpha, size, ctx.mode,
            can_fail=new.id in ctx.family if ctx.mode == "stat" else None,
            notes=differences(stored, ctx.policy, ctx.settings), session_tasks=ctx.compared,
        )  # fmt: skip
        return not self.comparison.regression

    def keep_reason(self, serialized: str, stored_text: str) -> str | None:
        """Why this run must not replace the stored snapshot (fewer episodes, other settings),
        or None. Never with --benchmark-snapshot-replace; an unreadable snapshot is replaced."""
        if self.context.replace:
            return None
        try:
            stored = read(stored_text)
        except SnapshotFormatError:
            return None
        new = read(serialized)
        reasons = []
        if len(new.episodes) < len(stored.episodes):
            held = len(stored.episodes)
            reasons.append(f"it holds {held} episodes, this run {len(new.episodes)}")
        changes = setting_changes(stored.settings, self.context.settings)
        if changes:
            reasons.append(f"this run changed {', '.join(changes)}")
        if not reasons:
            return None
        return (
            f"{new.id}: snapshot kept: {'; '.join(reasons)} "
            "(--benchmark-snapshot-replace replaces it)"
        )

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
            task = _param(sibling)
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
        members, k = tarone(reach, settings.alpha)
        state.gate_families[key] = (frozenset(members), k, len(reach))
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

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def of(cls, result: TaskResult) -> GatedResult:
        return cls(**{f.name: getattr(result, f.name) for f in fields(result)})
