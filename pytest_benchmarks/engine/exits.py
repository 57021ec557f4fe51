"""A policy that ends the process (``os._exit``) while its task runs ends only its task.

``os._exit`` skips every ``finally`` and ``atexit``: at ``-n 0`` the session would end with
the policy's status and no line, its metrics never written (the journal keeps the finished
episodes). While a task runs, ``os._exit`` called in this process raises ``PolicyExit``
instead, which the task records as its error; a child process forked meanwhile (the policy's
own) still exits as it asks. A SIGKILL the policy sends itself cannot be caught: the journal
is what is left then.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn


class PolicyExit(RuntimeError):
    """The policy called ``os._exit`` while its task ran."""


@contextmanager
def exits_raise() -> Iterator[None]:
    """Within: ``os._exit`` in this process raises ``PolicyExit``; in a forked child it exits."""
    real = os._exit
    owner = os.getpid()

    def guarded(status: int) -> NoReturn:
        if os.getpid() != owner:
            real(status)
        raise PolicyExit(f"the policy called os._exit({status}); its task ends, the run goes on")

    os._exit = guarded
    try:
        yield
    finally:
        if os._exit is guarded:  # one set meanwhile is its setter's
            os._exit = real
