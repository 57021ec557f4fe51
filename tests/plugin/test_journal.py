"""The per-episode journal: whatever ends a run (SIGKILL of a worker or of the whole session,
a hangup), every finished episode is kept and ``--benchmark-resume`` carries on from it.

The signals are sent when the policy says it has reached the chosen point (its ``reset`` writes
how many episodes it has started and its process id), never after a guessed sleep.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import leftover_processes, read_metrics

from pytest_benchmarks.core.results import EpisodeRecord, TaskResult
from pytest_benchmarks.core.tasks import TaskRef
from pytest_benchmarks.metrics import journal

#: Notes each episode it starts (``started-TASK.txt``, one "x" per episode) and its process
#: (``pid-TASK.txt``); with ``HOLD_AT`` set, the HOLD_AT-th start of walk waits for ``go``.
NOTING_POLICY = """
import os, time
import numpy as np
from pathlib import Path

class Noting:
    def __init__(self, task, num_envs):
        self.task, self.num_envs, self.started = task, num_envs, 0
    def reset(self, slots, seeds):
        Path(f"pid-{self.task}.txt").write_text(str(os.getpid()))
        with open(f"started-{self.task}.txt", "a") as f:
            f.write("x" * len(slots))
        self.started += len(slots)
        hold = int(os.environ.get("HOLD_AT", "0"))
        if self.task == "walk" and self.started == hold:
            while not Path("go").exists():
                time.sleep(0.01)
    def act(self, batch):
        return np.ones((self.num_envs, 1), dtype=np.float32)
    def identity(self):
        return {"source": "module", "id": "noting", "revision": None}

def make(config, num_envs):
    return Noting(config.task.name, num_envs)
"""

EPISODES = 8
ARGS = ["-p", "no:cacheprovider", "--benchmark-task=walk,stroll", f"--benchmark-episodes={EPISODES}",
        "--benchmark-batch-size=1", "--benchmark-policy=module:noting:make"]  # fmt: skip


def start(project: pytest.Pytester, *args: str, hold_at: int) -> subprocess.Popen[str]:
    project.makepyfile(noting=NOTING_POLICY)
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", *ARGS, *args],
        cwd=project.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "HOLD_AT": str(hold_at)},
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )  # fmt: skip


def held(project: pytest.Pytester, session: subprocess.Popen[str]) -> int:
    """Until walk's policy holds (its episodes before the held one finished); its process."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        started = project.path / "started-walk.txt"
        assert session.poll() is None, session.communicate()[0]
        if started.exists() and len(started.read_text()) >= HOLD:
            return int((project.path / "pid-walk.txt").read_text())
        time.sleep(0.01)
    raise AssertionError("walk's policy never reached its hold")


#: walk holds at the start of its fourth episode: three have finished.
HOLD = 4


def finish(session: subprocess.Popen[str], project: pytest.Pytester) -> str:
    try:
        out, _ = session.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(session.pid, signal.SIGKILL)
    assert leftover_processes(str(project.path)) == []
    return out


def rows(metrics: Path) -> dict[str, dict]:
    return {row["id"]: row for row in read_metrics(metrics)["results"]}


def test_a_killed_xdist_worker_keeps_the_episodes_its_task_finished(toy_project: pytest.Pytester):
    metrics = toy_project.path / "run.json"
    session = start(toy_project, "-n", "2", f"--benchmark-metrics={metrics}", hold_at=HOLD)
    os.kill(held(toy_project, session), signal.SIGKILL)
    out = finish(session, toy_project)
    walk = rows(metrics)["toy/walk"]
    assert walk["error"].startswith("WorkerCrashed: xdist worker"), walk["error"]
    assert [e["index"] for e in walk["episodes"]] == [0, 1, 2], out
    assert rows(metrics)["toy/stroll"]["n_episodes"] == EPISODES
    # Carried on: only the five episodes walk lacks run, and the row is whole.
    (toy_project.path / "started-walk.txt").unlink()
    resumed = subprocess.run(
        [sys.executable, "-m", "pytest", *ARGS, f"--benchmark-metrics={metrics}",
         "--benchmark-resume"], cwd=toy_project.path, capture_output=True, text=True,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stdout
    assert len((toy_project.path / "started-walk.txt").read_text()) == EPISODES - 3
    walk = rows(metrics)["toy/walk"]
    assert walk["error"] is None and [e["index"] for e in walk["episodes"]] == list(range(8))
    assert not journal.folder_for(metrics).exists()  # a whole run needs no journal


def test_a_session_killed_outright_is_carried_on_from_its_journal(toy_project: pytest.Pytester):
    """SIGKILL of the whole session (-n 0) before any task ended: no metrics JSON, yet the
    resumed run runs only the missing episodes and equals an uninterrupted run."""
    metrics = toy_project.path / "run.json"
    session = start(toy_project, f"--benchmark-metrics={metrics}", hold_at=HOLD)
    held(toy_project, session)
    os.killpg(session.pid, signal.SIGKILL)
    finish(session, toy_project)
    assert not metrics.exists()
    logged = journal.read(journal.folder_for(metrics)).results["toy/walk"]
    assert [e.index for e in logged.episodes] == [0, 1, 2]
    assert logged.error == journal.INTERRUPTED
    (toy_project.path / "started-walk.txt").unlink()
    resumed = toy_project.runpytest_subprocess(
        *ARGS, f"--benchmark-metrics={metrics}", "--benchmark-resume"
    )
    resumed.assert_outcomes(passed=4)
    assert len((toy_project.path / "started-walk.txt").read_text()) == EPISODES - 3
    clean = toy_project.path / "clean.json"
    toy_project.runpytest_subprocess(*ARGS, f"--benchmark-metrics={clean}").assert_outcomes(
        passed=4
    )
    outcome = [
        {k: v for k, v in e.items() if k != "duration_s"}
        for e in rows(metrics)["toy/walk"]["episodes"]
    ]
    expected = [
        {k: v for k, v in e.items() if k != "duration_s"}
        for e in rows(clean)["toy/walk"]["episodes"]
    ]
    assert outcome == expected


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_a_signal_to_the_process_group_keeps_every_finished_episode(
    toy_project: pytest.Pytester, signum: signal.Signals
):
    """SIGHUP (a closed terminal) or SIGTERM (a CI runner) to the whole process group under
    -n 2: the session writes every finished episode and exits as interrupted. Each worker gets
    the signal twice (from the group and from its controller) and stops once, never killed by
    the second: xdist would otherwise replace it and the session run on."""
    metrics = toy_project.path / "run.json"
    session = start(toy_project, "-n", "2", f"--benchmark-metrics={metrics}", hold_at=HOLD)
    held(toy_project, session)
    os.killpg(session.pid, signum)
    (toy_project.path / "go").touch()  # the held policy returns into the stopping worker
    out = finish(session, toy_project)
    assert session.returncode == pytest.ExitCode.INTERRUPTED, out
    document = read_metrics(metrics)
    assert document["run"]["partial"] is True
    walk = rows(metrics)["toy/walk"]
    assert [e["index"] for e in walk["episodes"]][:3] == [0, 1, 2], walk
    assert walk["error"].startswith(f"Terminated: {signum.name}"), walk


def _result(episodes: int) -> TaskResult:
    task = TaskRef("toy", "toy", "walk", 0, "walk to the end")
    records = [EpisodeRecord(i, 1000 + i, i % 4, True, 6, 1.0, 1.0, 0.1) for i in range(episodes)]
    return TaskResult(task, episodes=records, planned=4, policy={"source": "module"})


def write_journal(folder: Path, episodes: int, end: bool) -> Path:
    writer = journal.JournalWriter(folder, {"seed": 1000})
    result = _result(episodes)
    writer.start(TaskResult(result.task, planned=4))
    for episode in result.episodes:
        writer.episode(result.task.id, episode, result.policy)
    if end:
        writer.end(result)
    writer.close()
    assert writer.path is not None
    return writer.path


def test_the_journal_reads_back_what_was_written(tmp_path: Path):
    write_journal(tmp_path / "j", 3, end=False)
    found = journal.read(tmp_path / "j")
    walk = found.results["toy/walk"]
    assert walk.episodes == _result(3).episodes and walk.error == journal.INTERRUPTED
    assert found.runs and found.notes == []
    write_journal(tmp_path / "k", 4, end=True)
    ended = journal.read(tmp_path / "k").results["toy/walk"]
    assert ended.error is None and not ended.partial and ended.policy == {"source": "module"}


def test_a_cut_last_line_is_dropped_with_a_note_and_other_damage_is_refused(tmp_path: Path):
    path = write_journal(tmp_path / "j", 3, end=False)
    whole = path.read_text()
    path.write_text(whole[:-25])  # the last episode's line cut short by a kill
    found = journal.read(tmp_path / "j")
    assert [e.index for e in found.results["toy/walk"].episodes] == [0, 1]
    assert found.notes == [f"journal: dropped {path}:5, a line cut short when the process "
                           "writing it ended"]  # fmt: skip
    lines = whole.splitlines(keepends=True)
    edited = json.loads(lines[2])
    edited["episode"]["success"] = False  # a flipped outcome, its checksum left as it was
    path.write_text("".join([*lines[:2], json.dumps(edited) + "\n", *lines[3:]]))
    with pytest.raises(journal.JournalError) as refused:
        journal.read(tmp_path / "j")
    assert str(refused.value) == (
        f"{path}:3: its checksum does not match its content (edited or damaged)"
    )
    path.write_text("".join([*lines[:2], "{not json\n", *lines[3:]]))
    with pytest.raises(journal.JournalError, match=r":3: not a journal line \(not JSON\)$"):
        journal.read(tmp_path / "j")
