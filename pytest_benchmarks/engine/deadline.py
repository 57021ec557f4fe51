"""A per-task time limit (``--benchmark-timeout``): a hung env or policy must not hang the run.

The limit is a SIGALRM timer in the process that runs the task. Its handler raises TaskTimeout
in the main thread, which interrupts a blocked wait on vector-env workers as well as Python code
stuck in the test process; the caller then kills the workers. Code that never returns to the
interpreter (a loop inside a C extension, in the test process itself) cannot be interrupted this
way; run such envs in worker processes (a batch size above 1 without ``--benchmark-sync``).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class TaskTimeout(BaseException):
    """A task ran past ``--benchmark-timeout``.

    A BaseException, like KeyboardInterrupt, so that a policy's or env's ``except Exception``
    cannot swallow it."""


@contextmanager
def time_limit(seconds: float | None, what: str) -> Iterator[None]:
    """Raise TaskTimeout in this block after ``seconds`` (None: no limit, or off the main thread,
    where signals cannot be delivered)."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TaskTimeout(f"{what} timed out after {seconds:g} s (--benchmark-timeout)")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
