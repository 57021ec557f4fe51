"""One task on a Ray node: the engine runs there as it runs in an xdist worker, and each fact
(the task started, an episode finished, a notice, the task's row or its error) goes to the
controller's mailbox the moment it happens.

Each fact waits for the one before it to have arrived: while an episode runs, the one that
finished before it is on its way, so a node that dies loses at most that one and the episode it
was running; the controller keeps the rest and carries the task on from them elsewhere. The
engine runs in the worker's main thread, where ``--benchmark-timeout``'s timer works
(``engine.deadline``). The node sees the controller's files (a shared filesystem, as a cluster
has): it works in the controller's directory, with its import paths, and imports the modules
that registered benchmarks there.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from pytest_benchmarks.cluster import ray_serving
from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.errors import one_line
from pytest_benchmarks.core.policy import PolicyError
from pytest_benchmarks.core.results import TaskResult
from pytest_benchmarks.core.settings import Settings
from pytest_benchmarks.core.tasks import TaskRef
from pytest_benchmarks.engine.run import RunEngine
from pytest_benchmarks.metrics.events import (
    EpisodeFinished,
    Event,
    Notice,
    TaskEnded,
    TaskFailed,
    TaskStarted,
)
from pytest_benchmarks.metrics.gate.sequential import SequentialStop
from pytest_benchmarks.policies import build_policy


@dataclass(frozen=True)
class NodeRequest:
    """A task to run on a node, with what the controller's process knows that the node does
    not: the episodes already kept, the stopping rule, its directory and import paths.

    What it tells the controller, as the run's events (``metrics.events``): ``TaskStarted``
    (with its node), ``EpisodeFinished``, ``Notice``, ``TaskEnded`` (the task's whole row,
    however it ended), ``TaskFailed`` (after the row, when the policy could not be built or
    the node's code failed)."""

    #: The run's settings, with the batch size the task's CPUs on the node give.
    settings: Settings
    task: TaskRef
    #: The task's episodes kept so far (a resumed file's, or a lost node's), or None.
    kept: TaskResult | None
    #: --benchmark-sequential's rule for the task, or None.
    stop: SequentialStop | None
    cwd: str
    paths: tuple[str, ...]
    #: Modules that registered benchmarks in the controller (``catalog.registered_modules``).
    modules: tuple[str, ...]


def _enter(paths: tuple[str, ...], cwd: str, modules: tuple[str, ...]) -> None:
    """Work where the controller works, import what it imports."""
    for path in reversed(paths):
        if path not in sys.path:
            sys.path.insert(0, path)
    importlib.invalidate_caches()
    if os.path.isdir(cwd):
        os.chdir(cwd)
    for module in modules:
        importlib.import_module(module)


def warm_up(paths: tuple[str, ...], cwd: str, modules: tuple[str, ...], envs: tuple[str, ...]
            ) -> None:  # fmt: skip
    """Start a node's worker process and import what its tasks will (the benchmarks, their
    simulators) while the session still collects its tests."""
    _enter(paths, cwd, modules)
    for name in envs:
        catalog.get(name)


def run_on_node(request: NodeRequest, mailbox: Any) -> None:
    """Run ``request``'s task here, telling ``mailbox`` (the controller's ``Mailbox`` actor)
    everything as it happens; what goes wrong goes there too, as the task's error."""
    import ray

    task = request.task

    unacknowledged: list[Any] = []

    def tell(event: Event, wait: bool = True) -> None:
        """Send a fact; the one sent before it must have arrived first (``wait``), and this
        one too before the task returns: at most the last finished episode is on its way when
        the node dies, while the next one runs."""
        if wait and unacknowledged:
            ray.get(unacknowledged)
            unacknowledged.clear()
        unacknowledged.append(mailbox.put.remote(event))

    node = ray.get_runtime_context().get_node_id()
    tell(TaskStarted.here(task.id, node=node))
    try:
        _enter(request.paths, request.cwd, request.modules)
        settings = request.settings
        resumed = {task.id: request.kept} if request.kept is not None else {}
        engine = RunEngine(settings, {task.env: [task]}, resumed=resumed)
        env = engine.env(task)
        processors = env.benchmark.processors(env.config)

        loading = settings.loading
        if settings.policy_server == "on":  # the node's server acts for its tasks' slots
            server, started = ray_serving.endpoint_for(settings, node)
            loading = replace(loading, server=server)
            if started is not None:
                tell(Notice(task.id, started), wait=False)

        build = partial(build_policy, settings.policy, env.benchmark, env.config, env.num_envs,
                        loading, processors.features)  # fmt: skip

        def episode(result: TaskResult) -> None:
            tell(EpisodeFinished.of(task.id, result.episodes[-1], result.policy))

        engine.run_task(
            env,
            build,
            processors,
            lambda row: tell(TaskEnded.of(row)),
            progress=episode,
            notify=lambda line: tell(Notice(task.id, line), wait=False),
            stop=request.stop,
        )
    except PolicyError as exc:
        tell(TaskFailed(task.id, str(exc), policy=True))
    except BaseException as exc:  # the task's error, whatever it is, reaches the controller
        tell(TaskFailed(task.id, one_line(exc), trace=traceback.format_exc()))
    ray.get(unacknowledged)  # every fact arrived before the task returns
