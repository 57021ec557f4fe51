"""``--benchmark-timeout`` held from outside: the xdist controller ends a worker whose task ran
past its limit and did not stop.

Inside the worker the limit is SIGALRM, then SIGUSR2 (``engine.deadline``); a worker that is
stopped (SIGSTOP), or stuck where no signal handler runs, answers neither. The controller reads
from the run's journal when each worker process started its task and, ``GRACE_S`` after the
in-process backstop should have acted, kills that process (SIGKILL). xdist then reports the
worker as crashed; the controller records the task as ``TaskTimeout`` with the episodes the
journal holds.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from pathlib import Path

from pytest_benchmarks.engine.deadline import GRACE_S

#: How often the journal is read.
POLL_S = 0.5


class Watchdog:
    """A daemon thread over one journal folder; ``ended`` holds the tasks it ended."""

    def __init__(self, folder: Path, timeout: float) -> None:
        self.folder, self.timeout = folder, timeout
        #: Per journal file: bytes read so far, and its running task (id, start time) or None.
        self._files: dict[Path, tuple[int, tuple[str, float] | None]] = {}
        self.ended: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="benchmark-watchdog", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _watch(self) -> None:
        while not self._stop.wait(POLL_S):
            with contextlib.suppress(OSError):
                self.check(time.time())

    def check(self, now: float) -> None:
        """Kill each process whose task started longer ago than the limit and both graces."""
        for path in sorted(self.folder.glob("*.jsonl")):
            running = self._read(path)
            if running is None:
                continue
            task_id, started = running
            if now - started <= self.timeout + 2 * GRACE_S or task_id in self.ended:
                continue
            pid = int(path.stem.split("-")[0])
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                self.ended.add(task_id)

    def _read(self, path: Path) -> tuple[str, float] | None:
        """The file's running task after the lines added since the last read."""
        offset, running = self._files.get(path, (0, None))
        with path.open("rb") as handle:
            handle.seek(offset)
            chunk = handle.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]  # a line being written waits for next time
        for line in complete.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("event") == "start":
                running = (entry["row"]["id"], float(entry.get("at", time.time())))
            elif entry.get("event") == "end":
                running = None
        self._files[path] = (offset + len(complete), running)
        return running
