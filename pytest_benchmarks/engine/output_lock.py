"""One session per output: a run holds a lock on its metrics JSON, its record folder and, with
``--snapshot-update``, the snapshot folders it writes.

Two sessions writing one metrics file leave one session's rows and lose the other's without a
word; two recording into one folder mix their episodes. A session therefore takes an exclusive
``filelock`` on each output (``PATH.lock`` beside it; a snapshot folder's in the temporary
folder, out of the repository) before any episode runs, and a second one is refused in one line
naming the holder's PID (``PATH.lock.owner``). The operating system drops
a dead process's lock, so a killed session's lock is simply taken over.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path

from filelock import FileLock, Timeout

from pytest_benchmarks.core.errors import one_line
from pytest_benchmarks.core.settings import Settings


class OutputBusy(RuntimeError):
    """Another live session holds the output."""


class OutputLock:
    """The lock on one output (``option`` names it in errors); ``acquire`` refuses at once."""

    def __init__(self, target: Path, option: str, beside: bool = True) -> None:
        self.target = target
        self.option = option
        if beside:
            self.path = target.with_name(target.name + ".lock")
        else:  # a folder in a repository (snapshots): its lock lives in the temp folder
            digest = hashlib.sha256(str(target.absolute()).encode()).hexdigest()[:16]
            self.path = Path(tempfile.gettempdir()) / "pytest-benchmarks-locks" / f"{digest}.lock"
        self.owner = self.path.with_name(self.path.name + ".owner")
        self._lock = FileLock(str(self.path), timeout=0)
        #: Why the output runs unlocked, if it does.
        self.error: str | None = None
        #: The lock made the output's folder (nothing else was there yet).
        self.made_folder = False

    def acquire(self) -> None:
        """Hold the lock, or raise OutputBusy; a lock that cannot even be created (a full
        disk) is no reason to refuse the run: ``error`` says why it runs unlocked."""
        try:
            self.made_folder = not self.path.parent.exists()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._lock.acquire()
        except Timeout:
            try:
                holder = f"PID {int(self.owner.read_text().split()[0])}"
            except (OSError, ValueError, IndexError):
                holder = "PID unknown"
            raise OutputBusy(
                f"{self.option}: {self.target} is in use by another session ({holder}); give "
                "this one another path, or wait for that one to end"
            ) from None
        except OSError as exc:
            self.error = f"{self.option}: {self.target} is not locked ({one_line(exc)})"
            return
        with contextlib.suppress(OSError):  # the holder's name only
            self.owner.write_text(f"{os.getpid()}\n")

    def release(self) -> None:
        if self._lock.is_locked:
            with contextlib.suppress(OSError):
                self.owner.unlink()
            # The lock's own file stays: unlinking it would let two sessions lock two files.
            self._lock.release()
            if self.made_folder and [p.name for p in self.path.parent.iterdir()] == [
                self.path.name
            ]:
                # A session that wrote nothing leaves no folder behind.
                with contextlib.suppress(OSError):
                    self.path.unlink()
                    self.path.parent.rmdir()


def lock_outputs(settings: Settings, metrics: bool = True) -> list[OutputLock]:
    """Lock the run's metrics file (when it writes one) and its record folder; OutputBusy,
    with nothing left locked, when another session holds either."""
    locks = [OutputLock(settings.metrics, "--benchmark-metrics")] if metrics else []
    if settings.record is not None:
        locks.append(OutputLock(settings.record, "--benchmark-record"))
    held: list[OutputLock] = []
    try:
        for lock in locks:
            lock.acquire()
            held.append(lock)
    except OutputBusy:
        for lock in held:
            lock.release()
        raise
    return held
