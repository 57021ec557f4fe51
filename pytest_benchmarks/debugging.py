"""Seeing into a run: progress lines, per-step traces, and the command that reruns an episode.

Progress travels as a pytest report with ``when="progress"`` through the ordinary report hook,
so it reaches the terminal the same way with or without xdist (a worker's reports are sent to
the controller, which prints whole lines); the plugin gives these reports no test status, so
they never count as tests.
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path
from typing import IO, Any

import numpy as np
import pytest

from pytest_benchmarks.registry import TaskRef
from pytest_benchmarks.results import TaskResult
from pytest_benchmarks.settings import Settings

PROGRESS = "progress"


class ProgressReporter:
    """Reports a running task's episodes and successes at most every ``interval_s`` seconds."""

    def __init__(self, item: pytest.Item, interval_s: float) -> None:
        self.item = item
        self.interval_s = interval_s
        self.started = self.last = time.monotonic()

    def __call__(self, result: TaskResult) -> None:
        now = time.monotonic()
        if now - self.last < self.interval_s:
            return
        self.last = now
        report = pytest.TestReport(
            nodeid=self.item.nodeid,
            location=self.item.location,
            keywords={},
            outcome="passed",
            longrepr=None,
            when=PROGRESS,  # type: ignore[arg-type]
        )
        report.benchmark_progress = {  # type: ignore[attr-defined]
            "task": result.task.id,
            "done": result.n_episodes,
            "planned": result.planned,
            "successes": result.successes,
            "elapsed_s": now - self.started,
        }
        self.item.ihook.pytest_runtest_logreport(report=report)


def progress_line(progress: dict[str, Any], worker: str | None) -> str:
    """``[gw0] metaworld/push-v3: 20/50 episodes, 18 successes, 31 s``."""
    prefix = f"[{worker}] " if worker else ""
    return (
        f"{prefix}{progress['task']}: {progress['done']}/{progress['planned']} episodes, "
        f"{progress['successes']} successes, {progress['elapsed_s']:.0f} s"
    )


def trace_path(settings: Settings, task: TaskRef) -> Path:
    """``<metrics dir>/traces/<benchmark>/<task>.jsonl``, beside the metrics JSON."""
    return settings.metrics.parent.joinpath("traces", *task.id.split("/")).with_suffix(".jsonl")


class StepTraceFile:
    """``--benchmark-debug``: one JSON line per step (episode, step, action, reward, success)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.handle: IO[str] = path.open("w", encoding="utf-8")

    def __call__(
        self, episode: int, step: int, action: np.ndarray, reward: float, ok: bool
    ) -> None:
        row = {"episode": episode, "step": step, "action": np.asarray(action).tolist(),
               "reward": reward, "success": ok}  # fmt: skip
        self.handle.write(json.dumps(row) + "\n")

    def close(self) -> None:
        self.handle.close()


def rerun_command(test_file: str, settings: Settings, task: TaskRef) -> str:
    """The pytest command that reruns the task's tests in ``test_file`` with this run's episode
    settings; append ``--benchmark-episode=I,J`` to pick episodes."""
    s = settings
    args = ["pytest", test_file, f"--benchmark-task={task.id}", f"--benchmark-policy={s.policy}",
            f"--benchmark-seed={s.seed}"]  # fmt: skip
    optional = {
        "--benchmark-max-steps": s.max_steps,
        "--benchmark-obs": s.obs,
        "--benchmark-settle-steps": s.settle_steps,
        "--benchmark-camera-map": ",".join(f"{a}={b}" for a, b in s.camera_map) or None,
    }
    args += [f"{flag}={value}" for flag, value in optional.items() if value is not None]
    if s.image_size != (128, 128):
        args.append(f"--benchmark-image-size={s.image_size[0]}x{s.image_size[1]}")
    return shlex.join(args)


def worst_episodes(result: TaskResult, count: int = 3) -> list[int]:
    """Failed episodes with the lowest best reward first (all episodes if none failed)."""
    failed = [e for e in result.episodes if not e.success] or result.episodes
    return sorted(e.index for e in sorted(failed, key=lambda e: (e.max_reward, e.index))[:count])
