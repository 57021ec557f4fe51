"""``--benchmark-debug`` step traces: one JSON line per step of every episode of a task."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO

import numpy as np

from pytest_benchmarks.core.tasks import TaskRef


def trace_path(metrics: Path, task: TaskRef) -> Path:
    """``<metrics dir>/traces/<benchmark>/<task>.jsonl``, beside the metrics JSON."""
    return metrics.parent.joinpath("traces", *task.id.split("/")).with_suffix(".jsonl")


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
