"""One session per output: a run holds a lock on its metrics JSON, its record folder and, with
``--snapshot-update``, the snapshot folders it writes.

Two sessions writing one metrics file leave one session's rows and lose the other's without a
word; two recording into one folder mix their episodes. A session therefore takes an exclusive
``filelock`` on each output (``PATH.lock`` beside it) before any episode runs, and a second one
is refused in one line naming the holder's PID (``PATH.lock.owner``). A snapshot folder, which
lives in a repository, is locked as itself (``flock`` on the folder: no file is added to it),
so two sessions meet whatever their temporary folders. The operating system drops a dead
process's lock, so a killed session's lock is simply taken over.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from filelock import FileLock, Timeout

from pytest_benchmarks.core.errors import one_line
from pytest_benchmarks.core.files import lock_file, owner_file, read_owner
from pytest_benchmarks.core.settings import Settings


class OutputBusy(RuntimeError):
    """Another live session holds the output."""


class OutputLock:
    """The lock on one output (``option`` names it in errors); ``acquire`` refuses at once."""

    def __init__(self, target: Path, option: str, beside: bool = True) -> None:
        self.target = target
        self.option = option
        self._lock: FileLock | FolderLock
        #: Where the holder writes its PID (a folder's holder is read from ``/proc/locks``).
        self.owner: Path | None = None
        if beside:
            self.path = lock_file(target)
            self.owner = owner_file(target)
            self._lock = FileLock(str(self.path), timeout=0)
        else:  # a folder in a repository (snapshots): the folder itself is locked
            self.path = target
            self._lock = FolderLock(target)
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
            raise OutputBusy(
                f"{self.option}: {self.target} is in use by another session (PID "
                f"{self.holder() or 'unknown'}); give this one another path, or wait for that "
                "one to end"
            ) from None
        except OSError as exc:
            self.error = f"{self.option}: {self.target} is not locked ({one_line(exc)})"
            return
        if self.owner is not None:
            with contextlib.suppress(OSError):  # the holder's name only
                self.owner.write_text(f"{os.getpid()}\n")

    def holder(self) -> int | None:
        """The PID of the session holding the lock, where it can be known."""
        return flock_holder(self.path) if self.owner is None else read_owner(self.target)

    def release(self) -> None:
        if self._lock.is_locked:
            if self.owner is not None:
                with contextlib.suppress(OSError):
                    self.owner.unlink()
            # The lock's own file stays: unlinking it would let two sessions lock two files.
            self._lock.release()
            if (
                isinstance(self._lock, FileLock)
                and self.made_folder
                and [p.name for p in self.path.parent.iterdir()] == [self.path.name]
            ):
                # A session that wrote nothing leaves no folder behind.
                with contextlib.suppress(OSError):
                    self.path.unlink()
                    self.path.parent.rmdir()


class FolderLock:
    """An exclusive ``flock`` on a folder (made if missing), taken at once or not at all."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._fd: int | None = None

    @property
    def is_locked(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Raise filelock's Timeout when another process holds the folder."""
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise Timeout(str(self.folder)) from None
        except OSError:
            os.close(fd)
            raise
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the last descriptor drops the lock
            self._fd = None


def flock_holder(path: Path) -> int | None:
    """The PID holding a ``flock`` on ``path``, from Linux's ``/proc/locks`` (None elsewhere)."""
    try:
        info = path.stat()
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    device = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    for line in lines:
        words = line.split()
        # "1: FLOCK  ADVISORY  WRITE 4242 00:2a:1234 0 EOF" ("->" marks a waiter)
        if len(words) >= 6 and words[1] == "FLOCK" and words[5] == device:
            return int(words[4])
    return None


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
