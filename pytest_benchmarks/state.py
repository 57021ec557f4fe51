"""Per-session plugin state, kept in ``config.stash``."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import pytest

from pytest_benchmarks import registry
from pytest_benchmarks.registry import EnvConfig, TaskRef
from pytest_benchmarks.results import TaskResult
from pytest_benchmarks.settings import Settings
from pytest_benchmarks.vector import auto_batch_size


@dataclass
class SessionState:
    """What the plugin knows about this session, in a worker or the controller."""

    settings: Settings
    #: Tasks to run per active benchmark.
    selection: dict[str, list[TaskRef]]
    #: Benchmarks skipped because their extra is not installed -> reason.
    unavailable: dict[str, str]
    #: Benchmarks left out by ``--benchmark-env``.
    excluded: list[str]
    #: True in an xdist worker: it runs tasks but writes no metrics file.
    is_worker: bool
    #: xdist workers in the session (0 without xdist).
    workers: int
    #: Results computed in this process, by task id: later tests of a task read them.
    cache: dict[str, TaskResult] = field(default_factory=dict)
    #: Results gathered from test reports (the controller's view), by task id.
    results: dict[str, TaskResult] = field(default_factory=dict)
    started_at: float = field(default_factory=time.time)
    deselected: int = 0

    def task_ids(self) -> set[str]:
        return {t.id for tasks in self.selection.values() for t in tasks}

    def env_config(self, task: TaskRef) -> EnvConfig:
        benchmark = registry.get(task.env)
        steps = self.settings.max_steps or benchmark.default_max_steps(task)
        return EnvConfig(task=task, max_steps=steps, seed=self.settings.seed)

    def batch_size(self, episodes: int) -> int:
        if self.settings.batch_size:
            return min(self.settings.batch_size, episodes)
        return auto_batch_size(episodes, max(1, self.workers))


STATE = pytest.StashKey[SessionState]()
#: A result computed by a test, waiting to ride on its report to the controller (item stash).
PENDING = pytest.StashKey[TaskResult]()


def get_state(config: pytest.Config) -> SessionState:
    return config.stash[STATE]
