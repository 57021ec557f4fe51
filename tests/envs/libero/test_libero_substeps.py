"""LIBERO's control substeps with the repeated forward passes left out are robosuite's own,
state for state over whole episodes."""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np
import pytest
from helpers import LIBERO_SIDE_BY_SIDE, sim_state, step_side_by_side

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.tasks import EnvConfig


def make(task: str, privileged: bool, lean: bool, obs: str = "state") -> Any:
    bench = catalog.get("libero")
    ref = bench.select([task])[0]
    config = EnvConfig(ref, 300, 1000, obs=obs, privileged=privileged, image_size=(64, 64))
    env = bench.make_env(config)
    if not lean:  # robosuite's own _pre_action, with its forward passes and mj_step
        del env._env.env._pre_action
    return env


@pytest.mark.parametrize(("task", "expert", "steps"), LIBERO_SIDE_BY_SIDE)
def test_lean_substeps_step_as_robosuite_does(task: str, expert: bool, steps: int):
    own, lean = make(task, expert, lean=False), make(task, expert, lean=True)
    try:
        assert step_side_by_side(own, lean, expert, steps) == (2 if expert else 0)
    finally:
        own.close()
        lean.close()


def test_lean_substeps_render_the_same_frames():
    """Cameras render after each substep's integration: the frames are the same too."""
    own, lean = (
        make("libero_object/0", False, lean=False, obs="pixels"),
        make("libero_object/0", False, lean=True, obs="pixels"),
    )
    rng = np.random.default_rng(1)
    try:
        obs_own, _ = own.reset(seed=3, options={"init_state": 2})
        obs_lean, _ = lean.reset(seed=3, options={"init_state": 2})
        for _ in range(12):
            action = rng.uniform(-1, 1, 7)
            obs_own, *_ = own.step(action)
            obs_lean, *_ = lean.step(action)
            for key in obs_own:
                assert np.array_equal(obs_own[key], obs_lean[key]), key
    finally:
        own.close()
        lean.close()


def test_a_bad_state_is_left_to_mj_step_which_resets_it(monkeypatch, tmp_path):
    """MuJoCo's mj_step resets the data when a velocity is NaN; the lean step does too."""
    monkeypatch.chdir(tmp_path)  # MuJoCo logs its warning to MUJOCO_LOG.TXT here
    own, lean = (
        make("libero_spatial/0", False, lean=False),
        make("libero_spatial/0", False, lean=True),
    )
    try:
        for env in (own, lean):
            env.reset(seed=0, options={"init_state": 0})
            env.step(np.zeros(7))
            env._env.env.sim.data.qvel[0] = np.nan
            env.step(np.zeros(7))
        assert np.array_equal(sim_state(own), sim_state(lean))
        warning = mujoco.mjtWarning.mjWARN_BADQVEL
        counts = [env._env.env.sim.data.warning[warning].number for env in (own, lean)]
        assert counts[0] == counts[1] >= 1
    finally:
        own.close()
        lean.close()
