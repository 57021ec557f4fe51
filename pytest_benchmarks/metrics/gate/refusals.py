"""The gate's refusals and notes: two runs of different experiments are refused before any
statistic (the registry's comparability rule, ``core.comparability``), and what the runs
differ in that does not refuse is said beside the verdict."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_benchmarks.core import comparability
from pytest_benchmarks.core.policy import BACKBONE
from pytest_benchmarks.core.results import EpisodeRecord
from pytest_benchmarks.metrics.stats import episode_key, moved_start

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


def unmatched(
    baseline: Sequence[EpisodeRecord], new: Sequence[EpisodeRecord], names: tuple[str, str]
) -> str | None:
    """Why the plan pairs none of some episodes (``stats.episode_key``: an index that ran
    another seed or initial state, as after a shifted seed, or one only the new run has), in
    one note, or None: such a task is judged as two unpaired samples (the verdict names the
    test), which costs power, and says so."""
    stored = {e.index: e for e in baseline}
    ordered = sorted(new, key=lambda e: e.index)
    other = [
        e for e in ordered if e.index in stored and episode_key(stored[e.index]) != episode_key(e)
    ]
    only = [e for e in ordered if e.index not in stored]
    if other:
        e, b = other[0], stored[other[0].index]
        why = (
            f"{len(other)} of {len(ordered)} episodes ran another seed or initial state than in "
            f"{names[0]} (episode {e.index}: seed {e.seed}, initial state {e.init_state}; "
            f"{names[0]} seed {b.seed}, initial state {b.init_state})"
        )
    elif only:
        first = only[0].index
        why = f"{len(only)} of {len(ordered)} episodes are not in {names[0]} (from episode {first})"
    else:
        return None
    return f"{why}: not paired, judged as two unpaired samples"


def unproven(
    baseline: Sequence[EpisodeRecord], new: Sequence[EpisodeRecord], names: tuple[str, str]
) -> list[str]:
    """How many paired episodes only one run kept an initial-state digest for: their starts
    cannot be held against each other (``moved_start`` passes them), so the pairing is
    unproven. Episodes neither run kept one for (a state the env cannot read) are not
    counted."""
    stored = {episode_key(e): e.initial_digest for e in baseline}
    both = [(stored[episode_key(e)], e.initial_digest) for e in new if episode_key(e) in stored]
    said = []
    for side, name in ((0, names[0]), (1, names[1])):
        lacking = sum(1 for pair in both if not pair[side] and pair[1 - side])
        if lacking:
            said.append(
                f"{lacking} of {len(both)} paired episodes keep no initial-state digest in "
                f"{name}: their starts are unproven"
            )
    return said


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
