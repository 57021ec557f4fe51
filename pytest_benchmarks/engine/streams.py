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
        self._stream = stream
        self.close_attempted = False

    def close(self) -> None:
        self.close_attempted = True
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def __enter__(self) -> Unclosable:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def kept_open() -> Iterator[list[str]]:
    """Within: ``sys.stdout`` and ``sys.stderr`` cannot be closed. The list yielded holds,
    afterwards, the names of those a close was attempted on."""
    saved = {name: getattr(sys, name) for name in NAMES}
    guards = {name: Unclosable(stream) for name, stream in saved.items() if stream is not None}
    closed: list[str] = []
    for name, guard in guards.items():
        setattr(sys, name, guard)
    try:
        yield closed
    finally:
        for name, guard in guards.items():
            if getattr(sys, name) is guard:  # a stream someone set meanwhile is theirs
                setattr(sys, name, saved[name])
            if guard.close_attempted:
                closed.append(f"sys.{name}")
