"""LIBERO benchmark tests: one test per task and check, parametrized by the plugin."""

from __future__ import annotations

import pytest

from pytest_benchmarks.plugin.checks import check_rollout, check_success_rate

pytestmark = pytest.mark.benchmark_env("libero")


def test_rollout(evaluate, env_processors, vector_env):
    """The pipeline works: every planned episode ran within the step limit, no check tripped."""
    result = evaluate()
    check_rollout(result, vector_env.config, env_processors)
    assert [e.init_state for e in result.episodes] == [i % 50 for i in range(result.planned)]


#: Tasks the scripted expert covers but cannot do, and why.
EXPERT_CANNOT = {
    "libero/libero_spatial/4": "the bowl sits in the top drawer, under the cabinet's top: "
    "the expert's straight-down approach cannot reach its rim",
    "libero/libero_goal/3": "the drawer must be opened first; the goal names only the bowl in it",
    "libero/libero_10/5": "the book must stand upright in a narrow compartment of the caddy",
}


def test_success_rate(evaluate, benchmark_task, request):
    """The scripted expert (or another policy expected to succeed) succeeds at least once."""
    result = evaluate()
    known = EXPERT_CANNOT.get(benchmark_task.id)
    if known and result.policy.get("id") == "pytest_benchmarks.PickPlaceExpert":
        request.applymarker(pytest.mark.xfail(reason=known, strict=False))
    check_success_rate(result)


def test_no_regression(evaluate, snapshot):
    """The success rate is not significantly below the committed snapshot (the gate)."""
    assert evaluate() == snapshot
