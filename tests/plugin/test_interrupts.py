"""Ctrl-C as a terminal sends it (SIGINT to the whole process group, xdist's workers included)
ends a run as SIGTERM does: the tasks in flight keep their finished episodes, the summary,
the ``partial`` marker and the exit status are written; a second Ctrl-C ends it at once."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import leftover_processes, read_metrics

#: A policy that notes each episode it starts (one file per task) and holds at its fourth start,
#: three episodes finished, until a signal ends it: a session can end only by the signal the
#: test sends, however loaded the machine. ``deaf`` (stroll's) swallows every KeyboardInterrupt
#: (SIGTERM's Terminated included) and never finishes a step.
SLOW_POLICY = """
import time
import numpy as np

class Slow:
    def __init__(self, task, num_envs, deaf):
        self.task, self.num_envs, self.deaf, self.started = task, num_envs, deaf, 0
    def reset(self, slots, seeds):
        with open(f"started-{self.task}.txt", "a") as f:
            f.write("x")
        self.started += len(slots)
        if self.started >= HOLD:
            self.hold()
    def hold(self):
        while True:
            try:
                time.sleep(0.05)
            except KeyboardInterrupt:
                if not self.deaf:
                    raise
    def act(self, batch):
        if self.deaf:
            self.hold()
        return np.ones((self.num_envs, 1), dtype=np.float32)
    def identity(self):
        return {"source": "module", "id": "slow", "revision": None}

def make(config, num_envs):
    return Slow(config.task.name, num_envs, False)

def deaf(config, num_envs):
    return Slow(config.task.name, num_envs, config.task.name == "stroll")
"""
#: The start a task's policy holds at: the three episodes before it have finished.
HOLD = 4


@pytest.fixture
def sessions() -> Iterator[list[subprocess.Popen[str]]]:
    """The inner sessions a test starts; each one's process group is ended however it ends."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for session in started:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(session.pid, signal.SIGKILL)


def start(
    project: pytest.Pytester, metrics: Path, factory: str, sessions: list[subprocess.Popen[str]]
) -> subprocess.Popen[str]:
    project.makepyfile(slow=SLOW_POLICY.replace("HOLD", str(HOLD)))
    session = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2",
         "--benchmark-task=walk,stroll", "--benchmark-episodes=30", "--benchmark-batch-size=1",
         f"--benchmark-policy=module:slow:{factory}", f"--benchmark-metrics={metrics}"],
        cwd=project.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )  # fmt: skip
    sessions.append(session)
    return session


def start_alone(
    project: pytest.Pytester, metrics: Path, task: str, factory: str,
    sessions: list[subprocess.Popen[str]],
) -> subprocess.Popen[str]:  # fmt: skip
    """``start`` without xdist: one task, in a process group of its own."""
    project.makepyfile(slow=SLOW_POLICY.replace("HOLD", str(HOLD)))
    session = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--benchmark-task={task}",
         "--benchmark-episodes=30", "--benchmark-batch-size=1",
         f"--benchmark-policy=module:slow:{factory}", f"--benchmark-metrics={metrics}"],
        cwd=project.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    sessions.append(session)
    return session


def wait_for_episodes(project: pytest.Pytester, tasks: tuple[str, ...], count: int) -> None:
    """Until each task has started ``count`` episodes (two workers, one task each)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        files = [project.path / f"started-{task}.txt" for task in tasks]
        if all(f.exists() and len(f.read_text()) >= count for f in files):
            return
        time.sleep(0.1)
    raise AssertionError(f"{tasks} did not start {count} episodes each")


def said(session: subprocess.Popen[str], text: str) -> str:
    """The session's output up to the line that holds ``text``: the moment it has said it (a
    session that has not said it in 120 s is killed, a bound, not a wait)."""
    lines = []
    killer = threading.Timer(120, os.killpg, (session.pid, signal.SIGKILL))
    killer.start()
    try:
        for line in session.stdout:  # type: ignore[union-attr]
            lines.append(line)
            if text in line:
                return "".join(lines)
    finally:
        killer.cancel()
    raise AssertionError(f"the session ended without saying {text!r}:\n{''.join(lines)}")


def handed_over(metrics: Path, task: str) -> None:
    """Until the metrics JSON holds ``task``'s row: its worker handed over what it finished."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if metrics.exists() and any(r["id"] == task for r in read_metrics(metrics)["results"]):
            return
        time.sleep(0.05)
    raise AssertionError(f"{task}'s worker never handed over its row")


def test_ctrl_c_to_the_process_group_under_xdist_keeps_every_finished_episode(
    toy_project: pytest.Pytester, sessions: list[subprocess.Popen[str]]
):
    metrics = toy_project.path / "run.json"
    session = start(toy_project, metrics, "make", sessions)
    wait_for_episodes(toy_project, ("walk", "stroll"), HOLD)
    os.killpg(session.pid, signal.SIGINT)
    out, _ = session.communicate(timeout=120)
    assert session.returncode == pytest.ExitCode.INTERRUPTED, out
    assert "benchmark results" in out and "Traceback" not in out
    document = read_metrics(metrics)
    assert document["run"]["partial"] is True
    assert document["run"]["exitstatus"] == pytest.ExitCode.INTERRUPTED
    rows = {row["id"]: row for row in document["results"]}
    for task in ("toy/walk", "toy/stroll"):
        assert rows[task]["n_episodes"] == HOLD - 1, rows[task]
        assert rows[task]["error"].startswith("KeyboardInterrupt"), rows[task]["error"]
    assert leftover_processes(str(toy_project.path)) == []


@pytest.mark.parametrize(
    ("signum", "error"),
    [(signal.SIGINT, "KeyboardInterrupt"), (signal.SIGHUP, "Terminated: SIGHUP")],
    ids=["SIGINT", "SIGHUP"],
)
def test_ctrl_c_to_the_controller_alone_under_xdist_is_handled_the_same(
    toy_project: pytest.Pytester, sessions: list[subprocess.Popen[str]], signum, error
):
    """The controller passes SIGTERM on to its workers; the rows still name what the user sent."""
    metrics = toy_project.path / "run.json"
    session = start(toy_project, metrics, "make", sessions)
    wait_for_episodes(toy_project, ("walk", "stroll"), HOLD)
    session.send_signal(signum)
    out, _ = session.communicate(timeout=120)
    assert session.returncode == pytest.ExitCode.INTERRUPTED, out
    rows = {row["id"]: row for row in read_metrics(metrics)["results"]}
    assert all(rows[t]["n_episodes"] == HOLD - 1 for t in ("toy/walk", "toy/stroll")), rows
    for task in ("toy/walk", "toy/stroll"):
        assert rows[task]["error"].startswith(error), rows[task]["error"]
        assert rows[task]["error"].endswith("(sent to the controller, passed on as SIGTERM)")
    assert leftover_processes(str(toy_project.path)) == []


def test_a_second_ctrl_c_ends_a_session_whose_worker_will_not_stop(
    toy_project: pytest.Pytester, sessions: list[subprocess.Popen[str]]
):
    # stroll's policy swallows every KeyboardInterrupt: the first Ctrl-C cannot stop its
    # worker, and the session waits for it; the second ends the session.
    metrics = toy_project.path / "run.json"
    session = start(toy_project, metrics, "deaf", sessions)
    wait_for_episodes(toy_project, ("walk", "stroll"), 1)
    os.killpg(session.pid, signal.SIGINT)
    told = said(session, "Ctrl-C again to stop at once")
    handed_over(metrics, "toy/walk")  # walk's worker stopped; stroll's never will
    assert session.poll() is None, "the first Ctrl-C waits for the workers' hand-over"
    os.killpg(session.pid, signal.SIGINT)
    out, _ = session.communicate(timeout=120)
    out = told + out
    assert session.returncode == pytest.ExitCode.INTERRUPTED, out
    rows = {row["id"]: row for row in read_metrics(metrics)["results"]}
    assert rows["toy/walk"]["error"].startswith("KeyboardInterrupt")
    assert leftover_processes(str(toy_project.path)) == []


def test_ctrl_c_while_the_xdist_workers_start_ends_the_session_cleanly(
    toy_project: pytest.Pytester, sessions: list[subprocess.Popen[str]]
):
    """A Ctrl-C to the group as xdist reports its workers created, before they are ready:
    interrupted (exit 2) in moments, no INTERNALERROR, and no crashed worker replaced to run
    the tasks on as if nothing had been asked."""
    metrics = toy_project.path / "run.json"
    session = start(toy_project, metrics, "make", sessions)
    for line in session.stdout:  # type: ignore[union-attr]
        if line.startswith("created:"):
            break
    os.killpg(session.pid, signal.SIGINT)
    out, _ = session.communicate(timeout=120)
    assert session.returncode == pytest.ExitCode.INTERRUPTED, out
    assert "INTERNALERROR" not in out and "Traceback" not in out, out
    started = toy_project.path / "started-walk.txt"
    assert not started.exists() or len(started.read_text()) < HOLD, out
    assert leftover_processes(str(toy_project.path)) == []


def test_ctrl_c_as_a_worker_interpreter_starts_is_no_traceback(
    toy_project: pytest.Pytester, sessions: list[subprocess.Popen[str]]
):
    """A Ctrl-C to the group the moment xdist has started a worker's interpreter, before it
    has imported pytest: the workers start with SIGINT blocked (the controller holds it while
    it starts them), so none ends in a traceback or a "Fatal Python error"; the controller
    takes it once they are started and the session ends interrupted."""
    toy_project.makeconftest(
        toy_project.path.joinpath("conftest.py").read_text()
        + """
import os
import signal

def pytest_xdist_newgateway(gateway):
    if gateway.id == "gw0":
        os.killpg(0, signal.SIGINT)
"""
    )
    session = start(toy_project, toy_project.path / "run.json", "make", sessions)
    out, _ = session.communicate(timeout=120)
    assert session.returncode == pytest.ExitCode.INTERRUPTED, out
    for said in ("Traceback", "Fatal Python error", "INTERNALERROR"):
        assert said not in out, out
    assert not (toy_project.path / "started-walk.txt").exists(), out
    assert leftover_processes(str(toy_project.path)) == []


def test_a_second_ctrl_c_without_xdist_is_told_the_stop_is_under_way(
    toy_project: pytest.Pytester, sessions: list[subprocess.Popen[str]]
):
    """Two Ctrl-Cs in a row at -n 0: the second does not break the stop with a traceback; the
    document is written with the interrupted status."""
    metrics = toy_project.path / "run.json"
    session = start_alone(toy_project, metrics, "walk", "make", sessions)
    wait_for_episodes(toy_project, ("walk",), HOLD)
    os.killpg(session.pid, signal.SIGINT)
    os.killpg(session.pid, signal.SIGINT)
    out, _ = session.communicate(timeout=120)
    assert session.returncode == pytest.ExitCode.INTERRUPTED, out
    assert "Traceback" not in out, out
    document = read_metrics(metrics)
    assert document["run"]["partial"] is True
    assert document["run"]["exitstatus"] == pytest.ExitCode.INTERRUPTED
    assert document["results"][0]["n_episodes"] == HOLD - 1


def test_a_third_ctrl_c_without_xdist_ends_the_session_at_once_in_one_line(
    toy_project: pytest.Pytester, sessions: list[subprocess.Popen[str]]
):
    """A policy deaf to Ctrl-C holds the stop; the second Ctrl-C is told it is under way, the
    third ends the session at once: one line, no traceback through whatever the stop was
    doing, the interrupted status."""
    session = start_alone(toy_project, toy_project.path / "r.json", "stroll", "deaf", sessions)
    wait_for_episodes(toy_project, ("stroll",), 1)
    for _ in range(3):
        time.sleep(0.5)  # each one taken before the next: signals of one kind do not queue
        os.killpg(session.pid, signal.SIGINT)
    out, _ = session.communicate(timeout=120)
    assert session.returncode == pytest.ExitCode.INTERRUPTED, out
    assert "Traceback" not in out, out
    assert out.rstrip().endswith(
        "pytest-benchmarks: stopped at once; every finished episode is in the run's journal "
        "(--benchmark-resume carries the run on)"
    ), out
