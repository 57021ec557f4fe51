"""What a policy leaves running when the session ends: processes it started and non-daemon
threads. Each is reported in one line and ended, so the session exits, with its own status.

Descendants of the process that ran the tasks (the session without xdist, or each xdist worker)
that were not there when the session began are killed (SIGKILL) at its end, but for
``multiprocessing``'s own resource tracker and forkserver, which end with the process. That
process is made a child subreaper (Linux's ``PR_SET_CHILD_SUBREAPER``), so a daemon a policy
double-forks into its own session (``setsid``) is re-parented to it and found too, not to init.
A helper is known by its command line being exactly what ``multiprocessing`` runs (an import
of its ``main`` and a call with literal arguments), so a look-alike that runs code of its own
is a leftover. A thread cannot be killed, and Python waits for every non-daemon thread before it
exits: at interpreter shutdown, before that wait (``threading._register_atexit``, the hook
``concurrent.futures`` uses too), the process exits with the session's status instead when such
a thread is still alive. The idle workers of a ``ThreadPoolExecutor`` left open are no leftover:
they are told to stop first, as ``concurrent.futures`` itself does at exit, and only one still
busy after a grace counts.
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import os
import sys
import threading
import time

import psutil

#: How long idle executor workers get to stop once told to.
EXECUTOR_GRACE_S = 2.0

#: The process's first session registers the exit hook; in-process sessions after it do not.
_registered = False


class Leftovers:
    """The descendants and threads there were when the session began."""

    def __init__(self) -> None:
        become_subreaper()
        self.children = {_key(p) for p in descendants()}
        self.threads = {thread.ident for thread in threading.enumerate()}
        #: The session's exit status, once known.
        self.status = 0

    def end_children(self) -> list[str]:
        """Kill the descendants started since the session began; a line for each."""
        lines: list[str] = []
        for _ in range(_ROUNDS):  # a killed parent's children are re-parented here: look again
            killed = self._end_round(lines)
            _reap()
            if not killed:
                break
            time.sleep(_REPARENT_S)
        return lines

    def _end_round(self, lines: list[str]) -> bool:
        killed = False
        helpers: set[int] = set()
        for process in descendants():  # parents before their children
            try:
                if _key(process) in self.children or process.status() == psutil.STATUS_ZOMBIE:
                    continue
                if process.ppid() in helpers or is_multiprocessing_helper(process.cmdline()):
                    helpers.add(process.pid)  # it, and what it started, end with the process
                    continue
                name = describe(process)
                process.kill()
            except psutil.Error:
                continue
            killed = True
            lines.append(
                f"leftover: process {process.pid} ({name}), started during the session and still "
                "running at its end, was killed"
            )
        return killed

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


#: Rounds of killing and how long a killed parent's children get to be re-parented here.
_ROUNDS, _REPARENT_S = 5, 0.05
#: prctl's option that makes orphaned descendants this process's children.
_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    """Orphaned descendants become this process's children, not init's (Linux; else nothing)."""
    if sys.platform != "linux":
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def descendants() -> list[psutil.Process]:
    """This process's descendants, each parent before its children."""
    try:
        return psutil.Process().children(recursive=True)
    except psutil.Error:
        return []


def _key(process: psutil.Process) -> tuple[int, float]:
    """A process as itself: its pid and creation time (a pid alone may be reused)."""
    try:
        return (process.pid, process.create_time())
    except psutil.Error:
        return (process.pid, 0.0)


def _reap() -> None:
    """Collect the exit status of children that ended (re-parented ones have no other parent
    to do it), so none stays a zombie; children that subprocess or multiprocessing started are
    left to them."""
    for process in descendants():
        with contextlib.suppress(psutil.Error, ChildProcessError, OSError):
            if process.ppid() == os.getpid() and process.status() == psutil.STATUS_ZOMBIE:
                os.waitpid(process.pid, os.WNOHANG)


def describe(process: psutil.Process) -> str:
    """The process's name and its command line, cut short: what tells the user whose it is."""
    name = process.name()
    command = " ".join(word for word in process.cmdline() if word)
    if not command:
        return name
    return f"{name}: {command if len(command) <= 120 else command[:117] + '...'}"


#: The modules whose ``main`` multiprocessing runs as a helper process: the resource tracker
#: (shared memory, semaphores) and the forkserver. They live as long as the process and end
#: when it exits; killed early, the tracker's clean-up of shared memory is lost.
HELPER_MODULES = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")


def is_multiprocessing_helper(command: list[str]) -> bool:
    """Whether ``command`` is ``python -c "from M import main; main(LITERALS)"`` for one of the
    helper modules, and nothing else (its code parsed, not matched as text)."""
    if "-c" not in command or command.index("-c") + 1 >= len(command):
        return False
    try:
        body = ast.parse(command[command.index("-c") + 1]).body
    except SyntaxError:
        return False
    if len(body) != 2 or not isinstance(body[0], ast.ImportFrom):
        return False
    imported, call = body[0], body[1]
    if (
        imported.module not in HELPER_MODULES
        or [(a.name, a.asname) for a in imported.names] != [("main", None)]
        or not isinstance(call, ast.Expr)
        or not isinstance(call.value, ast.Call)
        or not isinstance(call.value.func, ast.Name)
        or call.value.func.id != "main"
    ):
        return False
    arguments = [*call.value.args, *(k.value for k in call.value.keywords)]
    try:
        for argument in arguments:
            ast.literal_eval(argument)
    except ValueError:
        return False
    return True


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
