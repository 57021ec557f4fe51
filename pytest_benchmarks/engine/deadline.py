"""A per-task time limit (``--benchmark-timeout``): a hung env or policy must not hang the run.

The limit is a SIGALRM timer in the process that runs the task. Its handler raises TaskTimeout
in the main thread, which interrupts a blocked wait on vector-env workers as well as Python code
stuck in the test process; the caller then kills the workers. Code that never returns to the
interpreter (a loop inside a C extension, in the test process itself) cannot be interrupted this
way; run such envs in worker processes (a batch size above 1 without ``--benchmark-sync``).

A policy may ignore SIGALRM, or re-arm the timer for its own use: ``GRACE_S`` after the limit a
backstop thread delivers SIGUSR2 to the main thread, whose handler raises the same TaskTimeout.
A policy that also takes SIGUSR2 for itself (its own handler, or ignored) gets the TaskTimeout
another ``GRACE_S`` later as an asynchronous exception in the main thread, which Python raises
at the next line of Python it runs there. Code that never returns to Python (a C loop, a long
sleep with every signal ignored) cannot be stopped from inside: once more ``GRACE_S`` later the
process says so on stderr, and under xdist the controller ends it from outside
(``plugin.watchdog``); without xdist the user must.

pytest's fixture machinery must never see a TaskTimeout: it records only Exceptions and its own
outcome exceptions as a fixture's error, and the fixture state a TaskTimeout leaves half set up
fails the next test. A fixture built under the limit is built inside ``fixture_setup()``: there
the limit raises the caller's ``interrupt`` exception (the plugin's is one of pytest's outcome
exceptions, which pytest records and an ``except Exception`` in a loader cannot swallow) from
the fixture's own code, and waits while pytest's own code runs; ``fixture_setup`` turns what
comes out of the fixture after that back into TaskTimeout once pytest is done.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

#: How soon an expired limit retries: after pytest's code it was deferred in, and again after a
#: fixture that swallowed its interruption.
_RETRY_S = 0.05

#: How long past the limit the backstop (SIGUSR2) waits for SIGALRM's TaskTimeout.
GRACE_S = 3.0

#: The signals a limit expires by.
_SIGNALS = {signal.SIGALRM, signal.SIGUSR2}


class TaskTimeout(BaseException):
    """A task ran past ``--benchmark-timeout``.

    A BaseException, like KeyboardInterrupt, so that a policy's or env's ``except Exception``
    cannot swallow it."""


class _Limit:
    """The running limit: its message, and whether a fixture is being set up under it."""

    def __init__(self, message: str) -> None:
        self.message = message
        self.in_fixture = 0
        self.expired = False
        #: Folders of the fixture machinery's code (pytest's), never interrupted.
        self.machinery: tuple[str, ...] = ()
        #: What interrupts a fixture's own code.
        self.interrupt: type[BaseException] = TaskTimeout
        #: The block under the limit has ended: late backstops do nothing.
        self.done = False
        self.lock = threading.Lock()

    def expire(self, signum: int, frame: FrameType | None) -> None:
        if not self.in_fixture:
            raise TaskTimeout(self.message)
        signal.setitimer(signal.ITIMER_REAL, _RETRY_S)  # until the fixture gives up
        if frame is not None and frame.f_code.co_filename.startswith(self.machinery):
            return  # pytest's own code: try again a moment later, in the fixture's
        self.expired = True
        raise self.interrupt(self.message)


_running: _Limit | None = None


def _backstop(signum: int, frame: FrameType | None) -> None:
    """SIGUSR2 from the backstop thread: the running limit expires (a late one is ignored)."""
    if _running is not None:
        _running.expire(signum, frame)


@contextmanager
def time_limit(
    seconds: float | None, what: str, notify: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Raise TaskTimeout in this block after ``seconds`` (None: no limit, or off the main thread,
    where signals cannot be delivered), ``GRACE_S`` later through SIGUSR2 if SIGALRM did not,
    and so on (see the module's docstring); ``notify`` (else stderr) gets the line that says it
    cannot be stopped from inside."""
    global _running
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return
    limit = _Limit(f"{what} timed out after {seconds:g} s (--benchmark-timeout)")
    previous = signal.signal(signal.SIGALRM, limit.expire)
    # Installed for good: a backstop that fires as the block ends must find a handler.
    signal.signal(signal.SIGUSR2, _backstop)
    main = threading.main_thread().ident
    assert main is not None
    backstops = [
        threading.Timer(seconds + GRACE_S, signal.pthread_kill, (main, signal.SIGUSR2)),
        threading.Timer(seconds + 2 * GRACE_S, _raise_in, (main, limit)),
        threading.Timer(seconds + 3 * GRACE_S, _say_stuck, (limit, seconds, notify)),
    ]
    outer, _running = _running, limit
    try:
        # Armed inside the block: a limit shorter than starting the backstops expires in it.
        for backstop in backstops:
            backstop.daemon = True
            backstop.start()
        signal.setitimer(signal.ITIMER_REAL, seconds)
        yield
    finally:
        # Undone with both signals held back, so that none expires the limit half way through
        # (which would leave its handler and backstops behind, to raise in later code), and a
        # signal already sent is taken here rather than by the handler restored after.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
            with limit.lock:  # no asynchronous TaskTimeout is left pending past the block
                limit.done = True
                _clear_async(main)
            for backstop in backstops:
                backstop.cancel()
            for late in signal.sigpending() & _SIGNALS:
                signal.sigtimedwait({late}, 0)
            signal.signal(signal.SIGALRM, previous)
            _running = outer
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _raise_in(thread: int, limit: _Limit) -> None:
    """The last backstop inside Python: TaskTimeout raised in ``thread`` at its next line of
    Python, whatever it did with SIGALRM and SIGUSR2 (a fixture being built gets its own
    interruption instead, as in ``_Limit.expire``)."""
    with limit.lock:
        if limit.done:
            return
        base = limit.interrupt if limit.in_fixture else TaskTimeout
        if limit.in_fixture:
            limit.expired = True
        kind = _raised_as(base, limit.message)
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread), ctypes.py_object(kind))


def _raised_as(base: type[BaseException], message: str) -> type[BaseException]:
    """``base`` with ``message``: Python raises an asynchronous exception from its class alone."""

    def __init__(self: BaseException) -> None:
        base.__init__(self, message)

    return type(base.__name__, (base,), {"__init__": __init__})


def _clear_async(thread: int) -> None:
    """Drop a pending asynchronous TaskTimeout of a block that ended before it was raised."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread), None)


def _say_stuck(limit: _Limit, seconds: float, notify: Callable[[str], None] | None) -> None:
    if limit.done:
        return
    line = (
        f"pytest-benchmarks: {limit.message.split(' timed out')[0]} is past its "
        f"--benchmark-timeout ({seconds:g} s) and cannot be stopped from inside: it runs code "
        "outside Python with SIGALRM and SIGUSR2 taken from the run; end the session (Ctrl-C, "
        f"or kill -9 {os.getpid()} where it blocks that too: a run with a metrics file keeps "
        "its finished episodes in its journal for --benchmark-resume), or run under xdist "
        "(-n), whose controller ends such a worker"
    )
    if notify is not None:
        notify(line)
        return
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


@contextmanager
def fixture_setup(machinery: tuple[str, ...], interrupt: type[BaseException]) -> Iterator[None]:
    """Run a fixture machinery whose code lies under the ``machinery`` folders (pytest's
    ``request.getfixturevalue``) under the running limit without breaking it; ``interrupt``
    makes the exception that stops the fixture's own code. See the module's docstring."""
    limit = _running
    if limit is None:
        yield
        return
    limit.machinery, limit.interrupt = machinery, interrupt
    limit.in_fixture += 1
    try:
        yield
    except BaseException:
        # Whatever the fixture made of its interruption (a loader's own error wrapping it).
        if not limit.expired:
            raise
        signal.setitimer(signal.ITIMER_REAL, 0)  # no retry inside the caller's handling
        raise TaskTimeout(limit.message) from None
    finally:
        limit.in_fixture -= 1
