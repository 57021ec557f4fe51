"""The per-task time limit itself (``engine.deadline``): however short, it leaves nothing
behind when its block ends, so no TaskTimeout reaches code after the task."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from pytest_benchmarks.engine.deadline import TaskTimeout, time_limit


def test_a_limit_shorter_than_its_own_set_up_leaves_nothing_behind():
    """A limit that expires while its backstops start (1e-5 s) or while its block ends: each
    time the block raises TaskTimeout, SIGALRM's handler is the one before, and the backstop
    threads (which would raise TaskTimeout seconds later, in whatever code runs then) end."""
    previous = signal.getsignal(signal.SIGALRM)
    threads = threading.active_count()
    for seconds in [1e-5] * 100 + [5e-3] * 20:
        with pytest.raises(TaskTimeout), time_limit(seconds, "toy/walk"):
            time.sleep(0.02)
        assert signal.getsignal(signal.SIGALRM) is previous
    deadline = time.monotonic() + 5
    while threading.active_count() > threads and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() == threads
    time.sleep(0.1)  # nothing pending either: a late alarm would raise here


def test_a_block_that_ends_in_time_keeps_no_alarm():
    previous = signal.getsignal(signal.SIGALRM)
    with time_limit(10, "toy/walk"):
        pass
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is previous
