"""Fisher's exact test on the two samples' 2x2 table of successes and failures: the test for
episodes that do not pair (another seed, other episodes, initial states that moved with the
environment)."""

from __future__ import annotations

from typing import ClassVar

from pytest_benchmarks.metrics.gate.comparison import Comparison
from pytest_benchmarks.metrics.gate.methods.protocol import Case
from pytest_benchmarks.metrics.stats import episode_key, fisher_lower, reachable_p


class Fisher:
    name: ClassVar[str] = "Fisher"

    def applies(self, case: Case) -> bool:
        return True  # the test for whatever no other test takes

    def judge(self, case: Case) -> Comparison:
        base_k, base_n = sum(e.success for e in case.baseline), len(case.baseline)
        new_k, new_n = sum(e.success for e in case.new), len(case.new)
        if case.pair:
            min_p = reachable_p(case.baseline, [episode_key(e) for e in case.new])
        else:
            min_p = fisher_lower(base_k, base_n, 0, new_n) if base_n and new_n else 1.0
        possible = min_p < case.threshold if case.can_fail is None else case.can_fail
        p_value = fisher_lower(base_k, base_n, new_k, new_n)
        regression = case.mode == "stat" and possible and p_value < case.threshold
        p_up = fisher_lower(new_k, new_n, base_k, base_n)
        return case.verdict(self.name, p_value, p_up, min_p, regression, possible)


TEST = Fisher()
