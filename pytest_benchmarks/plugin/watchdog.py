"""``--benchmark-timeout`` held from outside: the xdist controller ends a worker whose task ran
past its limit and did not stop.

Inside the worker the limit is SIGALRM, then SIGUSR2, then an exception raised in its main
thread (``engine.deadline``); a worker that is
stopped (SIGSTOP), or stuck outside Python, answers none of them. Each worker tells the
controller when a task starts and ends (``plugin.progress``), with its pid and creation time;
``GRACE_S`` after the in-process backstops should have acted, the controller kills that process
(SIGKILL). xdist then reports the worker as crashed; the controller records the task as
``TaskTimeout`` with the episodes the journal holds.

A process is ended only if it is the one that said it started the task (its pid *and* its
creation time, so a later process that reuses the pid is never touched) and a descendant of
this controller. Nothing is read from files: a journal that cannot be written, or an earlier
run's journal whose pids now belong to other processes, changes nothing here.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import dataclass

import psutil

from pytest_benchmarks.engine.deadline import GRACE_S
from pytest_benchmarks.plugin.events import TaskStarted

#: How often the running tasks are checked.
POLL_S = 0.5

#: How far two readings of one process's creation time may differ (clock ticks are 10 ms).
_SAME_START_S = 0.05


@dataclass
class Running:
    """A task running in a worker process (``process`` None: not one this session may end)."""

    task_id: str
    started: float
    process: psutil.Process | None


def own_process(pid: int, created: float) -> psutil.Process | None:
    """The process ``pid`` if it was created at ``created`` and descends from this one."""
    try:
        process = psutil.Process(pid)
        if abs(process.create_time() - created) > _SAME_START_S:
            return None
        if os.getpid() not in {parent.pid for parent in process.parents()}:
            return None
    except (psutil.Error, OSError):
        return None
    return process


class Watchdog:
    """A daemon thread over the running tasks; ``ended`` holds the tasks it ended."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._running: dict[str, Running] = {}  # by worker
        self._lock = threading.Lock()
        self.ended: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="benchmark-watchdog", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def started(self, worker: str, event: TaskStarted) -> str | None:
        """``worker`` started ``event.task``; a line when its process cannot be ended from
        outside (it is not this session's, or no longer the process that said so)."""
        process = own_process(event.pid, event.created)
        with self._lock:
            self._running[worker] = Running(event.task, time.monotonic(), process)
        if process is not None:
            return None
        return (
            f"watchdog: [{worker}] pid {event.pid} is not a process this session started; "
            f"{event.task}'s --benchmark-timeout is held only inside it"
        )

    def finished(self, worker: str) -> None:
        with self._lock:
            self._running.pop(worker, None)

    def _watch(self) -> None:
        while not self._stop.wait(POLL_S):
            self.check(time.monotonic())

    def check(self, now: float) -> None:
        """Kill each process whose task started longer ago than the limit and the graces."""
        with self._lock:
            late = [
                (worker, running)
                for worker, running in self._running.items()
                if now - running.started > self.timeout + 3 * GRACE_S
            ]
        for worker, running in late:
            if running.process is None or running.task_id in self.ended:
                continue
            # psutil refuses a process whose pid was reused since (creation time differs).
            with contextlib.suppress(psutil.Error):
                running.process.kill()
                self.ended.add(running.task_id)
            self.finished(worker)
