"""What a policy leaves running when the session ends: processes it forked and non-daemon threads
it started. Each is reported in one line and ended, so the session exits, with its own status.

Children of the process that ran the tasks (the session without xdist, or each xdist worker)
that were not there when the session began are killed (SIGKILL) at its end, but for
``multiprocessing``'s own resource tracker and forkserver, which end with the process. A thread
cannot be killed, and Python waits for every non-daemon thread before it exits: at interpreter
shutdown, before that wait (``threading._register_atexit``, the hook ``concurrent.futures`` uses
too), the process exits with the session's status instead when such a thread is still alive. The
idle workers of a ``ThreadPoolExecutor`` left open are no leftover: they are told to stop first, as
``concurrent.futures`` itself does at exit, and only one still busy after a grace counts.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from pathlib import Path

from pytest_benchmarks.plugin.signals import child_pids

#: How long idle executor workers get to stop once told to.
EXECUTOR_GRACE_S = 2.0

#: The process's first session registers the exit hook; in-process sessions after it do not.
_registered = False


class Leftovers:
    """The children and threads there were when the session began."""

    def __init__(self) -> None:
        self.children = set(child_pids())
        self.threads = {thread.ident for thread in threading.enumerate()}
        #: The session's exit status, once known.
        self.status = 0

    def end_children(self) -> list[str]:
        """Kill the children started since the session began; a line for each."""
        lines = []
        for pid in child_pids():
            if pid in self.children:
                continue
            with contextlib.suppress(OSError):
                words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                if any(word.startswith(HELPER_COMMANDS) for word in words):
                    continue  # multiprocessing's own helper: it ends with the process
                name = describe(pid, words)
                os.kill(pid, signal.SIGKILL)
                lines.append(
                    f"leftover: process {pid} ({name}), started during the session and still "
                    "running at its end, was killed"
                )
        return lines

    def live_threads(self) -> list[threading.Thread]:
        """Non-daemon threads started since the session began that are still running."""
        return [
            thread
            for thread in threading.enumerate()
            if thread.ident not in self.threads and not thread.daemon and thread.is_alive()
        ]

    def register_exit(self) -> None:
        """At shutdown, exit with ``status`` rather than wait for leftover threads."""
        global _registered
        if _registered:
            return
        _registered = True
        threading._register_atexit(self._exit)  # type: ignore[attr-defined]

    def _exit(self) -> None:
        threads = self.live_threads()
        if not threads:
            return
        if _stop_idle_executor_workers(threads):
            threads = self.live_threads()
            if not threads:
                return
        for thread in threads:
            sys.stderr.write(
                f"leftover: thread {thread.name!r}, started during the session and not a "
                "daemon, was still running at its end; exiting without waiting for it\n"
            )
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(self.status)


def describe(pid: int, words: list[bytes]) -> str:
    """The process's name and its command line (``words``), cut short: what tells the user
    whose it is."""
    name = Path(f"/proc/{pid}/comm").read_text().strip()
    command = " ".join(word.decode(errors="replace") for word in words if word)
    if not command:
        return name
    return f"{name}: {command if len(command) <= 120 else command[:117] + '...'}"


#: How multiprocessing starts its resource tracker (shared memory, semaphores) and its
#: forkserver (``python -c ...``): helpers that live as long as the process and end when it
#: exits; killed early, the tracker's clean-up of shared memory is lost. Known by their command
#: line, since multiprocessing's own record of the forkserver's pid missed one in practice.
HELPER_COMMANDS = (
    b"from multiprocessing.resource_tracker import main",
    b"from multiprocessing.forkserver import main",
)


def _stop_idle_executor_workers(threads: list[threading.Thread]) -> bool:
    """Wake the executor workers among ``threads`` so the idle ones end; whether there were any.

    ``concurrent.futures`` joins its workers in its own exit hook, which may run after this one:
    this does its first half (no new work, a stop token on each queue) and waits a grace, so an
    executor left open is not taken for a leftover while one running a task that never ends is.
    """
    futures_thread = sys.modules.get("concurrent.futures.thread")
    queues = getattr(futures_thread, "_threads_queues", None)
    workers = [thread for thread in threads if queues is not None and thread in queues]
    if not workers:
        return False
    with futures_thread._global_shutdown_lock:  # type: ignore[union-attr]
        futures_thread._shutdown = True  # type: ignore[union-attr]
        for thread in workers:
            queues[thread].put(None)  # type: ignore[index]
    deadline = time.monotonic() + EXECUTOR_GRACE_S
    for thread in workers:
        thread.join(max(0.0, deadline - time.monotonic()))
    return True
