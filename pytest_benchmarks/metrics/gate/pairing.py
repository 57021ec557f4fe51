"""The pipeline's first step: whether two runs of a task are one experiment, and whether their
episodes pair, before any statistic.

Settings the registry marks "refuse" make two experiments, and are refused
(``refusals.check_comparable``). Episodes the plan pairs whose simulators started from other
states (``refusals.unpaired``) are explained by the environments' fingerprints: where they
differ (a simulator upgrade: ``mujoco 3.3.0 → 3.4.0``) the change is named and the task is
judged unpaired (Fisher on the two samples), since the same seeds no longer give the same
scenes; where they are the same, nothing the user changed explains it (a harness bug, as in
LeRobot issue 4152) and the task is refused. Episodes the plan does not pair (another seed or
initial state for an index: ``refusals.unmatched``) and pairs whose starts only one run kept a
digest of (``refusals.unproven``) are said beside the verdict, a pass included.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_benchmarks.core import comparability
from pytest_benchmarks.core.results import EpisodeRecord
from pytest_benchmarks.metrics.gate.refusals import (
    Incomparable,
    check_comparable,
    environment_changes,
    notes,
    unmatched,
    unpaired,
    unproven,
)
from pytest_benchmarks.metrics.stats import moved_start

#: How a verdict's note says its initial states moved with the environment.
MOVED_NOTE = "initial states moved with the environment"


@dataclass(frozen=True)
class Side:
    """One run of a task as the gate reads it."""

    episodes: Sequence[EpisodeRecord]
    #: The settings its outcome depends on, as recorded.
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: The environment it ran in (``run_info.fingerprint``); empty where none was recorded.
    fingerprint: Mapping[str, Any] = field(default_factory=dict)
    policy: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Pairing:
    """What the first step found: whether the episodes pair, and what to say beside the
    verdict."""

    paired: bool = True
    notes: tuple[str, ...] = ()


def pair(
    old: Side,
    new: Side,
    names: tuple[str, str],
    remedy: str,
    absent: Mapping[str, Any] = comparability.DEFAULTS,
    per_task: bool = True,
) -> Pairing:
    """The pairing of two runs of a task, or ``Incomparable`` with the one line that says why
    not. ``per_task``: whether settings and environment are the task's own, to check and say
    beside its verdict (False where they are the whole run's, which ``compare`` checks and
    says once)."""
    changes: list[str] = []
    if per_task:
        changes = check_comparable(old.settings, new.settings, names, remedy, absent)
    environment = environment_changes(old.fingerprint, new.fingerprint)
    moved = moved_start(old.episodes, new.episodes)
    if moved is not None and not environment:
        raise Incomparable(unpaired(old.episodes, new.episodes, names) or "")
    said = notes(old.policy, new.policy, changes, environment if per_task else ())
    mismatch = unmatched(old.episodes, new.episodes, names)
    if mismatch is not None:
        said.append(mismatch)
    said += unproven(old.episodes, new.episodes, names)
    if moved is None:
        return Pairing(True, tuple(said))
    said.append(
        f"{MOVED_NOTE} (from episode {moved[0]}, {', '.join(environment)}): judged unpaired"
    )
    return Pairing(False, tuple(said))
