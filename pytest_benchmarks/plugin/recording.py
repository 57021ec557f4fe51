"""The controller's end of ``--benchmark-record``: the workers' part files become one dataset."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from pytest_benchmarks.core.errors import one_line
from pytest_benchmarks.core.files import parts_dir
from pytest_benchmarks.engine.dataset import build_dataset

#: Seconds between progress lines while the dataset is written.
PROGRESS_S = 10.0


def build_record(root: Path, show: Callable[[str], None]) -> tuple[str, bool]:
    """Build the dataset from the run's parts: the summary line (what was written, or why not;
    the parts are then kept, so no episode is lost) and whether it was written."""
    parts = parts_dir(root)
    last = [time.monotonic()]

    def progress(done: int, total: int) -> None:
        if time.monotonic() - last[0] >= PROGRESS_S:
            last[0] = time.monotonic()
            show(f"record: {done}/{total} episodes written to {root}")

    try:
        summary = build_dataset(parts, root, progress)
    except Exception as exc:  # RecordError, or LeRobot's writer: report it, keep the parts
        kept = f"; the recorded episodes are kept in {parts}" if parts.exists() else ""
        return f"record: no dataset written: {one_line(exc)}{kept}", False
    return (
        f"record: LeRobotDataset at {summary.root}: {summary.episodes} episodes of "
        f"{summary.tasks} tasks, {summary.frames} frames, {summary.size_bytes / 1e6:.1f} MB"
    ), True
