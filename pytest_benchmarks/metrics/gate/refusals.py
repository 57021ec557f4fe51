"""The gate's refusals and notes: two runs of different experiments are refused before any
statistic (the registry's comparability rule, ``core.comparability``), and what the runs
differ in that does not refuse is said beside the verdict."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_benchmarks.core import comparability
from pytest_benchmarks.core.policy import BACKBONE
from pytest_benchmarks.core.results import EpisodeRecord
from pytest_benchmarks.metrics.stats import moved_start

#: How a verdict's note says its snapshot ran in another environment (``lines`` gathers them).
ENVIRONMENT_NOTE = "the snapshot ran in another environment"


class Incomparable(ValueError):
    """Two runs of different experiments; the message is the one line that names why."""


def check_comparable(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    names: tuple[str, str],
    remedy: str,
    absent: Mapping[str, Any] = comparability.DEFAULTS,
) -> list[str]:
    """Refuse (Incomparable) two runs whose recorded settings differ in a setting the registry
    marks "refuse"; otherwise the "note" settings they differ in, ``seed 1000 → 5000`` each."""
    found = comparability.differences(old, new, absent=absent)
    refused = comparability.refusal(found, *names, remedy)
    if refused:
        raise Incomparable(refused)
    return [d.text() for d in found]


def unpaired(
    baseline: Iterable[EpisodeRecord], new: Iterable[EpisodeRecord], names: tuple[str, str]
) -> str | None:
    """Why the episodes of two runs are not paired (``moved_start``), in one line, or None."""
    moved = moved_start(baseline, new)
    if moved is None:
        return None
    index, mine, theirs = moved
    return (
        f"episode {index} started from another initial state in {names[1]} than in {names[0]} "
        f"(digest {mine}, {names[0]} {theirs}): the episodes are not paired, so they are not "
        "compared"
    )


def environment_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """``mujoco 3.1.6 → 3.3.0`` for each part of two fingerprints (``run_info.fingerprint``)
    both record and that differs: package versions, the renderer, the GPU, the container."""
    found = []
    old_packages, new_packages = old.get("packages") or {}, new.get("packages") or {}
    for name in old_packages.keys() & new_packages.keys():
        if old_packages[name] != new_packages[name]:
            before, after = printable(old_packages[name]), printable(new_packages[name])
            found.append(f"{printable(name)} {before} → {after}")
    for part in ("renderer", "gpu", "container"):
        if part in old and part in new and old[part] != new[part]:
            found.append(f"{part} {printable(old[part])} → {printable(new[part])}")
    return sorted(found)


#: The most characters of a recorded value a line prints.
PRINTED = 60


def printable(value: Any, limit: int = PRINTED) -> str:
    """A recorded value as a line may print it: control characters (an ANSI escape, a line
    break) escaped, and clipped to ``limit`` characters with an ellipsis."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(value))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def notes(
    old_policy: Mapping[str, Any],
    new_policy: Mapping[str, Any],
    changes: Sequence[str],
    environment: Sequence[str] = (),
) -> list[str]:
    """What a verdict says beside its test: another policy (a different experiment), the
    "note" settings the runs differ in (``check_comparable``'s answer), and what changed in the
    environment (``environment_changes``: a simulator that changed under a snapshot; one that
    changes initial states is refused by the episodes' digests)."""
    said = []
    keys = ("id", "revision", BACKBONE)
    if old_policy and [old_policy.get(k) for k in keys] != [new_policy.get(k) for k in keys]:
        said.append(
            f"the snapshot is of another policy ({_policy_text(old_policy)}, this run "
            f"{_policy_text(new_policy)}): a different experiment"
        )
    if changes:
        said.append(f"the snapshot ran other settings ({', '.join(changes)})")
    if environment:
        said.append(f"{ENVIRONMENT_NOTE} ({', '.join(environment)})")
    return said


def _policy_text(policy: Mapping[str, Any]) -> str:
    revision, backbone = policy.get("revision"), policy.get(BACKBONE)
    text = f"{policy.get('id')}" + (f"@{revision}" if revision else "")
    return text + (f" with backbone {backbone}" if backbone else "")
