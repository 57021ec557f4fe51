"""The snapshot file format: what a task's snapshot holds, written and read back.

One JSON file per task, ``__benchmark_snapshots__/<test module>/<test>/<benchmark>/<task>.json``:
the counts, the policy, the settings the outcome depends on, and one line per episode (index,
seed, initial state, success, steps; never timings), so a changed episode is a one-line diff and
a deterministic rerun leaves the file untouched. The plugin's gate and ``pytest-benchmarks``
read it the same way.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from pytest_benchmarks.core import comparability
from pytest_benchmarks.core.errors import one_line
from pytest_benchmarks.core.results import EpisodeRecord, TaskResult
from pytest_benchmarks.core.settings import OPTIONS
from pytest_benchmarks.metrics.gate.refusals import printable
from pytest_benchmarks.metrics.stats import moved_start

#: Beside syrupy's own ``__snapshots__``, not inside it: syrupy's default extension claims every
#: file in its directory that no extension used, and would report (and with --snapshot-update
#: delete) the snapshots of tasks a partial run left out.
DIRNAME = "__benchmark_snapshots__"
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]")


def file_stem(task_id: str, suffix: str = "") -> str:
    """A task id as a path below a test's snapshot directory (``metaworld/push-v3``), with
    characters a file name should not hold replaced."""
    parts = [_UNSAFE.sub("_", part) for part in task_id.split("/")]
    return "/".join(parts) + _UNSAFE.sub("_", suffix)


class SnapshotFormatError(ValueError):
    """A snapshot file that is not a task snapshot this version can read."""


@dataclass(frozen=True)
class Snapshot:
    """What a snapshot file holds, read back."""

    id: str
    episodes: list[EpisodeRecord]
    policy: dict[str, Any]
    #: The settings the episodes ran with; empty in snapshots written before they were stored.
    settings: dict[str, Any]
    #: The environment they ran in (``run_info.fingerprint``); empty where it was not stored.
    fingerprint: dict[str, Any] = field(default_factory=dict)


def document(
    result: TaskResult, settings: dict[str, Any], fingerprint: dict[str, Any] | None = None
) -> dict[str, Any]:
    """What a snapshot keeps: the counts, the policy, the settings the outcome depends on, the
    environment it ran in, and each episode's outcome, never timings."""
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
        **({"fingerprint": fingerprint} if fingerprint else {}),
        "episodes": [
            {
                "index": e.index,
                "seed": e.seed,
                "init_state": e.init_state,
                "success": e.success,
                "steps": e.steps,
                **({"initial_digest": e.initial_digest} if e.initial_digest else {}),
                **({"initial_sketch": list(e.initial_sketch)} if e.initial_sketch else {}),
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
        "settings": {
            "type": "object",
            "properties": {"max_steps": {"type": ["integer", "null"], "minimum": 1}},
        },
        "fingerprint": {
            "type": "object",
            "properties": {
                "packages": {
                    "type": "object",
                    "additionalProperties": {"type": ["string", "null"], "maxLength": 200},
                },
            },
            "additionalProperties": {"type": ["string", "null"], "maxLength": 200},
        },
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
                    "initial_digest": {"type": "string", "pattern": "^[0-9a-f]+$"},
                    "initial_sketch": {
                        "type": "array",
                        "items": {"type": "number"},
                        "minItems": 2,
                        "maxItems": 64,
                    },
                },
            },
        },
    },
}


def read(text: str) -> Snapshot:
    """A snapshot's content, checked against SNAPSHOT_SCHEMA and for counts that agree with
    its episodes, indices that are unique and steps within its own step limit;
    SnapshotFormatError (one line) if it is not."""
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
            initial_digest=e.get("initial_digest"),
            initial_sketch=e.get("initial_sketch"),
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
    limit = settings.get("max_steps")
    beyond = next((e for e in episodes if limit is not None and e.steps > limit), None)
    if beyond is not None:
        # No episode outlasts its step limit: such a count was edited, never run.
        raise SnapshotFormatError(
            f"episode {beyond.index} took {printable(beyond.steps)} steps, more than the "
            f"snapshot's own step limit (settings.max_steps {limit})"
        )
    if settings.get("obs", "state") != "state" and "render" not in settings:
        # Pixel snapshots stored before the render mode was recorded were rendered faithfully.
        settings = {**settings, "render": "faithful"}
    # Snapshots record batched inference only where a run used it.
    settings = {BATCHED: False, **settings}
    fingerprint = doc.get("fingerprint") or {}
    return Snapshot(doc["id"], episodes, doc.get("policy") or {}, settings, fingerprint)


#: How the gate refuses a snapshot of another experiment (``gate.check_comparable``).
NAMES = ("the snapshot", "this run")
REMEDY = (
    "run with the snapshot's settings, or store a new snapshot with --snapshot-update "
    "--benchmark-snapshot-replace"
)
#: The setting of --benchmark-batched-inference.
BATCHED = "batched_inference"
#: What a setting a snapshot or run lacks was: the settings recorded only where they are set.
ABSENT: dict[str, Any] = {o.field: o.dump(o.default) for o in OPTIONS if o.snapshot == "set"}


def setting_changes(stored: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """``seed 1000 → 5000`` for each setting the snapshot recorded that this run changes."""
    return [d.text() for d in comparability.differences(stored, current, absent=ABSENT)]


def keep_reason(
    stored_text: str, serialized: str, settings: dict[str, Any], replace: bool
) -> str | None:
    """Why a run must not replace the stored snapshot (fewer episodes, other settings), or
    None. Never with ``replace`` (--benchmark-snapshot-replace); an unreadable one is replaced."""
    if replace:
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
    changes = setting_changes(stored.settings, settings)
    if changes:
        reasons.append(f"this run changed {', '.join(changes)}")
    moved = moved_start(stored.episodes, new.episodes)
    if moved:
        reasons.append(f"its episode {moved[0]} started from another initial state")
    if not reasons:
        return None
    return (
        f"{new.id}: snapshot kept: {'; '.join(reasons)} (--benchmark-snapshot-replace replaces it)"
    )
