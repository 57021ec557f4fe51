"""``pytest-benchmarks drift``: before a costly evaluation, whether the installed environment
still starts each snapshot's episodes where the snapshot did.

Each snapshot's episodes are reset as its plan gives them (seed, initial state, index), with the
snapshot's own settings, by the harness's own road (``evaluate`` with a no-op policy and one
step per episode: the reset does not depend on the step limit, and no policy runs), and each
episode's initial-state digest is held against the snapshot's. A task whose states moved where
the environment's fingerprint differs from the snapshot's (``mujoco 3.3.0 → 3.4.0``) will be
judged unpaired by the gate; one whose states moved under the same fingerprint will be refused
(nothing the user changed explains it). How far the states moved is read from the episodes'
sketches (``core.initial_state.distance``) where the snapshot keeps them.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_benchmarks.core import catalog, initial_state
from pytest_benchmarks.core.errors import installed
from pytest_benchmarks.core.results import EpisodeRecord
from pytest_benchmarks.core.tasks import SelectionError
from pytest_benchmarks.core.values import OptionError
from pytest_benchmarks.metrics import run_info
from pytest_benchmarks.metrics.gate import environment_changes
from pytest_benchmarks.metrics.snapshots import SnapshotFormatError, read

#: Snapshot settings passed on to the run that reads the initial states.
PASSED = ("obs", "image_size", "settle_steps", "env_args", "camera_map", "render")

#: Below this the sketches cannot tell a distance from their rounding (1e-6 per projection).
RESOLUTION = 1e-6


#: An episode's key: task id, index, seed, initial state.
Key = tuple[str, int, int, int]

#: Snapshots of one benchmark and one set of run settings: (path, document) each.
Group = list[tuple[Path, dict[str, Any]]]


class DriftError(ValueError):
    """Bad input to ``drift``; the message is the one line shown."""


@dataclass(frozen=True)
class TaskDrift:
    """One snapshot against the installed environment."""

    task: str
    episodes: int
    #: Episodes whose initial state is another than the snapshot's, and the first of them.
    moved: int
    first: int | None
    #: Episodes the snapshot keeps no digest of (nothing to hold against).
    unproven: int
    #: What differs between the snapshot's fingerprint and this environment's.
    environment: tuple[str, ...]
    #: How far each moved state moved, where both sketches were there to say it (sorted), and
    #: the moved states whose size changed (another model: no distance).
    distances: tuple[float, ...] = ()
    resized: int = 0

    def how_far(self) -> str:
        """``; by 0.012 (median), 0.034 at most``: how far, as the sketches say (distances in
        the state's own units: metres, radians and their velocities mixed)."""
        parts = []
        if self.distances:
            median = _amount(self.distances[len(self.distances) // 2])
            many = len(self.distances) > 1 and self.distances[-1] >= RESOLUTION
            most = f", {_amount(self.distances[-1])} at most" if many else ""
            parts.append(f"by {median}" + (f" (median){most}" if most else ""))
        if self.resized:
            parts.append(f"{self.resized} to a state of another size")
        unknown = self.moved - len(self.distances) - self.resized
        if unknown:
            parts.append(f"{unknown} by an amount the snapshot cannot say (no sketch)")
        return "".join(f"; {part}" for part in parts)

    def line(self) -> str:
        """``metaworld/push-v3: 50 of 50 initial states moved (from episode 0); mujoco 3.3.0 →
        3.4.0: judged unpaired``."""
        text = f"{self.task}: {self.moved} of {self.episodes} initial states moved"
        if self.moved:
            text += f" (from episode {self.first}{self.how_far()})"
            why = ", ".join(self.environment)
            text += f"; {why}: the gate judges it unpaired" if why else (
                "; the environment is the snapshot's: the gate refuses it (a harness bug?)"
            )  # fmt: skip
        elif self.environment:
            text += f"; {', '.join(self.environment)}"
        if self.unproven:
            text += f"; {self.unproven} without a stored digest"
        return text


def run_settings(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The settings ``evaluate`` needs to reset a snapshot's episodes as its run did."""
    first = doc["episodes"][0]
    settings = doc.get("settings") or {}
    run = {k: settings[k] for k in PASSED if settings.get(k) is not None}
    run["seed"] = settings.get("seed", first["seed"] - first["index"])
    run["episodes"] = 1 + max(e["index"] for e in doc["episodes"])
    return run


def initial_states(
    env: str, tasks: Iterable[str], run: Mapping[str, Any], batch_size: int | None = None
) -> dict[Key, EpisodeRecord]:
    """Each episode reset under the installed environment (one step, no policy): its record
    holds the initial state's digest and sketch. ``DriftError`` where the benchmark's
    environment cannot be built, naming the packages it ran with."""
    from pytest_benchmarks.api import evaluate

    names = sorted(tasks)
    try:
        benchmark = catalog.get(env)
    except SelectionError as exc:
        raise DriftError(_first(str(exc))) from None
    try:
        result = evaluate(env, "noop", tasks=names, max_steps=1, batch_size=batch_size, **run)
    except OptionError as exc:
        raise DriftError(str(exc)) from None
    for row in result.results:
        if row.error:
            raise DriftError(
                f"{row.task.id}: {_first(row.error)} ({installed(benchmark.packages)})"
            )
    return {
        (r.task.id, e.index, e.seed, e.init_state): e for r in result.results for e in r.episodes
    }


def key(doc: Mapping[str, Any], episode: Mapping[str, Any]) -> Key:
    """A snapshot episode's key."""
    return (doc["id"], episode["index"], episode["seed"], episode["init_state"])


def fingerprint(env: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The fingerprint the gate computes for a task of ``env`` run with ``settings``."""
    obs = settings.get("obs") or catalog.get(env).observation_modes[0]
    return run_info.benchmark_fingerprint(env, obs != "state")


def load(root: Path, envs: Collection[str] = ()) -> dict[tuple[str, str], Group]:
    """The snapshots under ``root`` (of ``envs``, every benchmark where empty), grouped by
    (benchmark, run settings as JSON); one ``DriftError`` line for a file that is no
    snapshot."""
    if not root.is_dir():
        raise DriftError(f"{root}: not a directory of snapshots")
    groups: dict[tuple[str, str], Group] = defaultdict(list)
    for path in sorted(root.rglob("*.json")):
        try:
            text = path.read_text()
            read(text)
            doc = json.loads(text)
        except (OSError, UnicodeDecodeError, ValueError, SnapshotFormatError) as exc:
            raise DriftError(f"{path}: not a snapshot ({_first(str(exc))[:160]})") from None
        if not doc.get("episodes") or (envs and doc.get("env") not in envs):
            continue
        if "env" not in doc:
            raise DriftError(f"{path}: not a snapshot (no 'env': which benchmark it is of)")
        groups[(doc["env"], json.dumps(run_settings(doc), sort_keys=True))].append((path, doc))
    if not groups:
        which = f" of {', '.join(sorted(envs))}" if envs else ""
        raise DriftError(f"{root}: no snapshot{which} with episodes there")
    return groups


def drift(root: Path, envs: Collection[str] = (), batch_size: int | None = None) -> list[TaskDrift]:
    """Every snapshot under ``root`` against the installed environment."""
    found: list[TaskDrift] = []
    for (env, run_json), group in load(root, envs).items():
        tasks = {doc["id"].removeprefix(f"{env}/") for _, doc in group}
        states = initial_states(env, tasks, json.loads(run_json), batch_size)
        for _, doc in group:
            found.append(_task_drift(doc, states, fingerprint(env, doc.get("settings") or {})))
    return sorted(found, key=lambda d: d.task)


def _task_drift(
    doc: Mapping[str, Any], states: Mapping[Key, EpisodeRecord], now: Mapping[str, Any]
) -> TaskDrift:
    moved = unproven = resized = 0
    first = None
    distances: list[float] = []
    for e in sorted(doc["episodes"], key=lambda e: e["index"]):
        stored = e.get("initial_digest")
        mine = states.get(key(doc, e))
        if not stored or mine is None or not mine.initial_digest:
            unproven += 1
        elif stored != mine.initial_digest:
            moved += 1
            first = e["index"] if first is None else first
            if e.get("initial_sketch") and mine.initial_sketch:
                far = initial_state.distance(e["initial_sketch"], mine.initial_sketch)
                if far is None:
                    resized += 1
                else:
                    distances.append(far)
    environment = tuple(environment_changes(doc.get("fingerprint") or {}, now))
    return TaskDrift(
        doc["id"], len(doc["episodes"]), moved, first, unproven, environment,
        tuple(sorted(distances)), resized,
    )  # fmt: skip


def summary(drifts: list[TaskDrift]) -> str:
    """The closing line: how many tasks moved, explained or not."""
    moved = [d for d in drifts if d.moved]
    refused = [d for d in moved if not d.environment]
    changes = sorted({c for d in drifts for c in d.environment})
    text = (
        f"drift: {len(moved)} of {len(drifts)} tasks' initial states moved "
        f"({sum(d.moved for d in drifts)} of {sum(d.episodes for d in drifts)} episodes)"
    )
    if changes:
        text += f"; the environment differs from the snapshots' ({', '.join(changes)})"
    if refused:
        text += f"; {len(refused)} moved under the snapshot's own environment: the gate refuses"
    return text


def _amount(distance: float) -> str:
    """``0.013``; ``under 1e-06`` where the sketches cannot tell it from nothing (the digest
    rounds each value to 1e-6, so a value on the rounding's edge moves it for less)."""
    return f"under {RESOLUTION:.0e}" if distance < RESOLUTION else f"{distance:.2g}"


def _first(text: str) -> str:
    """The first line of a message."""
    return (text.strip().splitlines() or [""])[0]
