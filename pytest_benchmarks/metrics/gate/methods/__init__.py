"""The gate's per-task tests, one module each behind ``protocol.TaskTest``. ``TESTS`` lists
them in the order they are asked whether they apply; the first that does judges the case. A
new test is a module with a ``TEST`` and its place in ``TESTS``."""

from __future__ import annotations

from pytest_benchmarks.metrics.gate.methods import exact, fisher, mcnemar, sequential
from pytest_benchmarks.metrics.gate.methods.protocol import Case, TaskTest

TESTS: tuple[TaskTest, ...] = (exact.TEST, sequential.TEST, mcnemar.TEST, fisher.TEST)


def choose(case: Case) -> TaskTest:
    """The test that judges ``case``: the first of ``TESTS`` that applies."""
    return next(test for test in TESTS if test.applies(case))


__all__ = ["TESTS", "Case", "TaskTest", "choose"]
