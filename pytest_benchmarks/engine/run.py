"""One run, without pytest: the engine that ``pytest_benchmarks.api.evaluate`` loops over and
the plugin's fixtures drive, task by task.

It owns what a run decides once (the settings, the selected tasks, what a resumed file keeps,
the slots each task steps) and runs one task at a time to a ``TaskResult``: the episodes its
plan still lacks, after the ones a resumed file kept, with the run's recorder, step trace and
deadline. Whatever ends the task, the result so far goes to the caller's ``writer``; with
``journaling``, every finished episode also goes to this process's journal the moment it ends
(``metrics.journal``), so no kill loses it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.policy import Policy
from pytest_benchmarks.core.processors import EnvProcessors
from pytest_benchmarks.core.results import TaskResult
from pytest_benchmarks.core.settings import Settings
from pytest_benchmarks.core.tasks import TaskRef
from pytest_benchmarks.engine.evaluation import evaluate_task
from pytest_benchmarks.engine.recording import check_parts, recorder_for
from pytest_benchmarks.engine.trace import StepTraceFile, trace_path
from pytest_benchmarks.engine.vector import LazyVectorEnv, preload_workers, slots_for
from pytest_benchmarks.metrics import journal
from pytest_benchmarks.metrics.journal import JournalWriter
from pytest_benchmarks.metrics.resume import (
    carry_on,
    finished,
    load_resumable,
    plan_task,
    same_policy,
)
from pytest_benchmarks.metrics.run_info import run_fingerprint

#: Receives a task's result whenever the task ends, finished or not.
Writer = Callable[[TaskResult], None]


@dataclass
class RunEngine:
    """A run's settings and tasks, and what a resumed file keeps of them."""

    settings: Settings
    #: The selected tasks per benchmark.
    selection: dict[str, list[TaskRef]]
    #: xdist workers sharing this machine (0: none); decides the automatic batch size.
    workers: int = 0
    #: --benchmark-resume: the earlier run's results of the selected tasks, by task id.
    resumed: dict[str, TaskResult] = field(default_factory=dict)
    #: Each episode to this process's journal as it ends (the run writes its metrics JSON).
    journaling: bool = False
    #: What reading the earlier run's journal dropped, one line each.
    notes: list[str] = field(default_factory=list)
    _journal: JournalWriter | None = field(default=None, repr=False)

    @classmethod
    def start(
        cls,
        settings: Settings,
        selection: dict[str, list[TaskRef]],
        workers: int = 0,
        journaling: bool = False,
    ) -> RunEngine:
        """The engine of a run; with ``settings.resume``, the file and journal it carries on
        are read and checked here (``metrics.resume.ResumeError``, one line)."""
        engine = cls(settings, selection, workers, journaling=journaling)
        preload_workers(catalog.get(name) for name, tasks in selection.items() if tasks)
        if settings.resume:
            ids = engine.task_ids()
            earlier = load_resumable(settings.metrics, settings, engine.notes)
            engine.resumed = {i: r for i, r in earlier.items() if i in ids}
            if settings.record is not None:
                check_parts(settings, engine.resumed.values())
        return engine

    @property
    def journal(self) -> JournalWriter | None:
        """This process's journal writer (its file opens with its first line)."""
        if self.journaling and self._journal is None:
            folder = journal.folder_for(self.settings.metrics)
            # The header keeps the environment too: a resume from the journal alone says
            # when it carries the run on under another simulator.
            run = {**self.settings.as_dict(), "fingerprint": run_fingerprint(self.settings)}
            self._journal = JournalWriter(folder, run)
        return self._journal

    def remove_journal(self) -> None:
        """The run's metrics JSON holds every row: its journal is no longer needed."""
        if self._journal is not None:
            self._journal.close()
        journal.discard(journal.folder_for(self.settings.metrics))

    def task_ids(self) -> set[str]:
        return {task.id for tasks in self.selection.values() for task in tasks}

    def tasks(self) -> list[TaskRef]:
        """Every selected task, in selection order."""
        return [task for tasks in self.selection.values() for task in tasks]

    @property
    def kept(self) -> dict[str, TaskResult]:
        """The tasks a resumed file finished: their results stand, their simulators never
        start."""
        return finished(self.resumed.values())

    def missing(self, task: TaskRef) -> list[int]:
        """The episode indices of ``task`` this run still runs."""
        return plan_task(self.resumed.get(task.id), self.settings.indices)[1]

    @property
    def batch_size(self) -> int:
        """The envs each task steps together."""
        return slots_for(self.settings, self.workers)

    def env(self, task: TaskRef) -> LazyVectorEnv:
        """The task's vector env; its workers start on first use. The caller closes it."""
        return LazyVectorEnv(
            catalog.get(task.env),
            self.settings.env_config(task),
            self.batch_size,
            sync=self.settings.sync or self.settings.single_env,
        )

    def run_task(
        self,
        env: LazyVectorEnv,
        policy: Policy | Callable[[], Policy],
        processors: EnvProcessors,
        writer: Writer,
        progress: Callable[[TaskResult], None] | None = None,
        notify: Callable[[str], None] | None = None,
        stop: Callable[[TaskResult], str | None] | None = None,
    ) -> TaskResult:
        """Run the episodes ``env``'s task still lacks, within ``--benchmark-timeout``, and
        return the task's whole row (the kept episodes first); ``stop`` (a sequential gate's
        rule) may end it once its answer is clear. ``writer`` gets that row however
        the task ends; an error propagates after it (see ``evaluation.evaluate_task``).
        ``notify`` gets, the moment it happens, a line the user must see (the journal could
        not be written, the task cannot be stopped from inside)."""
        settings = self.settings
        task = env.config.task
        kept, episodes = plan_task(self.resumed.get(task.id), settings.indices)
        planned = settings.planned
        trace = StepTraceFile(trace_path(settings.metrics, task)) if settings.debug else None
        log = self.journal
        if log is not None:
            log.notify = notify
            log.start(kept or TaskResult(task, batch_size=env.num_envs, planned=planned))

        def episode_done(result: TaskResult) -> None:
            if log is not None:  # on disk before anything else sees it
                log.episode(task.id, result.episodes[-1], result.policy)
            if progress is not None:
                progress(result)

        def task_done(partial: TaskResult) -> None:
            row = carry_on(kept, partial, planned)
            if log is not None:
                log.end(row)
            writer(row)

        try:
            result = evaluate_task(
                env,
                policy,
                processors=processors,
                seed=settings.seed,
                episodes=episodes,
                record=task_done,
                timeout=settings.timeout,
                progress=episode_done,
                trace=trace,
                recorder=recorder_for(settings, env.benchmark, task, processors),
                check_policy=None if kept is None else partial(same_policy, kept),
                notify=notify,
                stop=stop,
            )
        finally:
            if trace is not None:
                trace.close()
        return carry_on(kept, result, planned)
