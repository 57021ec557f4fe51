"""What a test's report carries to the controller: one payload (the task's row, the gate's
verdict, why ``--snapshot-update`` kept a snapshot), on one report attribute that xdist
serialises with the report, so the same intake serves runs with and without workers."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import pytest

from pytest_benchmarks.core.results import TaskResult
from pytest_benchmarks.metrics.gate import Comparison
from pytest_benchmarks.plugin.session import GATE, KEPT, PENDING

#: The report attribute that holds the payload (plain JSON data).
ATTRIBUTE = "benchmark_payload"


@dataclass(frozen=True)
class Payload:
    #: The task's row (``TaskResult.to_row``), on the report of the test that ran it.
    result: dict[str, Any] | None = None
    #: The gate's verdict on the test's task: family, family_size and the comparison.
    verdict: dict[str, Any] | None = None
    #: Why --snapshot-update kept the task's snapshot.
    kept: str | None = None

    def task_result(self) -> TaskResult | None:
        return None if self.result is None else TaskResult.from_row(self.result)

    def gate_verdict(self) -> tuple[str, int, Comparison] | None:
        """The verdict as ``gate.judge_families`` takes it: family, its size, the comparison."""
        if self.verdict is None:
            return None
        v = self.verdict
        return v["family"], v["family_size"], Comparison.of(v["comparison"])


def attach(report: pytest.TestReport, item: pytest.Item) -> None:
    """Move what the test left in its item's stash onto its report (the verdict and the kept
    note with the call phase's report, the row with whichever report comes first)."""
    result = item.stash.get(PENDING, None)
    row = None
    if result is not None:
        row = result.to_row()
        del item.stash[PENDING]
    verdict = kept = None
    if report.when == "call":
        gated = item.stash.get(GATE, None)
        if gated is not None:
            family, size, comparison = gated
            verdict = {"family": family, "family_size": size, "comparison": asdict(comparison)}
        kept = item.stash.get(KEPT, None)
    if row is not None or verdict is not None or kept is not None:
        setattr(report, ATTRIBUTE, asdict(Payload(row, verdict, kept)))


def read(report: pytest.TestReport) -> Payload | None:
    """The payload a report carries, or None."""
    carried = getattr(report, ATTRIBUTE, None)
    return None if carried is None else Payload(**carried)
