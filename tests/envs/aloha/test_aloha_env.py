"""ALOHA: LeRobot's task settings, gym-aloha's scenes and steps, the observation layouts, the
scripted experts and a simulation that goes unstable, on the real simulator."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.expert_action import EXPERT_KEY
from pytest_benchmarks.core.plan import plan_episodes
from pytest_benchmarks.core.settings import Settings
from pytest_benchmarks.core.tasks import EnvConfig
from pytest_benchmarks.engine.evaluation import evaluate_task
from pytest_benchmarks.engine.vector import LazyVectorEnv
from pytest_benchmarks.envs.aloha import tasks as aloha_tasks
from pytest_benchmarks.envs.aloha.benchmark import processors
from pytest_benchmarks.envs.aloha.env import UNSTABLE, AlohaTaskEnv

ALOHA = catalog.get("aloha")
pytestmark = pytest.mark.skipif(ALOHA.missing() is not None, reason=str(ALOHA.missing()))
SEED = 1000


def config(task: str, **fields: object) -> EnvConfig:
    return ALOHA.describe(EnvConfig(ALOHA.select([task])[0], 400, SEED, **fields))  # type: ignore[arg-type]


@pytest.mark.skipif(importlib.util.find_spec("lerobot") is None, reason="LeRobot not installed")
def test_step_limit_rate_and_task_ids_are_lerobots():
    import gymnasium as gym
    from lerobot.envs.configs import AlohaEnv

    lerobot = AlohaEnv()
    assert (lerobot.episode_length, lerobot.fps) == (aloha_tasks.MAX_STEPS, aloha_tasks.FPS)
    assert ALOHA.fps == lerobot.fps
    import gym_aloha  # noqa: F401  (registers its ids)

    for task in ALOHA.tasks():
        assert f"gym_aloha/{task.task}" in gym.registry
        assert ALOHA.select([f"gym_aloha/{task.task}"]) == [task]  # LeRobot's spelling


@pytest.mark.parametrize("task", ["AlohaTransferCube-v0", "AlohaInsertion-v0"])
def test_scene_and_steps_are_gym_alohas_for_the_same_seed(task: str):
    """The same seed gives gym-aloha's scene, and the same actions its joint positions."""
    from gym_aloha.env import AlohaEnv

    theirs = AlohaEnv(aloha_tasks.SCENES[task], obs_type="pixels_agent_pos")
    ours = AlohaTaskEnv(config(task))
    try:
        mine, _ = ours.reset(seed=SEED + 3)
        other, _ = theirs.reset(seed=SEED + 3)
        np.testing.assert_array_equal(mine["qpos"], other["agent_pos"])
        np.testing.assert_array_equal(mine["env_state"], theirs._env.task.get_env_state(
            theirs._env.physics))  # fmt: skip
        rng = np.random.default_rng(0)
        start = mine["qpos"].astype(np.float32)
        for _ in range(5):
            action = start + rng.uniform(-0.05, 0.05, 14).astype(np.float32)
            mine, reward, terminated, truncated, info = ours.step(action)
            other, *_ = theirs.step(action)
            np.testing.assert_array_equal(mine["qpos"], other["agent_pos"])
        assert info == {"success": False} and not (terminated or truncated) and reward == 0.0
    finally:
        ours.close()


def test_layouts_name_the_features_lerobot_and_the_user_expect():
    task = "AlohaTransferCube-v0"
    state = processors(config(task, obs="state")).features
    assert {k: v.shape for k, v in state.items()} == {
        "observation.state": (14,), "observation.environment_state": (7,)}  # fmt: skip
    lerobot = processors(config(task, obs="lerobot", image_size=(48, 64)))
    assert {k: v.shape for k, v in lerobot.features.items()} == {
        "observation.state": (14,), "observation.images.top": (48, 64, 3)}  # fmt: skip
    assert lerobot.description == ""  # LeRobot's ALOHA env carries none
    renamed = processors(config(task, obs="pixels", camera_map=(("top", "camera1"),)))
    assert "observation.images.camera1" in renamed.features
    assert renamed.description == aloha_tasks.DESCRIPTIONS[task]
    insertion = processors(config("AlohaInsertion-v0", obs="state")).features
    assert insertion["observation.environment_state"].shape == (14,)  # peg and socket


def test_the_top_camera_is_drawn_at_the_configured_size_and_only_when_asked():
    env = AlohaTaskEnv(config("AlohaTransferCube-v0", obs="pixels", image_size=(48, 64)))
    try:
        obs, _ = env.reset(seed=SEED)
        assert obs["top"].shape == (48, 64, 3) and obs["top"].std() > 5  # a scene
        assert env.render() is obs["top"]
    finally:
        env.close()
    env = AlohaTaskEnv(config("AlohaTransferCube-v0"))
    try:
        state, _ = env.reset(seed=SEED)
        assert "top" not in state
    finally:
        env.close()


def test_an_unstable_simulation_ends_the_episode_failed_with_the_last_observation():
    env = AlohaTaskEnv(config("AlohaTransferCube-v0"))
    try:
        before, _ = env.reset(seed=SEED)
        obs, reward, terminated, truncated, info = env.step(np.full(14, np.nan, np.float32))
        assert truncated and not terminated and reward == 0.0
        assert info["success"] is False and info[UNSTABLE]  # MuJoCo's words
        assert obs is before and np.isfinite(obs["qpos"]).all()
    finally:
        env.close()


def test_the_experts_transfer_the_cube_and_insert_the_peg():
    """Through the harness, as ``--benchmark-policy=scripted`` runs them: the episodes the
    committed snapshots record as successes succeed (the transfer cube's first two, the
    insertion's first)."""
    settings = Settings(envs=None, tasks=None, episodes=2, batch_size=2, sync=True, seed=SEED,
                        policy="scripted", max_steps=None, metrics=Path("m.json"))  # fmt: skip
    for task, episodes in (("AlohaTransferCube-v0", [0, 1]), ("AlohaInsertion-v0", [0])):
        ref = ALOHA.select([task])[0]
        env_config = settings.env_config(ref)
        assert env_config.privileged  # the env computes the expert's actions
        result = evaluate_task(
            LazyVectorEnv(ALOHA, env_config, len(episodes), sync=True),
            ALOHA.scripted_policy(ref, len(episodes)), processors=processors(env_config),
            seed=SEED, episodes=episodes, record=lambda r: None,
        )  # fmt: skip
        assert result.error is None, result.error
        assert [e.success for e in result.episodes] == [True] * len(episodes), task
        assert [e.seed for e in result.episodes] == [
            s.seed for s in plan_episodes(ALOHA, ref, SEED, episodes)]  # fmt: skip


@pytest.mark.parametrize("obs", ["state", "pixels", "lerobot"])
def test_the_expert_action_is_in_every_layout(obs: str):
    env_config = config("AlohaTransferCube-v0", obs=obs, image_size=(32, 32), privileged=True)
    assert "expert.action" in processors(env_config).features
    env = AlohaTaskEnv(env_config)
    try:
        obs, _ = env.reset(seed=SEED)
        first = obs[EXPERT_KEY].copy()
        obs, *_ = env.step(first.astype(np.float32))
        assert obs[EXPERT_KEY].shape == (14,) and not np.array_equal(obs[EXPERT_KEY], first)
        assert np.abs(first - obs["qpos"]).max() < 0.1  # it starts where the robot stands
    finally:
        env.close()
