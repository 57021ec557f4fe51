"""The episode plan: which seed and initial state each episode index uses.

Episode i of a task gets seed ``base_seed + i`` and the benchmark's initial state for i, whatever
the batch size, worker count, shard or order, so a deterministic policy produces the same
per-episode outcome in every configuration and any episode can be rerun alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pytest_benchmarks.core.benchmark import Benchmark
from pytest_benchmarks.core.tasks import TaskRef


@dataclass(frozen=True)
class EpisodeSpec:
    """One planned episode."""

    index: int
    seed: int
    init_state: int


def episode_seed(base_seed: int, index: int) -> int:
    """The seed of episode ``index``: a function of the base seed and the index only."""
    return base_seed + index


def plan_episodes(
    benchmark: Benchmark, task: TaskRef, base_seed: int, indices: Iterable[int]
) -> list[EpisodeSpec]:
    """Specs for the given episode indices, in the given order."""
    return [
        EpisodeSpec(i, episode_seed(base_seed, i), benchmark.init_state(task, i)) for i in indices
    ]
