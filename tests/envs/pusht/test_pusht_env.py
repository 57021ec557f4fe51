"""PushT: LeRobot's task settings, gym-pusht's starts and steps, the observation layouts, and
the pushing controller against a random policy, on the real simulator."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from pytest_benchmarks.core import catalog
from pytest_benchmarks.core.settings import Settings
from pytest_benchmarks.core.tasks import EnvConfig
from pytest_benchmarks.engine.evaluation import evaluate_task
from pytest_benchmarks.engine.vector import LazyVectorEnv
from pytest_benchmarks.envs.pusht import benchmark as pusht
from pytest_benchmarks.envs.pusht.env import PushTTaskEnv

PUSHT = catalog.get("pusht")
pytestmark = pytest.mark.skipif(PUSHT.missing() is not None, reason=str(PUSHT.missing()))
SEED = 1000
TASK = PUSHT.tasks()[0]


def config(**fields: object) -> EnvConfig:
    return PUSHT.describe(EnvConfig(TASK, 300, SEED, **fields))  # type: ignore[arg-type]


@pytest.mark.skipif(importlib.util.find_spec("lerobot") is None, reason="LeRobot not installed")
def test_step_limit_rate_and_task_id_are_lerobots():
    import gym_pusht  # noqa: F401  (registers its id)
    import gymnasium as gym
    from lerobot.envs.configs import PushtEnv

    lerobot = PushtEnv()
    assert (pusht.MAX_STEPS, PUSHT.fps) == (lerobot.episode_length, lerobot.fps)
    assert f"gym_pusht/{lerobot.task}" in gym.registry
    assert PUSHT.select([f"gym_pusht/{lerobot.task}"]) == [TASK]


def test_start_and_steps_are_gym_pushts_for_the_same_seed():
    from gym_pusht.envs.pusht import PushTEnv

    theirs = PushTEnv(obs_type="environment_state_agent_pos")
    ours = PushTTaskEnv(config())
    mine, _ = ours.reset(seed=SEED + 5)
    other, _ = theirs.reset(seed=SEED + 5)
    rng = np.random.default_rng(0)
    for _ in range(5):
        for key in ("agent_pos", "environment_state"):
            np.testing.assert_array_equal(mine[key], other[key])
        action = rng.uniform(100, 400, 2).astype(np.float32)
        mine, reward, _, _, info = ours.step(action)
        other, their_reward, _, _, their_info = theirs.step(action)
        assert reward == their_reward and info["success"] == their_info["is_success"]
    ours.close()


def test_layouts_name_the_features_lerobot_and_the_user_expect():
    state = pusht.processors(config(obs="state"))
    assert {k: v.shape for k, v in state.features.items()} == {
        "observation.state": (2,), "observation.environment_state": (16,)}  # fmt: skip
    lerobot = pusht.processors(config(obs="lerobot", image_size=(96, 96)))
    assert {k: v.shape for k, v in lerobot.features.items()} == {
        "observation.state": (2,), "observation.image": (96, 96, 3)}  # fmt: skip
    assert lerobot.description == ""  # LeRobot's PushT env carries none
    renamed = pusht.processors(config(obs="pixels", camera_map=(("top", "board"),)))
    assert "observation.images.board" in renamed.features
    env = PushTTaskEnv(config(obs="pixels", image_size=(48, 64)))
    obs, _ = env.reset(seed=SEED)
    assert obs["pixels"].shape == (48, 64, 3) and obs["pixels"].std() > 5
    assert env.render().shape == (48, 64, 3)
    env.close()


def run(policy: str, episodes: list[int]) -> list[tuple[bool, float]]:
    settings = Settings(envs=None, tasks=None, episodes=len(episodes), batch_size=len(episodes),
                        sync=True, seed=SEED, policy=policy, max_steps=None,
                        metrics=Path("m.json"))  # fmt: skip
    env_config = settings.env_config(TASK)
    from pytest_benchmarks.policies import make_policy

    processors = pusht.processors(env_config)
    agent = make_policy(policy, PUSHT, env_config, len(episodes), "cpu", processors.features)
    result = evaluate_task(
        LazyVectorEnv(PUSHT, env_config, len(episodes), sync=True), agent,
        processors=processors, seed=SEED, episodes=episodes, record=lambda r: None,
    )  # fmt: skip
    assert result.error is None, result.error
    return [(e.success, e.max_reward) for e in result.episodes]


def test_the_pushing_controller_solves_what_a_random_policy_cannot():
    """Episodes 0 and 1, which the committed snapshot records as the expert's successes; the
    random policy's uniform targets cover the goal far less (0% over 50 episodes)."""
    expert = run("scripted", [0, 1])
    assert [success for success, _ in expert] == [True, True]
    assert all(reward == 1.0 for _, reward in expert)
    random = run("random", [0, 1])
    assert not any(success for success, _ in random)
    assert max(reward for _, reward in random) < 0.5
