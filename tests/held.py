"""A toy session held at a chosen point: its policy writes how many episodes it has started
and its process id, and waits for a file before the held episode, so a test sends its signal
when the session is there, never after a guessed sleep."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import leftover_processes, read_metrics

#: Notes each episode it starts (``started-TASK.txt``, one "x" per episode), its process
#: (``pid-TASK.txt``) and that one's parent (``parent-TASK.txt``: a Ray worker's raylet);
#: with ``HOLD_AT`` set, the HOLD_AT-th start of walk waits for ``go``.
NOTING_POLICY = """
import os, time
import numpy as np
from pathlib import Path

class Noting:
    def __init__(self, task, num_envs):
        self.task, self.num_envs, self.started = task, num_envs, 0
    def reset(self, slots, seeds):
        Path(f"pid-{self.task}.txt").write_text(str(os.getpid()))
        Path(f"parent-{self.task}.txt").write_text(str(os.getppid()))
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


def held(
    project: pytest.Pytester, session: subprocess.Popen[str] | None, limit_s: float = 120
) -> int:
    """Until walk's policy holds (its episodes before the held one finished); its process.
    ``session``: the session's process where this one started it (it must not have ended)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        started = project.path / "started-walk.txt"
        assert session is None or session.poll() is None, session.communicate()[0]
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
