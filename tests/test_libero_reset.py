"""LIBERO's reset with the compiled scene reused is the hard reset, state for state."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.tasks import EnvConfig
from pytest_benchmarks.envs.libero import EXPERT_KEY
from pytest_benchmarks.envs.libero_reset import model_arrays


def make(task: str, privileged: bool, reuse: bool) -> Any:
    bench = catalog.get("libero")
    ref = bench.select([task])[0]
    env = bench.make_env(EnvConfig(ref, 300, 1000, obs="state", privileged=privileged))
    if not reuse:  # robosuite's own _initialize_sim: compile the MJCF on every reset
        del env._env.env._initialize_sim
    return env


def model_of(env: Any) -> Any:
    return env._env.env.sim.model._model


def full_state(env: Any) -> np.ndarray:
    return env._env.get_sim_state()


def mjb(model: Any) -> np.ndarray:
    """The whole model as MuJoCo saves it: every array, the options, the statistics."""
    import mujoco

    buffer = np.empty(mujoco.mj_sizeModel(model), dtype=np.uint8)
    mujoco.mj_saveModel(model, None, buffer)
    return buffer


def assert_same_model(hard: Any, fast: Any) -> None:
    """The reused model, byte for byte, as the hard reset compiled it."""
    if np.array_equal(mjb(model_of(hard)), mjb(model_of(fast))):
        return
    expected, actual = model_arrays(model_of(hard)), model_arrays(model_of(fast))
    different = [
        name
        for name in expected
        if not np.array_equal(expected[name], actual[name], equal_nan=True)
    ]  # (degenerate mesh polygons have NaN normals)
    pytest.fail(f"the reused model differs from the compiled one: {different or 'options'}")


@pytest.mark.parametrize(
    ("task", "expert", "steps"),
    [
        # The expert grasps, carries and places a bowl: contacts, a moving object.
        ("libero_spatial/0", True, 300),
        # A stove and a cabinet with a drawer (articulated fixtures), pushed about at random.
        ("libero_goal/2", False, 60),
    ],
)
def test_reused_scene_resets_to_the_hard_resets_states(task: str, expert: bool, steps: int):
    hard, fast = make(task, expert, reuse=False), make(task, expert, reuse=True)
    rng = np.random.default_rng(0)
    try:
        for episode, (seed, init) in enumerate([(1000, 0), (1001, 7)]):
            obs_hard, _ = hard.reset(seed=seed, options={"init_state": init})
            obs_fast, _ = fast.reset(seed=seed, options={"init_state": init})
            assert_same_model(hard, fast)
            assert np.array_equal(full_state(hard), full_state(fast)), (episode, "reset")
            for step in range(steps):
                action = obs_hard[EXPERT_KEY] if expert else rng.uniform(-1, 1, 7)
                obs_hard, _, _, _, info_hard = hard.step(action)
                obs_fast, _, _, _, info_fast = fast.step(action)
                assert np.array_equal(full_state(hard), full_state(fast)), (episode, step)
                assert info_hard == info_fast
                if info_hard["success"]:
                    break
            for key in obs_hard:
                assert np.array_equal(obs_hard[key], obs_fast[key]), (episode, key)
        # One compile for the first reset; the construction's own model is robosuite's.
        assert fast.scene.compiled == 1
    finally:
        hard.close()
        fast.close()
