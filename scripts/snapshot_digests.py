"""Stamp stored snapshots with each episode's initial-state digest and the run's environment.

    .venv/bin/python scripts/snapshot_digests.py benchmarks/__benchmark_snapshots__
    .venv/bin/python scripts/snapshot_digests.py benchmarks/__benchmark_snapshots__ \\
        --restamp metaworld

No outcome changes. Digests are added to snapshots stored before digests were kept; with
``--restamp ENV`` every digest of that benchmark's snapshots is computed again and overwritten
(after a change to what its digest reads). Each snapshot's episodes are reset as its plan gives
them (seed, initial state, episode index), with the snapshot's own settings, by the harness's own
road (``pytest_benchmarks.evaluate``, a no-op policy, one step per episode: the reset does not
depend on the step limit), and each record's digest is written into the episode of the same
index, seed and initial state. A snapshot whose episodes the run does not reproduce is left as
it was and named.

Every snapshot without a fingerprint also gets the one of the environment this script runs in
(``run_info.fingerprint``, as the plugin's gate computes it), so that a later simulator upgrade
is named beside the verdict; that needs no reset. A stored fingerprint is kept: it says where
the outcomes were produced.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Collection
from pathlib import Path
from typing import Any

from pytest_benchmarks.api import evaluate
from pytest_benchmarks.core.files import write_atomic
from pytest_benchmarks.drift import fingerprint
from pytest_benchmarks.metrics.snapshots import dumps

#: Snapshot settings passed on to the run that reads the initial states.
PASSED = ("obs", "image_size", "settle_steps", "env_args", "camera_map", "render")

#: The key a fingerprint is stored under, and the key it follows (``snapshots.document``'s order).
FINGERPRINT, AFTER = "fingerprint", "settings"


def pending(root: Path, restamp: Collection[str] = ()) -> dict[tuple[str, str], list[Path]]:
    """Snapshots that need digests (none stored, or their benchmark is in ``restamp``),
    grouped by (env, run settings as JSON)."""
    groups: dict[tuple[str, str], list[Path]] = defaultdict(list)
    for path in sorted(root.rglob("*.json")):
        doc = json.loads(path.read_text())
        if not doc.get("episodes"):
            continue
        stamped = all("initial_digest" in e for e in doc["episodes"])
        if stamped and doc.get("env") not in restamp:
            continue
        first = doc["episodes"][0]
        settings = doc.get("settings") or {}
        run = {k: settings[k] for k in PASSED if settings.get(k) is not None}
        run["seed"] = settings.get("seed", first["seed"] - first["index"])
        run["episodes"] = 1 + max(e["index"] for e in doc["episodes"])
        groups[(doc["env"], json.dumps(run, sort_keys=True))].append(path)
    return groups


def fill(paths: list[Path], env: str, run: dict[str, Any], batch_size: int | None) -> int:
    """Run the group's tasks and write their digests (over any stored); the number of
    snapshots left as they were."""
    docs = {path: json.loads(path.read_text()) for path in paths}
    tasks = sorted({doc["id"].removeprefix(f"{env}/") for doc in docs.values()})
    print(f"{env}: {len(tasks)} tasks, {run}", flush=True)
    result = evaluate(env, "noop", tasks=tasks, max_steps=1, batch_size=batch_size, **run)
    found = {
        (r.task.id, e.index, e.seed, e.init_state): e.initial_digest
        for r in result.results
        for e in r.episodes
    }
    left = 0
    for path, doc in docs.items():
        keys = [(doc["id"], e["index"], e["seed"], e["init_state"]) for e in doc["episodes"]]
        if not all(found.get(k) for k in keys):
            print(f"{path}: its episodes were not reproduced; left as it was", file=sys.stderr)
            left += 1
            continue
        for episode, key in zip(doc["episodes"], keys, strict=True):
            episode["initial_digest"] = found[key]
        write_atomic(path, dumps(doc))
    return left


def with_fingerprint(doc: dict[str, Any], fingerprint: dict[str, Any]) -> dict[str, Any]:
    """The snapshot with ``fingerprint`` where ``snapshots.document`` puts it: after the
    settings (before the episodes where there are none)."""
    keys = [k for k in doc if k != FINGERPRINT]
    at = keys.index(AFTER) + 1 if AFTER in keys else keys.index("episodes")
    keys.insert(at, FINGERPRINT)
    return {k: fingerprint if k == FINGERPRINT else doc[k] for k in keys}


def stamp_fingerprints(root: Path) -> int:
    """Give each snapshot under ``root`` that has no fingerprint this environment's; the
    number stamped."""
    stamped = 0
    for path in sorted(root.rglob("*.json")):
        doc = json.loads(path.read_text())
        if doc.get(FINGERPRINT) or "env" not in doc or "episodes" not in doc:
            continue
        write_atomic(
            path, dumps(with_fingerprint(doc, fingerprint(doc["env"], doc.get("settings") or {})))
        )
        stamped += 1
    return stamped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="+", type=Path, help="folders of snapshots")
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument(
        "--restamp",
        action="append",
        default=[],
        metavar="ENV",
        help="a benchmark whose stored digests are computed again and overwritten (repeatable)",
    )
    args = parser.parse_args(argv)
    left = 0
    for root in args.roots:
        for (env, run), paths in pending(root, set(args.restamp)).items():
            left += fill(paths, env, json.loads(run), args.batch_size)
        print(f"{root}: {stamp_fingerprints(root)} snapshots given a fingerprint", flush=True)
    return 1 if left else 0


if __name__ == "__main__":
    raise SystemExit(main())
