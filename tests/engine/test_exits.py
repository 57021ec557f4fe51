"""A policy's os._exit ends its task; anything else's still ends the process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from pytest_benchmarks.engine.exits import PolicyExit, policy_call


def test_an_exit_in_the_call_raises_and_the_real_exit_comes_back():
    real = os._exit

    def leaving(status: int) -> None:
        os._exit(status)

    with pytest.raises(PolicyExit, match=r"os._exit\(3\)"):
        policy_call(leaving, 3)
    assert os._exit is real
    assert policy_call(lambda a, b=0: a + b, 1, b=2) == 3


def test_a_thread_the_policy_started_still_ends_the_process():
    """Only the calling thread's exit is the policy's answer to the call: a thread it started
    that ends the process means it."""
    script = textwrap.dedent(
        """
        import os, threading, time
        from pytest_benchmarks.engine.exits import policy_call

        def policy():
            threading.Thread(target=os._exit, args=(5,)).start()
            time.sleep(30)

        policy_call(policy)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], timeout=60)
    assert done.returncode == 5
