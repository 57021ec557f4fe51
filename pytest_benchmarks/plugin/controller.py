"""The controller's side (registered in the controller only; ``worker`` is the xdist worker's):
gather TaskResults from test reports, keep the metrics JSON (``engine.metrics_file``) up to
date, print the table.

Results ride on test reports, so the same code serves runs with and without xdist, and a crashed
worker loses only the task it was running. The metrics JSON is rewritten atomically after every
task and once more at session end (also after Ctrl-C), so an interrupted run keeps what finished.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import time
from typing import Any

import pytest

from pytest_benchmarks.core.files import parts_dir
from pytest_benchmarks.core.results import TaskResult
from pytest_benchmarks.engine import streams
from pytest_benchmarks.engine.dataset import none_succeeded
from pytest_benchmarks.engine.metrics_file import MetricsFile
from pytest_benchmarks.engine.vector import describe_exit
from pytest_benchmarks.metrics import gate, journal
from pytest_benchmarks.metrics.gate import Comparison
from pytest_benchmarks.metrics.table import table
from pytest_benchmarks.plugin import events, signals
from pytest_benchmarks.plugin.nodeids import task_of_nodeid
from pytest_benchmarks.plugin.progress import progress_line
from pytest_benchmarks.plugin.recording import build_record
from pytest_benchmarks.plugin.session import SERVER_KEY, WORKER_COUNTS, WORKER_EVENTS, SessionState
from pytest_benchmarks.plugin.watchdog import Watchdog

#: How long a worker whose channel closed is given to show its exit status.
EXIT_WAIT_S = 0.25


def worker_exit(pid: int | None) -> str:
    """How an xdist worker process ended (``killed by SIGKILL``): its exit status read without
    reaping it (``waitid`` with ``WNOWAIT``: execnet still reaps its own child), or "crashed"
    where it cannot be (no pid known: the worker never started a task; not this process's
    child; still running after ``EXIT_WAIT_S``).

    A killed worker's status is there as its channel closes; one that lost its test to a signal
    still runs, waiting for the controller to end its gateway, so a longer wait only delays the
    stop (it held a Ctrl-C'd ``-n 2`` session 10 s).
    """
    deadline = time.monotonic() + EXIT_WAIT_S
    while pid is not None:
        try:
            info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG)
        except (ChildProcessError, OSError):
            break
        if info is not None:
            killed = info.si_code in (os.CLD_KILLED, os.CLD_DUMPED)
            return describe_exit(-info.si_status if killed else info.si_status)
        if time.monotonic() >= deadline:
            break
        time.sleep(0.01)
    return "crashed"


class Controller:
    """A plugin object registered in the controller process only."""

    def __init__(self, config: pytest.Config, state: SessionState) -> None:
        self.config = config
        self.state = state
        #: The snapshot gate's verdicts as the tests reported them, by test node id.
        self.verdicts: dict[str, tuple[str, int, Comparison]] = {}
        #: The same after Holm's step-down over each test function's tasks (session end).
        self.judged: list[Comparison] = []
        #: Regressions only Holm's later steps found: no test failed for them.
        self.late: set[str] = set()
        #: Why --snapshot-update kept snapshots.
        self.kept: list[str] = []
        #: What became of --benchmark-record, for the summary.
        self.record_line: str | None = None
        #: The metrics JSON; a failed write (a full disk) is said once and retried.
        self.metrics = MetricsFile(
            state.settings,
            list(config.invocation_params.args),
            config.rootpath,
            workers=state.engine.workers,
            keep_going=True,
            started_at=state.started_at,
        )
        #: The session failed before any task finished (its document holds no task).
        self.failed_empty = False
        #: Each xdist worker's pid, from the tasks it started: how it ended, if it crashes.
        self.worker_pids: dict[str, int] = {}
        #: Ends the xdist workers whose task ran past --benchmark-timeout and did not stop.
        self.watchdog: Watchdog | None = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        node = getattr(report, "node", None)
        worker = getattr(getattr(node, "gateway", None), "id", None)
        for event in events.read(report):
            self.dispatch(event, worker, report.nodeid)

    def dispatch(self, event: events.Event, worker: str | None, nodeid: str = "") -> None:
        """Every event, whichever way it came (a report, a worker's end, the journal), to the
        one method of its kind: ``worker`` is its xdist worker (None without xdist), ``nodeid``
        the test whose report carried it."""
        getattr(self, f"on_{event.kind}")(event, worker, nodeid)

    def on_task_started(self, event: events.TaskStarted, worker: str | None, _: str) -> None:
        if worker is not None:
            self.worker_pids[worker] = event.pid
        if self.watchdog is not None and worker is not None:
            line = self.watchdog.started(worker, event)
            if line is not None:
                self.show(line)

    def on_task_stopped(self, event: events.TaskStopped, worker: str | None, _: str) -> None:
        if self.watchdog is not None and worker is not None:
            self.watchdog.finished(worker)

    def on_progress(self, event: events.Progress, worker: str | None, _: str) -> None:
        self.show(progress_line(event, worker))

    def on_notice(self, event: events.Notice, worker: str | None, _: str) -> None:
        self.show(f"[{worker}] {event.line}" if worker else event.line)

    def on_task_ended(self, event: events.TaskEnded, _: str | None, __: str) -> None:
        """A task's row: the first to arrive stands (a report's before the same row from a
        worker's end or the journal, which are there for the tasks no report carried)."""
        if event.task not in self.state.results:
            self.state.results[event.task] = event.result()
            self.write(partial=True, exitstatus=None)

    def on_verdict(self, event: events.Verdict, _: str | None, nodeid: str) -> None:
        self.verdicts[nodeid] = event.judged()

    def on_snapshot_kept(self, event: events.SnapshotKept, _: str | None, __: str) -> None:
        self.kept.append(event.line)

    def show(self, line: str) -> None:
        """A whole line on the terminal, also mid-test (output capture is paused for it)."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        capture = self.config.pluginmanager.get_plugin("capturemanager")
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            writer = getattr(reporter, "_tw", None)
            if writer is not None and writer.width_of_current_line:
                writer.line()  # after xdist's progress dots
            reporter.write_line(line)
        streams.guard_again()  # the capture resumed with its own streams: a task may be running

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        """An xdist worker died running a task's test: record the task as failed, with how the
        worker died, and fail the task's tests that were dropped rather than run again."""
        task_id = task_of_nodeid(crashitem, self.state.task_ids())
        if task_id is None:
            return
        worker = getattr(report, "node", None)
        name = getattr(getattr(worker, "gateway", None), "id", "?")
        exited = worker_exit(self.worker_pids.get(name))
        error = f"WorkerCrashed: xdist worker {name} {exited} running {crashitem}"
        if self.watchdog is not None and task_id in self.watchdog.ended:
            error = (
                f"TaskTimeout: {task_id} timed out after {self.state.settings.timeout:g} s "
                "(--benchmark-timeout); its worker did not stop and was ended from outside"
            )
        if task_id not in self.state.results:
            # The episodes it finished are in its journal (those a resumed file kept too).
            earlier = self.journaled().get(task_id) or self.state.resumed.get(task_id)
            if earlier is not None:
                crashed = dataclasses.replace(earlier, error=error)
            else:
                task = next(
                    t for ts in self.state.selection.values() for t in ts if t.id == task_id
                )
                planned = self.state.settings.planned
                crashed = TaskResult(task, planned=planned, error=error)
            self.dispatch(events.TaskEnded.of(crashed), name)  # the road every row takes
        report.longrepr = error
        for nodeid in getattr(sched, "dropped", {}).pop(crashitem, []):
            self.config.hook.pytest_runtest_logreport(
                report=pytest.TestReport(
                    nodeid=nodeid,
                    location=(nodeid.split("::")[0], None, nodeid),
                    keywords={},
                    outcome="failed",
                    longrepr=f"not run: {task_id} failed earlier in this session: {error}",
                    when="call",
                )
            )

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """Hand each xdist worker its policy server, the workers spread over the devices."""
        servers = self.state.run.servers
        if servers is not None:
            number = str(node.gateway.id).removeprefix("gw")
            index = int(number) if number.isdigit() else 0
            node.workerinput[SERVER_KEY] = servers.for_worker(index).text()

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodeready(self, node: Any) -> None:
        signals.workers_ready = True

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """An xdist worker ended: keep the tasks it ran that no report carried (interrupted
        mid-test), with their finished episodes. While the session stops for a signal, a worker
        that ended is not replaced: xdist is told to stop instead."""
        dsession = self.config.pluginmanager.get_plugin("dsession")
        if signals.received is not None and dsession is not None and not dsession.shouldstop:
            dsession.shouldstop = f"stopped by {signal.Signals(signals.received).name}"
        output = getattr(node, "workeroutput", None) or {}
        # Every worker collects every test: its counts are the session's.
        collected, deselected = output.get(WORKER_COUNTS, (0, {}))
        self.state.collected = max(self.state.collected, collected)
        for env, count in deselected.items():
            self.state.deselected[env] = max(self.state.deselected.get(env, 0), count)
        name = getattr(getattr(node, "gateway", None), "id", None)
        for data in output.get(WORKER_EVENTS, []):
            self.dispatch(events.parse(data), name)

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Start the watchdog and the policy servers (before xdist starts its workers)."""
        endpoints = [] if self.config.option.collectonly else self.state.run.serve()
        if endpoints:
            self.show(
                "policy server: "
                + ", ".join(f"{e.device} (pid {e.pid}, log {e.log})" for e in endpoints)
            )
            if not getattr(self.config.option, "numprocesses", None):
                self.state.endpoint = endpoints[0].text()
        timeout = self.state.settings.timeout
        if timeout and getattr(self.config.option, "numprocesses", None):
            self.watchdog = Watchdog(timeout)
            self.watchdog.start()

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.watchdog is not None:
            self.watchdog.stop()
        self.state.run.stop_serving()
        # Without xdist, a task interrupted by Ctrl-C never got a test report; its partial
        # result is still in this process's cache.
        for result in self.state.cache.values():
            self.dispatch(events.TaskEnded.of(result), None)
        # A task whose process was killed before any report carried it (a worker ended by a
        # signal to the process group): what it finished is in its journal.
        selected = self.state.task_ids()
        for task_id, result in self.journaled().items():
            if task_id in selected:
                self.dispatch(events.TaskEnded.of(result), None)
        for task_id, result in self.state.results.items():
            error = signals.as_sent(result.error)
            if error != result.error:
                self.state.results[task_id] = dataclasses.replace(result, error=error)
        complete = (
            exitstatus != pytest.ExitCode.INTERRUPTED
            and not any(r.partial for r in self.state.results.values())
            and not self.carried()
        )
        self.judge()
        if self.late and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        # A CI shard with no task still leaves a (valid, empty) document for the merge step.
        empty_shard = self.state.settings.shard is not None and not self.state.results
        if empty_shard and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            session.exitstatus = pytest.ExitCode.OK
        # A session that failed before any task finished leaves its own (empty) document, so
        # an earlier run's file is never read as this run's.
        self.failed_empty = (
            not self.state.results
            and self.state.collected > 0
            and session.exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
        )
        self.write(
            partial=not complete or self.failed_empty,
            exitstatus=int(session.exitstatus),
            empty=empty_shard or self.failed_empty,
        )
        if self.metrics.error is not None and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # the run's results are not saved
        # The run ended and its file holds every row: the journal is no longer needed.
        saved = self.metrics.error is None and exitstatus != pytest.ExitCode.INTERRUPTED
        try:
            self.finish_record(session, exitstatus)
        finally:
            self.state.run.close(complete=saved)

    def finish_record(self, session: pytest.Session, exitstatus: int) -> None:
        """The --benchmark-record dataset from the run's parts, or, when interrupted, the line
        that says how to carry it on or build it."""
        record = self.state.settings.record
        if record is not None and exitstatus == pytest.ExitCode.INTERRUPTED:
            # Kept for --benchmark-resume, which adds the missing episodes to the same parts.
            self.record_line = (
                f"record: interrupted; the finished episodes are kept in {parts_dir(record)}: "
                "carry the run on with --benchmark-resume, or build them now with "
                f"`pytest-benchmarks record-build {record}`"
            )
        elif record is not None:
            rows = [*self.state.results.values(), *self.carried()]
            nothing = none_succeeded(parts_dir(record), self.state.settings.record_only, rows)
            if nothing is not None:
                self.record_line = f"record: {nothing}; no dataset at {record}"
                return
            self.record_line, written = build_record(record, self.show)
            if not written:
                # The run did not leave all it was asked for: the document says so too.
                if session.exitstatus == pytest.ExitCode.OK:
                    session.exitstatus = pytest.ExitCode.TESTS_FAILED
                self.write(partial=True, exitstatus=int(session.exitstatus), empty=True)

    def write(self, partial: bool, exitstatus: int | None, empty: bool = False) -> None:
        """The metrics JSON as it stands; ``empty`` writes it even with no task in it."""
        rows = [*self.state.results.values(), *self.carried()]
        if rows or empty:
            line = self.metrics.update(rows, partial, exitstatus)
            if line is not None:
                self.show(line)

    def journaled(self) -> dict[str, TaskResult]:
        """The run's journal, merged by task (empty, with a line said, if it cannot be read)."""
        try:
            found = journal.read(journal.folder_for(self.state.settings.metrics))
        except journal.JournalError as exc:
            self.show(f"journal: cannot read {exc}")
            return {}
        for note in found.notes:
            self.show(note)
        return found.results

    def carried(self) -> list[TaskResult]:
        """With --benchmark-resume, the file's unfinished tasks this session has not run again
        (yet): their episodes stay in the document, whenever the session ends."""
        return [r for i, r in self.state.resumed.items() if i not in self.state.results]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        state = self.state
        write = terminalreporter.write_line
        left_out = {env: n for env, n in state.deselected.items() if env in state.excluded}
        if left_out:
            chosen = ",".join(state.settings.envs or ())
            counts = ", ".join(f"{env} ({n} test{'s' * (n != 1)})" for env, n in left_out.items())
            write(f"benchmarks deselected by --benchmark-env={chosen}: {counts}")
        if not state.results:
            path = state.settings.metrics
            if self.metrics.error is not None:
                write(f"metrics: NOT written to {path}: {self.metrics.error}", red=True)
            elif state.settings.shard is not None:
                i, n = state.settings.shard
                write(f"benchmark shard {i}/{n} holds no task; metrics: {path}")
            elif self.failed_empty:
                write(f"metrics: the session failed before any task finished; {path} holds "
                      "this run's settings and no task")  # fmt: skip
            elif state.collected and not self.config.option.collectonly:
                write(f"metrics: no task was evaluated (no test called evaluate()); {path} "
                      "not written")  # fmt: skip
            return
        terminalreporter.section("benchmark results")
        for line in table(list(state.results.values())):
            write(line)
        if self.metrics.error is None:
            write(f"metrics: {state.settings.metrics}")
        else:
            path, error = state.settings.metrics, self.metrics.error
            write(f"metrics: NOT written to {path}: {error}", red=True)
        if self.record_line:
            write(self.record_line)
        for line in state.leftover_lines:
            write(line, yellow=True)
        self.gate_summary(write)

    def judge(self) -> None:
        """Holm's later steps over each test function's verdicts (``gate.judge_families``)."""
        settings = self.state.settings
        self.judged, self.late = gate.judge_families(
            self.verdicts.values(), settings.gate, settings.alpha
        )

    def gate_summary(self, write: Any) -> None:
        """Each snapshot --snapshot-update kept, then the gate's lines as ``compare`` prints
        them, less the tasks that held (their tests said so)."""
        settings = self.state.settings
        for line in self.kept:
            write(line)
        if not self.judged:
            return
        for line in gate.verdict_lines(self.judged, every=False, late=self.late):
            write(line)
        for line in gate.environment_lines(self.judged):
            write(line)
        if any(c.verdict == "improvement" for c in self.judged):
            write("  improvements pass; run with --snapshot-update to make them the new baseline")
        families = len({family for family, _, _ in self.verdicts.values()})
        closing = gate.closing_line(
            self.judged, settings.alpha, settings.gate, settings.gate_power, families=families,
            planned=settings.planned,
        )  # fmt: skip
        write(f"snapshot gate: {closing}")
