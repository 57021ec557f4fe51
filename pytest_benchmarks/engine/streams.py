"""The process's standard streams kept open while a policy runs.

A policy that closes ``sys.stdout`` or ``sys.stderr`` (a library's cleanup, a careless
``with sys.stdout:``) closes the file pytest captures into; the session then ends in a
traceback from pytest's own capture, its summary and metrics lines lost. While a task runs,
each stream is one whose ``close`` only flushes; the attempt is said once the task ends.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

#: The streams guarded, by name.
NAMES = ("stdout", "stderr")


class Unclosable:
    """A stream whose ``close`` flushes and is remembered; everything else is the stream's."""

    def __init__(self, stream: TextIO) -> None:
        self.wrapped = stream
        self.close_attempted = False

    def close(self) -> None:
        self.close_attempted = True
        self.wrapped.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)

    def __enter__(self) -> Unclosable:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: The guards of the task running now (``kept_open``), by stream name, each stream's latest
#: last; empty between tasks.
_active: dict[str, list[Unclosable]] = {}


@contextmanager
def kept_open() -> Iterator[list[str]]:
    """Within: ``sys.stdout`` and ``sys.stderr`` cannot be closed. The list yielded holds,
    afterwards, the names of those a close was attempted on."""
    closed: list[str] = []
    _active.clear()
    for name in NAMES:
        if getattr(sys, name) is not None:
            _active[name] = []
    guard_again()
    try:
        yield closed
    finally:
        for name, guards in _active.items():
            current = getattr(sys, name)
            if isinstance(current, Unclosable) and current in guards:
                setattr(sys, name, current.wrapped)  # a stream someone set meanwhile is theirs
            if any(guard.close_attempted for guard in guards):
                closed.append(f"sys.{name}")
        _active.clear()


def guard_again() -> None:
    """While a task runs, guard each stream that is not guarded: at its start, and again after
    pytest's capture set its own back (it does each time it resumes: after a progress line, a
    notice)."""
    for name, guards in _active.items():
        current = getattr(sys, name)
        if not isinstance(current, Unclosable):
            guards.append(Unclosable(current))
            setattr(sys, name, guards[-1])
