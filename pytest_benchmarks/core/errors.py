"""Errors as the one line a user reads in a test report or the metrics JSON."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import metadata


class EnvBuildError(RuntimeError):
    """A task's environment that cannot be built: one line with the cause and the versions of
    the benchmark's packages it was built with (a simulator newer than the benchmark's
    packages support reads as what it is, not as a traceback per test)."""


class TaskLost(RuntimeError):
    """A task ended from outside it (its node or its cluster lost, its time limit enforced from
    the controller): the line says it all, and no traceback of the harness's own adds to it."""


def installed(names: Iterable[str]) -> str:
    """``mujoco 4.0.1, metaworld 3.1.1``: the installed versions (``absent`` where not)."""
    found = []
    for name in dict.fromkeys(names):
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} absent")
    return ", ".join(found)


def one_line(exc: BaseException) -> str:
    """An exception as one line: type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def short(value: object, limit: int = 80) -> str:
    """A value's repr for one line, cut at ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
