"""Per-session plugin state, kept in ``config.stash``, and the stash keys tests carry results on."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pytest

from pytest_benchmarks.core.results import TaskResult
from pytest_benchmarks.core.settings import Settings
from pytest_benchmarks.core.tasks import EnvConfig, TaskRef
from pytest_benchmarks.core.validation import OptionError
from pytest_benchmarks.engine import lifecycle
from pytest_benchmarks.engine.lifecycle import Run
from pytest_benchmarks.engine.output_lock import OutputLock
from pytest_benchmarks.engine.run import RunEngine
from pytest_benchmarks.metrics.gate import Comparison
from pytest_benchmarks.metrics.resume import ResumeError
from pytest_benchmarks.plugin import options

if TYPE_CHECKING:
    from pytest_benchmarks.cluster.ray_pool import RayPool


@dataclass
class SessionState:
    """What the plugin knows about this session, in a worker or the controller."""

    #: The open run: its engine (settings, tasks, what a resumed file keeps: the API drives
    #: the same), the outputs it holds, what became of an earlier journal.
    run: Run
    #: Benchmarks skipped because their extra is not installed -> reason.
    unavailable: dict[str, str]
    #: Benchmarks left out by ``--benchmark-env``.
    excluded: list[str]
    #: True in an xdist worker: it runs tasks but writes no metrics file.
    is_worker: bool
    #: Results computed in this process, by task id: later tests of a task read them.
    cache: dict[str, TaskResult] = field(default_factory=dict)
    #: Results gathered from test reports (the controller's view), by task id.
    results: dict[str, TaskResult] = field(default_factory=dict)
    started_at: float = field(default_factory=time.time)
    #: Benchmark tests deselected, per benchmark, and benchmark tests collected.
    deselected: dict[str, int] = field(default_factory=dict)
    collected: int = 0
    #: Per test function: the tasks that can fail, Tarone's K, the tasks with a snapshot.
    gate_families: dict[str, tuple[frozenset[str], int, int]] = field(default_factory=dict)
    #: What the policies left running and the session ended, one line each (the summary's).
    leftover_lines: list[str] = field(default_factory=list)
    #: The policy server this process's policies act through (an endpoint's text), or None.
    endpoint: str | None = None
    #: --benchmark-ray: the cluster the controller's tests take their rows from.
    remote: RayPool | None = None

    @property
    def engine(self) -> RunEngine:
        return self.run.engine

    @property
    def locks(self) -> list[OutputLock]:
        """The controller's locks on this run's outputs (the snapshot folders' join them),
        held until the session ends."""
        return self.run.locks

    @property
    def journal_line(self) -> str | None:
        """What became of an earlier run's journal at the start, for the header."""
        return self.run.journal_line

    @property
    def settings(self) -> Settings:
        return self.engine.settings

    @property
    def selection(self) -> dict[str, list[TaskRef]]:
        """Tasks to run per active benchmark."""
        return self.engine.selection

    @property
    def resumed(self) -> dict[str, TaskResult]:
        """--benchmark-resume: the earlier run's results of this selection, by task id."""
        return self.engine.resumed

    def task_ids(self) -> set[str]:
        return self.engine.task_ids()

    def env_config(self, task: TaskRef) -> EnvConfig:
        return self.settings.env_config(task)


def build_state(config: pytest.Config) -> SessionState:
    """Validate the options, work out which benchmarks and tasks this session runs, and open
    the run (``engine.lifecycle.Run``, as ``api.evaluate`` does): the controller owns its
    outputs and writes its metrics file, a worker runs tasks in it.

    Raises pytest.UsageError with one line for anything invalid, before collection.
    """
    is_worker = hasattr(config, "workerinput")
    is_controller = not is_worker and not config.option.collectonly
    settings, selection = options.load(config, check_metrics=is_controller)
    workers = (
        int(config.workerinput["workercount"])  # type: ignore[attr-defined]
        if is_worker
        else int(getattr(config.option, "numprocesses", 0) or 0)
    )
    try:
        run = Run.open(
            lifecycle.resolved(settings, workers), selection.tasks, workers,
            owner=is_controller, metrics=is_controller,
            journaling=not config.option.collectonly,
        )  # fmt: skip
    except (OptionError, ResumeError) as exc:
        raise pytest.UsageError(str(exc)) from None
    unserved = lifecycle.unserved_wait(run.engine.settings)
    if unserved is not None:
        run.engine.notes.append(unserved)
    state = SessionState(
        run=run,
        unavailable=selection.unavailable,
        excluded=selection.excluded,
        is_worker=is_worker,
    )
    # A finished task's tests read its kept result; its simulator never starts.
    kept = run.engine.kept
    state.cache.update(kept)
    if not is_worker:
        state.results.update(kept)
    if is_worker:
        state.endpoint = config.workerinput.get(SERVER_KEY)  # type: ignore[attr-defined]
    return state


STATE = pytest.StashKey[SessionState]()
#: A result computed by a test, waiting to ride on its report to the controller (item stash).
PENDING = pytest.StashKey[TaskResult]()
#: The snapshot gate's verdict on the task a test compared, for its report.
GATE = pytest.StashKey[tuple[str, int, Comparison]]()
#: Why --snapshot-update kept a task's snapshot, for its report.
KEPT = pytest.StashKey[str]()
#: The ``workeroutput`` key under which an xdist worker hands over, at its end, the events no
#: report carried (the rows of tasks interrupted mid-test).
WORKER_EVENTS = "benchmark_events"
#: The ``workeroutput`` key for a worker's counts of benchmark tests collected and deselected
#: (the controller of an xdist run collects nothing itself).
WORKER_COUNTS = "benchmark_counts"
#: The ``workerinput`` key of the policy server a worker uses (an endpoint's text).
SERVER_KEY = "benchmark_policy_server"


def get_state(config: pytest.Config) -> SessionState:
    return config.stash[STATE]
