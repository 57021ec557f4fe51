"""A policy that ends the process (``os._exit``) while it is called ends only its task.

``os._exit`` skips every ``finally`` and ``atexit``: at ``-n 0`` the session would end with
the policy's status and no line, its metrics never written (the journal keeps the finished
episodes). While the policy is built, reset or asked to act, ``os._exit`` called by the thread
that called it raises ``PolicyExit`` instead, which the task records as its error. Anything
else still exits as it asks: an env's step (a benchmark may end a process on purpose), a
thread the policy started, a child process it forked. A SIGKILL the policy sends itself
cannot be caught: the journal is what is left then.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import NoReturn


class PolicyExit(RuntimeError):
    """The policy called ``os._exit`` while its task ran."""


def policy_call[**P, R](fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
    """``fn(*args, **kwargs)``, an ``os._exit`` by this thread within it raised as PolicyExit."""
    real = os._exit
    owner = (os.getpid(), threading.get_ident())

    def guarded(status: int) -> NoReturn:
        if (os.getpid(), threading.get_ident()) != owner:
            real(status)
        raise PolicyExit(f"the policy called os._exit({status}); its task ends, the run goes on")

    os._exit = guarded
    try:
        return fn(*args, **kwargs)
    finally:
        if os._exit is guarded:  # one set meanwhile is its setter's
            os._exit = real
