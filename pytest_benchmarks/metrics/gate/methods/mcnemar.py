"""McNemar's exact test on paired episodes: only the episodes whose outcome changed carry
information; with ``lost`` and ``gained`` of them, P(X >= lost), X ~ Binomial(lost + gained,
1/2) (``stats.mcnemar_lower``)."""

from __future__ import annotations

from typing import ClassVar

from pytest_benchmarks.metrics.gate.comparison import Comparison
from pytest_benchmarks.metrics.gate.methods.protocol import Case
from pytest_benchmarks.metrics.stats import episode_key, mcnemar_lower, reachable_p


class McNemar:
    name: ClassVar[str] = "McNemar"

    def applies(self, case: Case) -> bool:
        return case.paired

    def judge(self, case: Case) -> Comparison:
        min_p = reachable_p(case.baseline, [episode_key(e) for e in case.new])
        possible = min_p < case.threshold if case.can_fail is None else case.can_fail
        p_value = mcnemar_lower(case.lost, case.gained)
        regression = case.mode == "stat" and possible and p_value < case.threshold
        p_up = mcnemar_lower(case.gained, case.lost)
        return case.verdict(self.name, p_value, p_up, min_p, regression, possible)


TEST = McNemar()
