"""Ctrl-C while pytest is still starting: one line, not a traceback through its imports.

The plugin's own handlers (``signals``) are installed when the session is configured; before
that, a Ctrl-C lands in whatever pytest is importing (numpy, a benchmark, an xdist worker's
plugins) and ends the process in a traceback of frozen importlib frames. Nothing has run then,
so nothing is lost by ending at once: from the plugin's import until its ``pytest_configure``,
SIGINT ends the process with one line and pytest's "interrupted" status.

An xdist controller's workers start as new interpreters in its process group: a Ctrl-C while
they import their plugins ends each in its own traceback (or a "Fatal Python error" during the
interpreter's start). The controller blocks SIGINT while it starts them, so they start with it
blocked too (a blocked signal stays blocked across fork and exec), and each process unblocks
it when its session starts collecting, its handlers in place: a Ctrl-C meanwhile waits those
few seconds and then takes the session's own road. The policy servers the controller starts
meanwhile keep it blocked: the controller stops them when its session ends.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from types import FrameType

#: pytest's exit status for an interrupted session.
INTERRUPTED = 2

LINE = b"pytest-benchmarks: interrupted while pytest was starting; nothing ran\n"


def _terminal() -> int:
    """A copy of this process's stderr as the plugin is imported, before pytest captures it:
    a line written there as the process ends at once is seen, not left in a capture file."""
    try:
        return os.dup(2)
    except OSError:
        return 2


#: Where a line goes that must be seen as the process ends at once (``say``).
TERMINAL = _terminal()


def say(line: str) -> None:
    """Write ``line`` to the terminal the session started on, past pytest's capture."""
    with contextlib.suppress(OSError):
        os.write(TERMINAL, line.encode(errors="replace"))


def _end(signum: int, frame: FrameType | None) -> None:
    say(LINE.decode())
    os._exit(INTERRUPTED)


def guard() -> None:
    """End the process on SIGINT from now until ``release`` (where SIGINT has its default)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _end)


def release() -> None:
    """SIGINT back to its default, for the session's own handlers to take over."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is _end:
        signal.signal(signal.SIGINT, signal.default_int_handler)


#: While held: the session's SIGINT handler, and whether a SIGINT came meanwhile.
_held: dict[str, object] = {}


def hold() -> None:
    """Hold SIGINT (a controller about to start its workers) until ``let_go``: blocked, so that
    the processes it starts inherit it blocked, and deferred here, since a thread that does
    not block it (a BLAS pool's, started at import) can still take it for the process."""
    if threading.current_thread() is not threading.main_thread():
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    _held.update(handler=signal.signal(signal.SIGINT, _defer), came=False)


def _defer(signum: int, frame: FrameType | None) -> None:
    _held["came"] = True


def let_go() -> None:
    """Unblock SIGINT; one that came meanwhile is raised now, for the session's handler."""
    if threading.current_thread() is not threading.main_thread():
        return
    came = _restore()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    if came:
        signal.raise_signal(signal.SIGINT)


def drop(inherited: bool = False) -> None:
    """The start-up handler gone and SIGINT unblocked where this module blocked it (``hold``)
    or the process inherited it blocked (an xdist worker), discarding one that came while it
    was held: the session is over. A mask someone else set is left alone."""
    if threading.current_thread() is not threading.main_thread():
        return
    release()
    held = bool(_held)
    _restore()
    if not (held or inherited):
        return
    if signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, set()):
        return
    handler = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a pending one is discarded
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, handler)


def _restore() -> bool:
    """The session's handler back where ``hold`` deferred it; whether a SIGINT came."""
    if not _held:
        return False
    if signal.getsignal(signal.SIGINT) is _defer:
        signal.signal(signal.SIGINT, _held["handler"])  # type: ignore[arg-type]
    came = bool(_held.get("came"))
    _held.clear()
    return came
