"""Stamp stored snapshots with each episode's initial-state digest and sketch and the run's
environment.

    .venv/bin/python scripts/snapshot_digests.py benchmarks/__benchmark_snapshots__
    .venv/bin/python scripts/snapshot_digests.py benchmarks/__benchmark_snapshots__ \\
        --restamp metaworld

No outcome changes. Each snapshot's episodes are reset as its plan gives them (seed, initial
state, episode index), with the snapshot's own settings, by the harness's own road
(``pytest_benchmarks.drift``: ``evaluate``, a no-op policy, one step per episode; the reset
does not depend on the step limit), and each record's digest and sketch are written into the
episode of the same index, seed and initial state. Snapshots stored before digests or sketches
were kept get them; where a stored digest no longer matches, the snapshot is left as it was
and named. ``--restamp ENV`` computes every digest of that benchmark's snapshots again and
overwrites them (after a change to what its digest reads). A snapshot whose episodes the run
does not reproduce is left as it was and named; bad input (a file that is no snapshot, an
unknown benchmark, a bad ``--batch-size``) is one line and exit status 2.

Every snapshot without a fingerprint also gets the one of the environment this script runs in
(``run_info.fingerprint``, as the plugin's gate computes it), so that a later simulator upgrade
is named beside the verdict; that needs no reset. A stored fingerprint is kept: it says where
the outcomes were produced.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any

from pytest_benchmarks.core.files import write_atomic
from pytest_benchmarks.core.values import OptionError
from pytest_benchmarks.drift import DriftError, Group, fingerprint, initial_states, key, load
from pytest_benchmarks.metrics.snapshots import dumps

#: The key a fingerprint is stored under, and the key it follows (``snapshots.document``'s order).
FINGERPRINT, AFTER = "fingerprint", "settings"


def stamped(doc: dict[str, Any]) -> bool:
    """Whether every episode of the snapshot keeps its initial state's digest and sketch."""
    return all("initial_digest" in e and "initial_sketch" in e for e in doc["episodes"])


def fill(group: Group, env: str, run: dict[str, Any], restamp: bool, batch: int | None) -> int:
    """Reset the group's episodes and write their digests and sketches (over any stored where
    ``restamp``); the number of snapshots left as they were."""
    tasks = sorted({doc["id"].removeprefix(f"{env}/") for _, doc in group})
    print(f"{env}: {len(tasks)} tasks, {run}", flush=True)
    states = initial_states(env, tasks, run, batch)
    left = 0
    for path, doc in group:
        found = [states.get(key(doc, e)) for e in doc["episodes"]]
        if not all(r is not None and r.initial_digest for r in found):
            print(f"{path}: its episodes were not reproduced; left as it was", file=sys.stderr)
            left += 1
            continue
        stale = [
            e["index"] for e, r in zip(doc["episodes"], found, strict=True)
            if e.get("initial_digest") not in (None, r and r.initial_digest)
        ]  # fmt: skip
        if stale and not restamp:
            print(
                f"{path}: episode {stale[0]}'s initial state moved since it was stamped; left "
                f"as it was (--restamp {env} computes every digest again)",
                file=sys.stderr,
            )
            left += 1
            continue
        for episode, record in zip(doc["episodes"], found, strict=True):
            assert record is not None
            episode.pop("initial_sketch", None)  # after the digest, as a run writes them
            episode["initial_digest"] = record.initial_digest
            if record.initial_sketch:
                episode["initial_sketch"] = list(record.initial_sketch)
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


def stamp(root: Path, restamp: Collection[str], batch_size: int | None) -> int:
    """Digests, sketches and fingerprints for the snapshots under ``root``; the number of
    snapshots left as they were."""
    left = 0
    for (env, run), group in load(root).items():
        todo = [(path, doc) for path, doc in group if env in restamp or not stamped(doc)]
        if todo:
            left += fill(todo, env, json.loads(run), env in restamp, batch_size)
    print(f"{root}: {stamp_fingerprints(root)} snapshots given a fingerprint", flush=True)
    return left


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
    try:
        for root in args.roots:
            left += stamp(root, set(args.restamp), args.batch_size)
    except (DriftError, OptionError) as exc:
        print(f"snapshot_digests.py: error: {exc}", file=sys.stderr)
        return 2
    return 1 if left else 0


if __name__ == "__main__":
    raise SystemExit(main())
