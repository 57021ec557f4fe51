"""The exact gate (``--benchmark-gate=exact``, for deterministic runs): any shared episode that
succeeded in the baseline and fails now is a regression. Every new episode must be one of the
baseline's; comparing other episodes exactly is refused rather than passed."""

from __future__ import annotations

from typing import ClassVar

from pytest_benchmarks.metrics.gate.comparison import Comparison
from pytest_benchmarks.metrics.gate.methods.protocol import Case
from pytest_benchmarks.metrics.stats import episode_key, reachable_p


class Exact:
    name: ClassVar[str] = "exact"

    def applies(self, case: Case) -> bool:
        return case.mode == "exact"

    def judge(self, case: Case) -> Comparison:
        if len(case.shared) != len(case.new):
            raise ValueError(
                f"{case.task}: the exact gate compares the same episodes, but "
                f"{len(case.new) - len(case.shared)} of {len(case.new)} new episodes (index, "
                "seed, initial state) are not in the baseline; use the statistical gate"
            )
        min_p = reachable_p(case.baseline, [episode_key(e) for e in case.new])
        lost = case.lost
        possible = any(b for b, _ in case.shared)
        return case.verdict(self.name, 0.0 if lost else 1.0, 1.0, min_p, lost > 0, possible)


TEST = Exact()
