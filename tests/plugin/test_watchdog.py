"""The watchdog that holds ``--benchmark-timeout`` from outside ends only a process this session
started, the one that said it runs the task: never one an old journal names, whether its pid now
belongs to an unrelated process or, in a fresh PID namespace, to the run's own workers; and it
still holds the deadline when the journal cannot be written."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from held import ARGS, EPISODES, HOLD, finish, held, rows, start
from helpers import tmpfs

from pytest_benchmarks.metrics import journal
from pytest_benchmarks.plugin.events import TaskStarted
from pytest_benchmarks.plugin.watchdog import Watchdog, own_process


def interrupted_run(project: pytest.Pytester, metrics: Path) -> list[Path]:
    """A -n 2 run killed outright while walk holds: its journal's files."""
    session = start(project, "-n", "2", f"--benchmark-metrics={metrics}", hold_at=HOLD)
    held(project, session)
    os.killpg(session.pid, signal.SIGKILL)
    finish(session, project)
    (project.path / "started-walk.txt").unlink()
    return sorted(journal.folder_for(metrics).glob("*.jsonl"))


def renamed(files: list[Path], pids: list[int]) -> None:
    """The journal files copied under each of ``pids`` as their name's pid, the originals
    removed; their tasks dated an hour back, long past any deadline (checksums made anew)."""
    texts = []
    for source in files:
        entries = [json.loads(line) for line in source.read_text().splitlines()]
        for entry in entries:
            del entry["sum"]
            if entry["kind"] == "task_started":
                entry["at"] -= 3600
        texts.append(
            "".join(json.dumps({**e, "sum": journal._checksum(e)}) + "\n" for e in entries)
        )
        source.unlink()
    for number, pid in enumerate(pids):
        (files[0].parent / f"{pid}-{number + 1}.jsonl").write_text(texts[number % len(texts)])


def resumed(project: pytest.Pytester, metrics: Path, *prefix: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "pytest", *ARGS, "-n", "2", "--benchmark-timeout=60",
         f"--benchmark-metrics={metrics}", "--benchmark-resume"],
        cwd=project.path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_a_resumed_run_never_ends_the_process_an_old_journal_file_names(
    toy_project: pytest.Pytester,
):
    """The journal files of a killed run, named after the pid of an unrelated ``sleep`` (the pid
    reused): the resumed run carries on from them and the sleep lives on."""
    metrics = toy_project.path / "run.json"
    files = interrupted_run(toy_project, metrics)
    bystander = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        renamed(files, [bystander.pid] * len(files))
        done = resumed(toy_project, metrics)
        assert done.returncode == 0, done.stdout
        assert bystander.poll() is None, "the resumed run's watchdog ended an unrelated process"
    finally:
        bystander.kill()
        bystander.wait()
    walk = rows(metrics)["toy/walk"]
    assert walk["error"] is None and [e["index"] for e in walk["episodes"]] == list(range(EPISODES))


def test_in_a_fresh_pid_namespace_the_run_never_ends_its_own_workers(toy_project: pytest.Pytester):
    """In a container PIDs start again: the old journal's files named after every small pid, so
    the resumed run's own xdist workers have those pids. None is ended; the run completes."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("a PID namespace needs unshare and root")
    probe = subprocess.run(["unshare", "-pf", "--mount-proc", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a PID namespace here: {probe.stderr.decode().strip()}")
    metrics = toy_project.path / "run.json"
    files = interrupted_run(toy_project, metrics)
    renamed(files, list(range(1, 64)))
    done = resumed(toy_project, metrics, "unshare", "-pf", "--mount-proc")
    assert done.returncode == 0, done.stdout
    assert "WorkerCrashed" not in done.stdout and "crashed" not in done.stdout, done.stdout
    walk = rows(metrics)["toy/walk"]
    assert walk["error"] is None and [e["index"] for e in walk["episodes"]] == list(range(EPISODES))


def test_the_deadline_holds_and_is_said_at_once_when_the_journal_cannot_be_written(
    toy_project: pytest.Pytester, tmp_path: Path
):
    """The journal's folder a read-only mount; walk's worker stops itself (SIGSTOP), answering
    no signal: the controller still ends it at the deadline, and the journal's failure is said
    while the run goes on, not only at its end."""
    toy_project.makepyfile(noting=STOPPING)
    metrics = tmp_path / "run.json"
    with tmpfs(journal.folder_for(metrics), "ro"):
        result = toy_project.runpytest_subprocess(
            *ARGS, "-n", "2", f"--benchmark-metrics={metrics}", "--benchmark-timeout=1",
            timeout=240,
        )  # fmt: skip
    lines = result.stdout.lines
    said = [i for i, line in enumerate(lines) if "journal:" in line and "Read-only" in line]
    table = [i for i, line in enumerate(lines) if "benchmark results" in line]
    assert said and table and said[0] < table[0], result.stdout.str()
    walk = rows(metrics)["toy/walk"]
    assert walk["error"] == ("TaskTimeout: toy/walk timed out after 1 s (--benchmark-timeout); "
                             "its worker did not stop and was ended from outside")  # fmt: skip
    assert rows(metrics)["toy/stroll"]["error"] is None


#: The noting policy (held.py), walk's worker stopping itself (SIGSTOP) at its fourth episode.
STOPPING = """
import os, signal
import numpy as np

class Stopping:
    def __init__(self, task, num_envs):
        self.task, self.num_envs, self.started = task, num_envs, 0
    def reset(self, slots, seeds):
        self.started += len(slots)
        if self.task == "walk" and self.started == 4:
            os.kill(os.getpid(), signal.SIGSTOP)
    def act(self, batch):
        return np.ones((self.num_envs, 1), dtype=np.float32)
    def identity(self):
        return {"source": "module", "id": "noting", "revision": None}

def make(config, num_envs):
    return Stopping(config.task.name, num_envs)
"""


def test_a_process_is_this_sessions_only_with_its_creation_time_and_as_a_descendant():
    """``own_process``: a child with its creation time is; the same pid with another creation
    time (a reused pid) is not; a process outside this one's tree (its parent) is not."""
    child = subprocess.Popen(["sleep", "60"])
    try:
        created = psutil.Process(child.pid).create_time()
        assert own_process(child.pid, created) is not None
        assert own_process(child.pid, created - 5) is None
        parent = psutil.Process(os.getppid())
        assert own_process(parent.pid, parent.create_time()) is None
    finally:
        child.kill()
        child.wait()


def test_the_watchdog_kills_a_late_task_once_and_only_its_process():
    child = subprocess.Popen(["sleep", "60"])
    try:
        dog = Watchdog(timeout=1)
        event = TaskStarted("toy/walk", child.pid, psutil.Process(child.pid).create_time())
        assert dog.started("gw0", event) is None
        dog.check(time.monotonic())  # not late yet
        assert child.poll() is None and dog.ended == set()
        dog.check(time.monotonic() + 60)
        assert child.wait(timeout=10) == -signal.SIGKILL and dog.ended == {"toy/walk"}
        stranger = dataclasses.replace(event, created=event.created - 5)
        line = dog.started("gw1", stranger)
        assert line == (f"watchdog: [gw1] pid {child.pid} is not a process this session "
                        "started; toy/walk's --benchmark-timeout is held only inside it")  # fmt: skip
    finally:
        child.kill()
        child.wait()
