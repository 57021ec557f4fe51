"""SIGTERM handled like Ctrl-C: CI runners, ``timeout`` and container stops end a job with
SIGTERM, and the run must still print its summary and keep what finished.

The handler raises ``Terminated`` (a KeyboardInterrupt), so pytest, xdist and the plugin take
the path they take on Ctrl-C: the running task records its finished episodes and the error, the
metrics JSON is written with ``partial`` and the exit status. Under xdist the controller does
not raise: it passes the signal on to its workers, which handle it that way and hand over what
they finished, and xdist then ends the session as interrupted.
A handler is installed only where SIGTERM still has its default action.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType


class Terminated(KeyboardInterrupt):
    """The session received SIGTERM."""


def child_pids() -> list[int]:
    """This process's direct children (Linux ``/proc``; none elsewhere)."""
    pids: list[int] = []
    for task in Path("/proc/self/task").glob("*"):
        try:
            pids += [int(pid) for pid in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return pids


def install(forward_to_children: bool) -> Callable[[], None]:
    """Make SIGTERM raise Terminated here; returns the function that restores the default."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return lambda: None  # someone else's handler: leave it

    def terminated(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process
        workers = child_pids() if forward_to_children else []
        for pid in workers:
            with contextlib.suppress(OSError):  # already gone
                os.kill(pid, signal.SIGTERM)
        if not workers:
            raise Terminated("SIGTERM")
        # xdist's controller: its workers stop their tasks and hand them over, and xdist then
        # ends the session as interrupted; raising here would stop listening to them.

    signal.signal(signal.SIGTERM, terminated)

    def restore() -> None:
        if signal.getsignal(signal.SIGTERM) is terminated:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)

    return restore
