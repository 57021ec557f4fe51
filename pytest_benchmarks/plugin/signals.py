"""Ctrl-C, SIGTERM and SIGHUP end a run the same way, with the summary printed and what finished
kept.

CI runners, ``timeout`` and container stops end a job with SIGTERM; a terminal's Ctrl-C sends
SIGINT to the whole process group, xdist's workers included; a closed terminal or a dropped ssh
session sends SIGHUP (handled as SIGTERM). Whatever a signal leaves unsaved (a second signal, or
SIGKILL), every finished episode is already in the run's journal (``metrics.journal``).

On the first signal the running task records its finished episodes and the error, and the
metrics JSON is written with ``partial`` and the exit status:

- A session without xdist, and each xdist worker, raises on the first signal: ``Terminated``
  (a KeyboardInterrupt) for SIGTERM, KeyboardInterrupt for SIGINT; pytest and the plugin then
  take their Ctrl-C path. A worker ignores a SIGTERM after its first signal: that is its
  controller passing on the stop the worker is already in (after a group's SIGINT, SIGHUP or
  SIGTERM), not a second request. A session's second Ctrl-C is told that the stop (the metrics
  JSON and the summary, moments away) is under way; a third ends it at once, in one line.
- xdist's controller does not raise on the first signal, which would stop it listening to its
  workers: it passes SIGTERM on to them, they hand over what they finished, and xdist ends the
  session as interrupted. A second Ctrl-C (or SIGTERM) there ends the session at once, its
  workers killed.

A handler is installed only where the signal still has its default action.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType

#: Each signal's default action in Python (SIGINT raises KeyboardInterrupt).
_DEFAULTS: dict[int, Callable[[int, FrameType | None], object] | int] = {
    signal.SIGTERM: signal.SIG_DFL,
    signal.SIGHUP: signal.SIG_DFL,
    signal.SIGINT: signal.default_int_handler,
}


class Terminated(KeyboardInterrupt):
    """The session received SIGTERM (or SIGHUP)."""


#: The signal that started the controller's stop, once one did (it passes SIGTERM on).
received: int | None = None
#: An xdist worker is up and has its own handlers (set by the controller): before that, a signal
#: ends the controller at once, since workers still starting cannot hand anything over.
workers_ready = False


def as_sent(error: str | None) -> str | None:
    """A task's error as the user's signal would have made it, where the controller got a
    signal other than SIGTERM and passed SIGTERM on to the worker that ran the task."""
    forwarded = "Terminated: SIGTERM"
    if error is None or received in (None, signal.SIGTERM) or not error.startswith(forwarded):
        return error
    # What the worker would have recorded had the signal reached it directly.
    return (
        stopped_by()
        + error.removeprefix(forwarded)
        + " (sent to the controller, passed on as SIGTERM)"
    )


def stopped_by() -> str:
    """The error a task stopped by the session's signal records: ``KeyboardInterrupt`` for
    Ctrl-C (or no signal known), ``Terminated: SIGTERM`` and the like otherwise."""
    if received in (None, signal.SIGINT):
        return "KeyboardInterrupt"
    return f"Terminated: {signal.Signals(received).name}"


def child_pids() -> list[int]:
    """This process's direct children (Linux ``/proc``; none elsewhere)."""
    pids: list[int] = []
    for task in Path("/proc/self/task").glob("*"):
        try:
            pids += [int(pid) for pid in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return pids


def _forward(signum: int) -> list[int]:
    """Send ``signum`` to this process's children; the ones it reached."""
    reached = []
    for pid in child_pids():
        with contextlib.suppress(OSError):  # already gone
            os.kill(pid, signum)
            reached.append(pid)
    return reached


#: The process's own exit, taken before a task can guard it (``engine.exits``).
_exit = os._exit

#: pytest's exit status for an interrupted session.
INTERRUPTED = 2


def _end_at_once() -> None:
    """End a session that was told its stop is under way and asked again: one line, not a
    traceback through whatever the stop was doing."""
    from pytest_benchmarks.plugin.starting import say

    say(
        "\npytest-benchmarks: stopped at once; every finished episode is in the run's journal "
        "(--benchmark-resume carries the run on)\n"
    )
    _exit(INTERRUPTED)


def _raise_for(signum: int) -> None:
    if signum != signal.SIGINT:
        raise Terminated(signal.Signals(signum).name)
    raise KeyboardInterrupt


def install(role: str) -> Callable[[], None]:
    """Handle SIGINT, SIGTERM and SIGHUP as the module says for ``role``: ``session`` (no
    xdist), ``worker`` or ``controller``. Returns the function that restores the defaults."""
    global received, workers_ready
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    handled = [signal.SIGTERM, signal.SIGHUP, signal.SIGINT]
    handled = [s for s in handled if signal.getsignal(s) is _DEFAULTS[s]]  # else someone's own
    if handled:  # this session's handlers (an in-process session inside another installs none)
        received, workers_ready = None, False
    first: int | None = None  # the signal that started the stop
    told = False  # a session's second Ctrl-C was told the stop is under way

    def restore() -> None:
        for signum in handled:
            if signal.getsignal(signum) is handler:
                signal.signal(signum, _DEFAULTS[signum])

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal first, told
        global received
        if first is None:
            first = signum
            if role == "controller":
                received = signum
            if role == "controller" and workers_ready and _forward(signal.SIGTERM):
                sys.stderr.write(
                    "\npytest-benchmarks: stopping; the workers hand over what they finished "
                    "(Ctrl-C again to stop at once)\n"
                )
                return  # keep listening to the workers
            _raise_for(signum)
        if role == "session" and signum == signal.SIGINT and not told:
            # Without xdist the stop writes the metrics JSON and the summary in moments; a
            # Ctrl-C raised into that would end it with a traceback and a stale document.
            told = True
            sys.stderr.write(
                "\npytest-benchmarks: stopping; the metrics JSON and the summary follow "
                "(Ctrl-C once more to stop at once)\n"
            )
            return
        if role == "worker" and signum == signal.SIGTERM:
            # The controller passing on the stop this worker is already in (a group's SIGTERM
            # reaches a worker twice: from the sender and from its controller); a hung worker
            # is ended by the deadline's SIGKILL, its episodes kept by the journal.
            return
        if role == "controller":
            # At once: xdist would give a worker that still holds its task 10 s to end
            # (execnet's exit timeout) before killing it; its finished episodes are journaled.
            _forward(signal.SIGKILL)
        restore()  # a second request: as if no handler were set
        if signum != signal.SIGINT:
            os.kill(os.getpid(), signum)
        if role == "session":
            _end_at_once()  # a KeyboardInterrupt here would land in pytest's own reporting
        _raise_for(signum)

    for signum in handled:
        signal.signal(signum, handler)
    return restore
