"""Initial-state digests: each simulator's state after reset, read through its wrappers."""

from __future__ import annotations

import re

import numpy as np
import pytest

from pytest_benchmarks.core import catalog, initial_state
from pytest_benchmarks.core.tasks import EnvConfig
from pytest_benchmarks.engine.vector import SlotEnv


def test_a_digest_reads_a_tenth_of_a_millimetre_not_the_last_bits():
    qpos = np.array([0.25, -0.5, 0.0, 1.0])
    first = initial_state.digest([qpos, np.zeros(3)])
    assert re.fullmatch(r"[0-9a-f]{12}", first)
    assert initial_state.digest([qpos + 1e-12, -np.zeros(3)]) == first  # noise, -0.0
    assert initial_state.digest([qpos + np.array([0, 0, 1e-4, 0]), np.zeros(3)]) != first
    assert initial_state.digest([np.zeros(3), qpos]) != first  # the order counts


def _reset(slot: SlotEnv, seed: int, init_state: int) -> str:
    _, info = slot.reset(seed=seed, options={"slots": [{"init_state": init_state, "index": 0}]})
    return info[initial_state.INFO_KEY]


@pytest.mark.parametrize(
    ("env", "task", "mujoco"),
    [
        ("metaworld", "reach-v3", True),
        ("aloha", "AlohaTransferCube-v0", True),
        ("libero", "libero_goal/2", True),
        ("pusht", "pusht", False),
    ],
)
def test_each_simulators_reset_state_has_a_digest_that_follows_it(
    env: str, task: str, mujoco: bool
):
    """The digest is found through each env's wrappers (MuJoCo's data in Meta-World,
    dm_control and robosuite; PushT's bodies), is the same for the same start, and differs
    for another start or an object moved by a millimetre."""
    benchmark = catalog.get(env)
    ref = benchmark.select([task])[0]
    slot = SlotEnv(type(benchmark), EnvConfig(ref, 5, 0), 0)
    try:
        first = _reset(slot, 7, 0)
        assert re.fullmatch(r"[0-9a-f]{12}", first)
        assert _reset(slot, 7, 0) == first
        assert _reset(slot, 8, 1) != first
        if mujoco:
            _reset(slot, 7, 0)
            arrays = initial_state.state_arrays(slot._env)
            assert arrays is not None
            qpos = arrays[0]
            qpos[-1] += 1e-9
            assert initial_state.of(slot._env) == first
            qpos[-1] += 1e-3
            assert initial_state.of(slot._env) != first
    finally:
        slot.close()


def test_an_env_may_say_its_own_state():
    class Own:
        def simulator_state(self) -> list[float]:
            return [1.5]

    class Wrapper:
        env = Own()

    assert initial_state.of(Wrapper()) == initial_state.digest([[1.5]])
    assert initial_state.of(object()) is None
