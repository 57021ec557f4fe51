"""Meta-World goals drawn on demand are MT1's, byte for byte, whatever order they are asked in."""

from __future__ import annotations

import metaworld
import numpy as np
import pytest

from pytest_benchmarks.envs.metaworld.goals import N_GOALS, MT1Goals


@pytest.mark.parametrize("task", ["reach-v3", "pick-place-v3", "door-open-v3"])
def test_the_goals_are_mt1s_in_any_order_and_leave_the_global_rng_alone(task: str):
    expected = metaworld.MT1(task, seed=1000).train_tasks
    np.random.seed(3)
    caller = np.random.get_state()[1].copy()
    goals = MT1Goals(task, 1000)
    asked = [goals[i] for i in (2, 0, 9, 1)]  # drawn as far as goal 9, then from those kept
    assert [a.data for a in asked] == [expected[i].data for i in (2, 0, 9, 1)]
    assert np.array_equal(np.random.get_state()[1], caller)
    assert [goals[i].data for i in range(N_GOALS)] == [t.data for t in expected]
    assert {goals[i].env_name for i in range(N_GOALS)} == {task}


def test_a_goal_outside_mt1s_fifty_is_an_index_error():
    goals = MT1Goals("reach-v3", 1000)
    with pytest.raises(IndexError, match=r"goal 50 of reach-v3: MT1 has goals 0-49"):
        goals[50]
    goals.close()
