"""The controller's side of ``--benchmark-ray``: each task a Ray task placed by the resources it
needs, its facts gathered from one mailbox, its episodes journaled here as they arrive, a task
whose node died carried on elsewhere from the episodes it finished.

The session stays the controller: its tests wait for their task's row here (``run_task``, the
engine's own signature), the gate, the metrics JSON and the journal are the same as with xdist
workers. Every task is handed to Ray when the session starts (``submit``), so the cluster runs
them side by side while the tests read their rows in order. Ray places each task on a node with
a free CPU (and a GPU for ``--benchmark-device=cuda``), not round-robin. A node's worker sends
each finished episode to the ``Mailbox`` actor, which lives on the controller's node; each
fact waits for the one before it to have arrived (``ray_node``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pytest_benchmarks.cluster import ray_connect, ray_serving
from pytest_benchmarks.cluster.ray_node import NodeRequest, run_on_node, warm_up
from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.errors import TaskLost, one_line
from pytest_benchmarks.core.policy import PolicyError
from pytest_benchmarks.core.results import TaskResult
from pytest_benchmarks.core.settings import Settings
from pytest_benchmarks.core.tasks import TaskRef
from pytest_benchmarks.engine.deadline import GRACE_S
from pytest_benchmarks.metrics.events import (
    EpisodeFinished,
    Event,
    Notice,
    TaskEnded,
    TaskFailed,
    TaskStarted,
)
from pytest_benchmarks.metrics.gate.sequential import SequentialStop
from pytest_benchmarks.metrics.journal import JournalWriter
from pytest_benchmarks.metrics.resume import carry_on, plan_task

#: How often a node's lost task is started again elsewhere before it is the task's error.
RETRIES = 3
#: How long one look at the mailbox waits for a fact.
WAIT_S = 0.2
#: How long an interrupted run waits for the facts its nodes already sent.
DRAIN_S = 5.0
#: A fact a live node sent arrives within this.
DRAIN_WAIT_S = 1.0
#: Past --benchmark-timeout and the engine's own stops, a task's Ray worker is ended from here.
CANCEL_AFTER_S = 3 * GRACE_S + 5.0


class RemoteTaskError(RuntimeError):
    """A task failed on its node: the node's traceback, as text."""


class Mailbox:
    """Facts of every running task in arrival order (a Ray actor on the controller's node).

    A fact leaves the mailbox only once the controller says it has it (``take``'s ``seen``):
    a take whose answer an interrupt cut off loses nothing."""

    def __init__(self) -> None:
        self.facts: list[Event] = []
        #: How many facts the controller has (those before ``facts[0]``).
        self.seen = 0
        self.arrived = asyncio.Event()

    async def put(self, event: Event) -> None:
        self.facts.append(event)
        self.arrived.set()

    async def take(self, seen: int, wait_s: float) -> list[Event]:
        """The facts after the controller's first ``seen``, waiting up to ``wait_s`` for one."""
        del self.facts[: seen - self.seen]
        self.seen = seen
        if not self.facts:
            self.arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.arrived.wait(), wait_s)
        return list(self.facts)


@dataclass
class Remote:
    """One task on the cluster: what it keeps, what arrived from its node, how it ended."""

    task: TaskRef
    #: The episodes the task started with (a resumed file's), or None.
    kept: TaskResult | None
    stop: SequentialStop | None
    #: The episodes its nodes finished in this session (carried on after a lost node).
    done: TaskResult
    ref: Any = None
    node: str = ""
    started_at: float | None = None
    journaled: bool = False
    #: Nodes lost running it.
    lost: int = 0
    #: Ended from here past --benchmark-timeout.
    cancelled: bool = False
    row: TaskResult | None = None
    error: TaskFailed | None = None
    #: The test waiting for the row: its progress and notices.
    progress: Callable[[TaskResult], None] | None = None
    notify: Callable[[str], None] | None = None
    lines: list[str] = field(default_factory=list)

    @property
    def ended(self) -> bool:
        return self.row is not None

    def so_far(self, planned: int) -> TaskResult:
        """Every episode the task has: the kept ones and those its nodes finished."""
        return carry_on(self.kept, self.done, planned)


class RayPool:
    """The session's tasks on a Ray cluster (``ray_connect.connect`` has joined it)."""

    def __init__(
        self, settings: Settings, journal: JournalWriter | None, show: Callable[[str], None]
    ) -> None:
        import ray

        self.ray = ray
        self.settings = settings
        self.journal = journal
        self.show = show
        here = ray.get_runtime_context().get_node_id()
        strategy = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(here, soft=False)
        actor = ray.remote(Mailbox).options(
            num_cpus=0, max_concurrency=1000, scheduling_strategy=strategy
        )
        #: The Mailbox actor's handle (Ray's types see the class, not the handle).
        self.mailbox: Any = actor.remote()
        #: How many of the mailbox's facts have been handled here.
        self.seen = 0
        self.remotes: dict[str, Remote] = {}
        self.needs = ray_connect.needs(settings)
        #: The settings a node runs a task with: as many envs as the task has CPUs there.
        self.on_node = replace(settings, batch_size=self.needs["num_cpus"])
        self.function = ray.remote(run_on_node).options(max_retries=0, **self.needs)
        self.paths = tuple(p for p in sys.path if p and os.path.isdir(p))
        self.modules = tuple(catalog.registered_modules())
        #: Why the cluster is gone, once it is.
        self.gone: str | None = None

    @classmethod
    def open(
        cls,
        settings: Settings,
        journal: JournalWriter | None,
        show: Callable[[str], None],
        envs: list[str],
    ) -> RayPool:
        """Join the cluster ``settings.ray`` names (a refusal is ``OptionError``, one line) and
        start a worker on each node for ``envs``' tasks."""
        assert settings.ray is not None
        ray_connect.connect(settings.ray, settings)
        pool = cls(settings, journal, show)
        pool.warm_up(envs)
        return pool

    def warm_up(self, envs: list[str]) -> None:
        """Start a worker on every node that can run a task, importing ``envs``' simulators,
        while the session collects: the tasks then find their workers ready."""
        ray = self.ray
        strategies = ray.util.scheduling_strategies
        cpus = self.needs["num_cpus"]
        function = ray.remote(warm_up)
        for node in ray.nodes():
            if node.get("Alive") and node["Resources"].get("CPU", 0) >= cpus:
                strategy = strategies.NodeAffinitySchedulingStrategy(node["NodeID"], soft=True)
                function.options(num_cpus=cpus, scheduling_strategy=strategy).remote(
                    self.paths, os.getcwd(), self.modules, tuple(envs)
                )

    def submit(
        self,
        task: TaskRef,
        kept: TaskResult | None = None,
        stop: SequentialStop | None = None,
    ) -> None:
        """Hand ``task`` to the cluster (once), carrying on from ``kept``'s episodes."""
        if task.id in self.remotes:
            return
        kept, _ = plan_task(kept, self.settings.indices)
        done = TaskResult(task, batch_size=self.on_node.batch_size, planned=self.settings.planned)
        remote = self.remotes[task.id] = Remote(task, kept, stop, done)
        self._start(remote, kept, stop)

    def _start(
        self,
        remote: Remote,
        kept: TaskResult | None,
        stop: SequentialStop | None,
    ) -> None:
        request = NodeRequest(
            self.on_node, remote.task, kept, stop, os.getcwd(), self.paths, self.modules
        )
        remote.started_at = None
        remote.ref = self.function.remote(request, self.mailbox)

    def run_task(
        self,
        task: TaskRef,
        writer: Callable[[TaskResult], None],
        progress: Callable[[TaskResult], None] | None = None,
        notify: Callable[[str], None] | None = None,
    ) -> TaskResult:
        """Wait for ``task``'s row (handing it to the cluster if it is not there yet), show
        its progress and notices, and give the row to ``writer``; the task's error is raised
        after it, as the engine's ``run_task`` does (``PolicyError`` for a policy that could
        not be built)."""
        remote = self.remotes.get(task.id)
        if remote is None:
            self.submit(task)
            remote = self.remotes[task.id]
        remote.progress, remote.notify = progress, notify
        for line in remote.lines:  # said while no test waited for it
            self._tell(remote, line)
        remote.lines.clear()
        while not remote.ended:
            self.pump()
        assert remote.row is not None
        writer(remote.row)
        error = remote.error
        if error is None:
            return remote.row
        if error.policy:
            raise PolicyError(error.line)
        if not error.trace:  # ended from here: the line is the whole story
            raise TaskLost(error.line)
        raise RemoteTaskError(error.trace)

    def pump(self) -> None:
        """One look: the facts that arrived, the tasks whose Ray task ended. A cluster that no
        longer answers ends every task that has not ended, each in one line."""
        ray = self.ray
        running = {r.ref: r for r in self.remotes.values() if not r.ended and r.ref is not None}
        try:
            ended, _ = ray.wait(list(running), num_returns=len(running), timeout=0)
            self._take(0 if ended else WAIT_S)
        except ray.exceptions.RayError as exc:
            self._lost_cluster(exc)
            return
        for ref in ended:
            self._finished(running[ref], ref)
        self._past_deadline()

    def _take(self, wait_s: float) -> int:
        """Handle the facts that arrived (waiting up to ``wait_s`` for one); how many."""
        facts = self.ray.get(self.mailbox.take.remote(self.seen, wait_s))
        for event in facts:
            getattr(self, f"_on_{event.kind}")(self.remotes[event.task], event)
            self.seen += 1
        return len(facts)

    def _on_task_started(self, remote: Remote, event: TaskStarted) -> None:
        remote.node, remote.started_at = event.node, time.monotonic()
        if self.journal is not None and not remote.journaled:
            remote.journaled = True
            self.journal.start(remote.kept or remote.done)

    def _on_episode_finished(self, remote: Remote, event: EpisodeFinished) -> None:
        record = event.record()
        remote.done.episodes.append(record)
        remote.done.policy = event.policy
        if self.journal is not None:
            self.journal.episode(remote.task.id, record, event.policy)
        if remote.progress is not None:
            remote.progress(remote.so_far(self.settings.planned))

    def _on_notice(self, remote: Remote, event: Notice) -> None:
        self._tell(remote, event.line)

    def _on_task_ended(self, remote: Remote, event: TaskEnded) -> None:
        self._end(remote, event.result())

    def _end(self, remote: Remote, row: TaskResult) -> None:
        """The task's row, however it ended: kept for its test, journaled."""
        if remote.cancelled and row.error is None:
            row = replace(row, error=self._timeout_error(remote))
        remote.row = row
        if self.journal is not None:
            self.journal.end(row)

    def _on_task_failed(self, remote: Remote, event: TaskFailed) -> None:
        remote.error = event

    def _tell(self, remote: Remote, line: str) -> None:
        if remote.notify is not None:
            remote.notify(line)
        elif remote.ended:
            self.show(f"{remote.task.id}: {line}")
        else:
            remote.lines.append(line)

    def _finished(self, remote: Remote, ref: Any) -> None:
        """The Ray task ended: with its row (its facts arrived before it returned); with its
        node gone, in which case the task starts again elsewhere from what arrived; or with
        its worker gone or its code unable to start there, which is the task's error."""
        try:
            self.ray.get(ref)
            why = "its Ray task returned without its row"
        except self.ray.exceptions.NodeDiedError as exc:
            self._carry_on(remote, one_line(exc))
            return
        except self.ray.exceptions.RayError as exc:
            why = one_line(exc)
        if remote.ended:
            return
        if remote.cancelled:
            self._fail(remote, self._timeout_error(remote))
        else:
            node = remote.node[:8] or "?"
            self._fail(remote, f"RayTaskFailed: {remote.task.id} on node {node}: {why}")

    def _carry_on(self, remote: Remote, why: str) -> None:
        """Its node died: start the task again on another from the episodes that arrived."""
        planned = self.settings.planned
        so_far = remote.so_far(planned)
        node = remote.node[:8] or "?"
        remote.lost += 1
        if remote.lost > RETRIES:
            self._fail(remote, f"NodeLost: {remote.task.id} lost {remote.lost} nodes: {why}")
            return
        self._tell(
            remote,
            f"{remote.task.id}: node {node} lost after {so_far.n_episodes} of {planned} "
            f"episodes ({why}); "
            f"carried on from them on another node (try {remote.lost + 1} of {RETRIES + 1})",
        )
        stop = None if remote.stop is None else remote.stop.carried(so_far.episodes)
        self._start(remote, so_far if so_far.episodes else None, stop)

    def _fail(self, remote: Remote, error: str) -> None:
        row = replace(remote.so_far(self.settings.planned), error=error)
        self._end(remote, row)
        remote.error = TaskFailed(remote.task.id, error)

    def _lost_cluster(self, exc: BaseException) -> None:
        """The mailbox no longer answers: every task not ended fails with what arrived."""
        self.gone = cluster_gone(self.ray, self.settings.ray or "auto", exc)
        planned = self.settings.planned
        for remote in self.remotes.values():
            if not remote.ended:
                kept = remote.so_far(planned).n_episodes
                self._fail(remote, f"ClusterLost: {remote.task.id}: {self.gone}; "
                                   f"{kept} of {planned} episodes kept")  # fmt: skip
                remote.ref = None

    def _timeout_error(self, remote: Remote) -> str:
        return (
            f"TaskTimeout: {remote.task.id} timed out after {self.settings.timeout:g} s "
            "(--benchmark-timeout); its Ray worker did not stop and was ended from outside"
        )

    def _past_deadline(self) -> None:
        limit = self.settings.timeout
        if limit is None:
            return
        now = time.monotonic()
        for remote in self.remotes.values():
            started = remote.started_at
            if remote.ended or remote.cancelled or started is None:
                continue
            if now - started > limit + CANCEL_AFTER_S:
                remote.cancelled = True
                self.ray.cancel(remote.ref, force=True)

    def stop(self, why: str = "KeyboardInterrupt") -> None:
        """An interrupted run: journal every fact already sent (the episodes a node finished
        before the interrupt), then end what still runs on the cluster, each such task's row
        ended with ``why`` (the signal's error) and journaled, so none reads as lost."""
        running = [r for r in self.remotes.values() if not r.ended and r.ref is not None]
        if not running:  # all ended, or stopped already (an interrupt, then close)
            return
        deadline = time.monotonic() + DRAIN_S
        try:
            while self._take(DRAIN_WAIT_S) and time.monotonic() < deadline:
                pass
        except self.ray.exceptions.RayError as exc:
            self._lost_cluster(exc)
            return
        planned = self.settings.planned
        for remote in running:
            if not remote.ended:
                self.ray.cancel(remote.ref, force=True)
                kept = remote.so_far(planned).n_episodes
                self._fail(remote, f"{why}: the session stopped; {remote.task.id}'s Ray task "
                                   f"was cancelled after {kept} of {planned} episodes")  # fmt: skip
            remote.ref = None

    def close(self) -> None:
        """Stop what still runs (an interrupted session), the nodes' policy servers, and leave
        the cluster."""
        self.stop()
        if self.gone is not None:  # nothing there to stop; leave without waiting on it
            with contextlib.suppress(Exception):
                self.ray.shutdown()
            return
        if self.settings.policy_server == "on":
            ray_serving.stop_all()
        self.ray.shutdown()


def cluster_gone(ray: Any, address: str, exc: BaseException) -> str:
    """Why the cluster stopped answering, in words: its head gone, or the link to it lost."""
    try:
        head = ray.get_runtime_context().gcs_address
    except Exception:  # the reason below is then the error itself
        head = ""
    silent = ray_connect.answers(head) if head else None
    if silent is not None:
        return f"the Ray cluster at {address} is gone (its head at {head}: {silent})"
    return f"the Ray cluster at {address} is gone from this session ({one_line(exc)[:200]})"
