"""The run's metrics JSON, the one writer the API and the plugin's controller share: the document
is rebuilt from the task rows and replaced atomically whenever a task ends, finished or not, so
an interrupted run keeps what finished."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_benchmarks.core.errors import one_line
from pytest_benchmarks.core.results import TaskResult
from pytest_benchmarks.core.settings import Settings
from pytest_benchmarks.metrics.document import build_metrics, write_metrics
from pytest_benchmarks.metrics.run_info import run_block, static_info


@dataclass
class MetricsFile:
    """``settings.metrics`` as the run's rows stand. With ``keep_going`` a failed write (a full
    disk) does not end the run: it is remembered in ``error`` and retried at the next update;
    without, it raises."""

    settings: Settings
    #: The command line and the folder it ran in, as the document's run block records them.
    args: list[str]
    root: Path
    #: xdist workers sharing this machine (0: none).
    workers: int = 0
    #: False: the document is built (``document``) and never written.
    write: bool = True
    keep_going: bool = False
    started_at: float = field(default_factory=time.time)
    #: The last document built.
    document: dict[str, Any] | None = None
    #: Why the last write failed; None once one succeeds.
    error: str | None = None
    _static: dict[str, Any] | None = None

    @property
    def path(self) -> Path:
        return self.settings.metrics

    def update(self, rows: list[TaskResult], partial: bool, exitstatus: int | None) -> str | None:
        """Rebuild the document from ``rows`` and write it; a line to show when writing starts
        to fail or works again, else None."""
        if self._static is None:  # what cannot change during the run: read once
            self._static = static_info(self.args, self.root, self.settings)
        block = run_block(
            self._static, self.settings, self.workers, self.started_at, partial, exitstatus
        )
        self.document = build_metrics(rows, block, str(self.settings.policy))
        if not self.write:
            return None
        try:
            write_metrics(self.path, self.document)
        except (OSError, ValueError) as exc:
            if not self.keep_going:
                raise
            first, self.error = self.error is None, one_line(exc)
            return (
                f"metrics: cannot write {self.path}: {self.error} (retried after each task)"
                if first
                else None
            )
        recovered, self.error = self.error is not None, None
        return f"metrics: written to {self.path} again" if recovered else None
