"""Errors as the one line a user reads in a test report or the metrics JSON."""

from __future__ import annotations


def one_line(exc: BaseException) -> str:
    """An exception as one line: type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
