"""LIBERO's reset with the compiled scene reused is the hard reset, state for state."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import LIBERO_SIDE_BY_SIDE, sim_state, step_side_by_side

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.tasks import EnvConfig
from pytest_benchmarks.envs.libero.reset import model_arrays


def make(task: str, privileged: bool, reuse: bool) -> Any:
    bench = catalog.get("libero")
    ref = bench.select([task])[0]
    env = bench.make_env(EnvConfig(ref, 300, 1000, obs="state", privileged=privileged))
    if not reuse:  # robosuite's own _initialize_sim: compile the MJCF on every reset
        del env._env.env._initialize_sim
    return env


def model_of(env: Any) -> Any:
    return env._env.env.sim.model._model


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


@pytest.mark.parametrize(("task", "expert", "steps"), LIBERO_SIDE_BY_SIDE)
def test_reused_scene_resets_to_the_hard_resets_states(task: str, expert: bool, steps: int):
    hard, fast = make(task, expert, reuse=False), make(task, expert, reuse=True)
    try:
        step_side_by_side(hard, fast, expert, steps, at_reset=assert_same_model)
        # One compile for the first reset; the construction's own model is robosuite's.
        assert fast.scene.compiled == 1
    finally:
        hard.close()
        fast.close()


def fixtures_after_reset(env: Any, episode: int, index: bool) -> np.ndarray:
    options = {"init_state": episode, **({"index": episode} if index else {})}
    env.reset(seed=1000 + episode, options=options)
    return model_of(env).body_pos.copy()


def test_an_episodes_fixtures_stand_where_the_run_in_order_put_them():
    """libero_90/24 opens its cabinet's drawer at reset: LIBERO's own resets place the cabinet
    by how many resets came before; with the episode's index, episode 3 alone is episode 3 of
    the run in order, and so is its whole start."""
    in_order, alone = make("libero_90/24", False, True), make("libero_90/24", False, True)
    try:
        placed = [fixtures_after_reset(in_order, episode, index=True) for episode in range(4)]
        assert np.array_equal(fixtures_after_reset(alone, 3, index=True), placed[3])
        assert np.array_equal(sim_state(alone), sim_state(in_order))
        # LIBERO's own behaviour, which the index pins: the same seed, another placement.
        assert not np.array_equal(fixtures_after_reset(alone, 3, index=False), placed[3])
    finally:
        in_order.close()
        alone.close()


def test_an_episode_run_alone_takes_the_steps_it_took_in_order():
    """Episode 5 of libero_90/24 through the harness's rollout, alone and after episodes 0-4:
    the same steps and outcome (LIBERO's own resets put the cabinet elsewhere alone, and the
    expert then succeeds where the run in order fails)."""
    from pytest_benchmarks.core.plan import plan_episodes
    from pytest_benchmarks.engine.rollout import run_episodes
    from pytest_benchmarks.engine.vector import make_vector_env

    bench = catalog.get("libero")
    task = bench.select(["libero_90/24"])[0]
    config = EnvConfig(task, 300, 1000, obs="state", privileged=True)
    outcomes = []
    for indices in (range(6), [5]):
        env = make_vector_env(bench, config, 1)
        records: list[Any] = []
        try:
            run_episodes(env, bench.scripted_policy(task, 1), bench.processors(config),
                         plan_episodes(bench, task, 1000, indices), records.append)  # fmt: skip
        finally:
            env.close()
        outcomes.append(next((r.steps, r.success) for r in records if r.index == 5))
    assert outcomes[0] == outcomes[1]
