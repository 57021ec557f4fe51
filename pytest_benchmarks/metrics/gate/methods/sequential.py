"""The sequential gate as a per-task test (``--benchmark-sequential``; the design and its
stopping rule are ``gate.sequential``): a run's episodes read again in its plan's order,
REGRESSED early when the drop e-value crossed its threshold (``p_value`` is ``1 / e``, the
e-value's calibration), HELD for futility (never a regression), and a task that ran its plan
undecided judged by McNemar at the rest of alpha, at Holm's first step over the family (the
later steps come with the session's other verdicts, ``verdicts.holm``). Unpaired (initial
states that moved with the environment: nothing stopped early), the whole plan is judged by
Fisher at the final tests' level."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

from pytest_benchmarks.metrics.gate.comparison import Comparison
from pytest_benchmarks.metrics.gate.methods import fisher
from pytest_benchmarks.metrics.gate.methods.protocol import Case
from pytest_benchmarks.metrics.gate.sequential import (
    REGRESSED,
    UNDECIDED,
    decide,
    early_threshold,
    final_alpha,
    paired_diffs,
    task_drop,
)
from pytest_benchmarks.metrics.stats import mcnemar_lower


class Sequential:
    name: ClassVar[str] = "sequential"

    def applies(self, case: Case) -> bool:
        return bool(case.order)

    def judge(self, case: Case) -> Comparison:
        can_fail = case.can_fail is not False
        if not case.pair:
            final = replace(case, alpha=final_alpha(case.alpha), order=(), can_fail=can_fail)
            return replace(fisher.TEST.judge(final), share=final_alpha(1.0))
        diffs = paired_diffs(case.baseline, case.new, case.order)
        threshold = early_threshold(case.alpha, case.family)
        delta = task_drop(case.baseline, case.order, case.alpha, case.family)
        decision = decide(diffs, threshold, len(case.order), delta=delta, can_fail=can_fail)
        counts: dict[str, Any] = {
            "task": case.task,
            "base_successes": sum(e.success for e in case.baseline),
            "base_n": len(case.baseline),
            "new_successes": sum(e.success for e in case.new),
            "new_n": len(case.new),
            "test": self.name,
            "lost": decision.lost,
            "gained": decision.gained,
            "can_fail": can_fail,
            "notes": case.notes,
            "decision": decision.line(),
            "state": decision.state,
            "share": final_alpha(1.0),
        }
        if decision.state == UNDECIDED:
            level = final_alpha(case.alpha) / max(1, case.family)
            p_value = mcnemar_lower(decision.lost, decision.gained)
            regression = can_fail and p_value < level
            improvement = not regression and mcnemar_lower(decision.gained, decision.lost) < level
            return Comparison(**counts, p_value=p_value, threshold=level, regression=regression,
                              improvement=improvement)  # fmt: skip
        e_value = decision.regression_e
        return Comparison(
            **counts,
            p_value=min(1.0, 1.0 / e_value) if e_value > 0 else 1.0,
            threshold=1.0 / threshold,
            regression=decision.state == REGRESSED,
            improvement=False,
        )


TEST = Sequential()
