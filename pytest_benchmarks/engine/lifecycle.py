"""A run from open to close, the one way both drivers take: ``api.evaluate`` and the plugin
(its controller, and each xdist worker with the parts a worker owns).

Opening decides what the validated settings leave open (the policy server, from the workers;
the image size a LeRobot checkpoint declares), takes the run's outputs (the metrics file, the
record folder) so no other session writes them, discards an earlier run's journal where this
is a new run (it would mix in), and starts the ``RunEngine`` (which reads a resumed file).
``serve`` starts the run's policy servers, the one place they start; closing (or releasing)
stops them, removes the journal once the metrics file holds every row, and releases the
outputs.
Every refusal on the way is one line (``OptionError``; a resumed file, ``ResumeError``), and a
refused open leaves nothing locked.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pytest_benchmarks.core.settings import DEFAULT_SERVER_WAIT_MS, Settings
from pytest_benchmarks.core.tasks import TaskRef
from pytest_benchmarks.core.validation import OptionError
from pytest_benchmarks.engine.output_lock import OutputBusy, OutputLock, lock_outputs
from pytest_benchmarks.engine.run import RunEngine
from pytest_benchmarks.engine.vector import slots_for
from pytest_benchmarks.metrics import journal
from pytest_benchmarks.policies.declared import with_declared_images
from pytest_benchmarks.policies.endpoint import Endpoint
from pytest_benchmarks.serving import launch


def resolved(settings: Settings, workers: int) -> Settings:
    """The settings as the run uses them: the policy server decided from the workers (and a
    served run batched), batching as it runs, then the image size a LeRobot checkpoint
    declares."""
    return with_declared_images(batching(launch.resolve(settings, workers), workers))


def batching(settings: Settings, workers: int) -> Settings:
    """``batched_inference`` as it runs: without a policy server, slots share a forward pass
    only where a task steps more than one env. A batch of one acts exactly as batch-of-one
    inference, so the run block, resume and the snapshot's settings record it as such."""
    alone = settings.policy_server != "on" and slots_for(settings, workers) < 2
    if settings.batched_inference and alone:
        return replace(settings, batched_inference=False)
    return settings


def unserved_wait(settings: Settings) -> str | None:
    """The line that says --benchmark-policy-server-wait waits for nothing, where this run has
    no policy server (``settings`` resolved: off as given, or as ``auto`` decided), else None.
    A session says it and runs (an ini shared with GPU runs may set the wait); ``evaluate()``,
    whose arguments are all the caller's own, refuses it."""
    if settings.policy_server != "off" or settings.policy_server_wait == DEFAULT_SERVER_WAIT_MS:
        return None
    return (
        f"--benchmark-policy-server-wait={settings.policy_server_wait:g}: no policy server in "
        "this run (--benchmark-policy-server is off, or auto, which serves a lerobot: policy on "
        "a CUDA device, under xdist or on Ray), so it waits for nothing"
    )


@dataclass
class Run:
    """An open run: its engine, the outputs it holds, and what became of an earlier journal."""

    engine: RunEngine
    #: The run's outputs, held until ``close``.
    locks: list[OutputLock] = field(default_factory=list)
    #: What discarding an earlier run's journal removed, for the session's header (or None).
    journal_line: str | None = None
    #: The policy servers ``serve`` started, until ``stop_serving``.
    servers: launch.PolicyServers | None = None

    @classmethod
    def open(
        cls,
        settings: Settings,
        tasks: dict[str, list[TaskRef]],
        workers: int = 0,
        *,
        owner: bool,
        metrics: bool,
        journaling: bool,
    ) -> Run:
        """Open a run of ``tasks`` with validated ``settings`` (``resolved`` already).

        ``owner``: this process owns the run's outputs (the API, the plugin's controller; an
        xdist worker does not); ``metrics``: it writes the metrics file; ``journaling``: each
        finished episode goes to this process's journal.
        """
        try:
            locks = lock_outputs(settings, metrics=metrics) if owner else []
        except OutputBusy as exc:
            raise OptionError(str(exc)) from None
        try:
            line = None
            if owner and metrics and not settings.resume:
                line = _discard_earlier_journal(settings)
            engine = RunEngine.start(settings, tasks, workers, journaling=journaling)
        except BaseException:
            for lock in locks:
                lock.release()
            raise
        return cls(engine, locks, line)

    def serve(self) -> list[Endpoint]:
        """Start the run's policy servers, one per device, where this process serves them
        (``--benchmark-policy-server`` on, resolved; on Ray each node serves its own tasks):
        their endpoints, or none."""
        settings = self.engine.settings
        if settings.policy_server != "on" or settings.ray is not None or self.servers:
            return [] if self.servers is None else self.servers.endpoints
        self.servers = launch.PolicyServers(settings)
        return self.servers.start()

    def stop_serving(self) -> None:
        """Stop the policy servers (idempotent)."""
        servers, self.servers = self.servers, None
        if servers is not None:
            servers.stop()

    def close(self, complete: bool) -> None:
        """End the run: with ``complete`` (its metrics file holds every row), its journal is
        no longer needed and goes; its outputs are released either way."""
        try:
            if complete:
                self.engine.remove_journal()
        finally:
            self.release()

    def release(self) -> None:
        """Stop the policy servers and let other sessions write the run's outputs again
        (idempotent)."""
        try:
            self.stop_serving()
        finally:
            for lock in self.locks:
                lock.release()


def _discard_earlier_journal(settings: Settings) -> str | None:
    """A new run: an earlier run's journal at its metrics path would mix in, so it goes; the
    line that says what it held, or None."""
    folder = journal.folder_for(settings.metrics)
    try:
        return journal.discard(folder).line(folder)
    except journal.JournalPathError as exc:
        raise OptionError(f"--benchmark-metrics: the journal's path {exc}") from None
    except OSError as exc:
        raise OptionError(journal.undiscarded(folder, exc)) from None
